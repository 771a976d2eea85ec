package demotools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolscope/toolscope/examples/demotools"
	"github.com/toolscope/toolscope/runtime"
)

// The demo's toolset on a registry of one's own: a read of a .env file has
// its secrets redacted by the post-execute hook, and a write outside
// /workspace is refused by the guard.
func Example() {
	reg, err := runtime.New()
	if err != nil {
		panic(err)
	}
	defer reg.Close(context.Background())
	if err := demotools.RegisterGlobal(reg, demotools.Stats{}); err != nil {
		panic(err)
	}
	ctx := context.Background()
	read := reg.Global().Execute(ctx, runtime.Call{ID: "1", Name: "read", Arguments: json.RawMessage(`{"path":"/workspace/.env"}`)})
	fmt.Print(read.Text())
	write := reg.Global().Execute(ctx, runtime.Call{ID: "2", Name: "write", Arguments: json.RawMessage(`{"path":"/etc/passwd","content":"x"}`)})
	fmt.Println(write.IsError(), write.Text())
	// Output:
	// DATABASE_URL=postgres://app@db/app
	// OPENAI_API_KEY=[REDACTED]
	// AWS_ACCESS_KEY_ID=[REDACTED]
	// true Error: write outside /workspace refused: /etc/passwd
}
