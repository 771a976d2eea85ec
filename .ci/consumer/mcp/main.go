// Command consumer-mcp is CI's stand-in for a user's module that requires
// only github.com/toolscope/toolscope/mcp, as published: the root module
// must come in through mcp's own go.mod requirement (issue 25, item 1).
package main

import (
	"context"
	"fmt"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

func main() {
	reg, err := runtime.New()
	if err != nil {
		panic(err)
	}
	defer reg.Close(context.Background())
	srv, err := mcp.NewServer(reg.Global())
	if err != nil {
		panic(err)
	}
	_ = srv
	_ = mcp.Import
	fmt.Println("ok")
}
