package mcp_test

import (
	"context"
	"fmt"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// A registry's global scope served to an MCP client over the in-memory
// transport; stdio (sdk.StdioTransport with Run) and streamable HTTP
// (StreamableHTTPHandler) work the same way.
func ExampleNewServer() {
	ctx := context.Background()
	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(ctx)
	greet, err := runtime.NewTool("greet", "Greet someone",
		func(ctx context.Context, in struct {
			Name string `json:"name"`
		}, rc *runtime.RunContext) (string, error) {
			return "hello, " + in.Name, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := reg.Global().Register(greet); err != nil {
		log.Fatal(err)
	}
	// Nobody may greet "root".
	if _, err := reg.Global().Guard(func(ctx context.Context, e runtime.Execution) (string, bool) {
		a, _ := e.Arguments()
		return "no greeting for root", string(a) == `{"name":"root"}`
	}); err != nil {
		log.Fatal(err)
	}

	srv, err := mcp.NewServer(reg.Global())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	clientT, serverT := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, serverT, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tools.Tools[0].Name)
	for _, name := range []string{"ada", "root"} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": name}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.IsError, res.Content[0].(*sdk.TextContent).Text)
	}
	// Output:
	// greet
	// false hello, ada
	// true Error: no greeting for root
}
