package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

type forecastIn struct {
	City string `json:"city"`
}

type forecastOut struct {
	City    string `json:"city"`
	Celsius int    `json:"celsius"`
}

// weatherServer is an MCP server with one read-only tool.
func weatherServer() *sdk.Server {
	server := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "v1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "forecast", Description: "Tomorrow's forecast for a city",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in forecastIn) (*sdk.CallToolResult, forecastOut, error) {
			return nil, forecastOut{City: in.City, Celsius: 21}, nil
		})
	return server
}

// connect runs server in this process and connects a client to it, with
// the import's list_changed handler wired.
func connect(ctx context.Context, server *sdk.Server) (*sdk.ClientSession, func()) {
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"},
		&sdk.ClientOptions{ToolListChangedHandler: mcp.ToolListChangedHandler})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	return cs, func() { _ = cs.Close(); _ = ss.Close() }
}

// An MCP server's tools in a scope: prefixed, read-only ones parallel, and
// each call through toolscope's pipeline; the structured content is the
// value.
func ExampleImport() {
	ctx := context.Background()
	cs, disconnect := connect(ctx, weatherServer())
	defer disconnect()

	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = reg.Close(ctx) }()

	imported, err := mcp.Import(ctx, reg.Global(), cs, mcp.WithPrefix("weather_"), mcp.WithReadOnlyParallel())
	if err != nil {
		log.Fatal(err)
	}
	defer imported.Close()

	call := runtime.Call{ID: "c1", Name: "weather_forecast", Arguments: json.RawMessage(`{"city":"Paris"}`)}
	fmt.Println(reg.Global().Tools())
	fmt.Println(reg.Global().ExecutionMode(call))
	res := reg.Global().Execute(ctx, call)
	value, _ := res.Value()
	fmt.Println(string(value))
	// Output:
	// [weather_forecast]
	// parallel
	// {"celsius":21,"city":"Paris"}
}

// A tool the server adds later arrives with the next sync: the one
// notifications/tools/list_changed starts, or Sync.
func ExampleImported_Sync() {
	ctx := context.Background()
	server := weatherServer()
	cs, disconnect := connect(ctx, server)
	defer disconnect()

	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = reg.Close(ctx) }()
	imported, err := mcp.Import(ctx, reg.Global(), cs)
	if err != nil {
		log.Fatal(err)
	}
	defer imported.Close()
	stop, err := reg.Global().OnChange(func(context.Context) error { fmt.Println("changed"); return nil })
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	server.AddTool(&sdk.Tool{Name: "alerts", Description: "Weather alerts", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "none"}}}, nil
		})
	if err := imported.Sync(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(imported.Tools())
	res := reg.Global().Execute(ctx, runtime.Call{ID: "c1", Name: "alerts", Arguments: json.RawMessage(`{}`)})
	fmt.Println(res.Text())
	// Output:
	// changed
	// [alerts forecast]
	// none
}

// MCP content as toolscope blocks: text is text, every other kind keeps its
// MCP object as the block's data.
func ExampleContentBlocks() {
	blocks, err := mcp.ContentBlocks(json.RawMessage(`[
		{"type":"text","text":"a chart"},
		{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}
	]`))
	if err != nil {
		log.Fatal(err)
	}
	for _, b := range blocks {
		if b.Type == "text" {
			fmt.Printf("text: %q\n", b.Text)
			continue
		}
		fmt.Printf("%s: %s\n", b.Type, b.Data)
	}
	// Output:
	// text: "a chart"
	// image: {"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}
}

// A server that goes away ends its import: the tools are disposed, and the
// import says so (WithEndHandler, Done, Err). With WithReconnect it would
// connect again instead.
func ExampleWithEndHandler() {
	ctx := context.Background()
	cs, disconnect := connect(ctx, weatherServer())
	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = reg.Close(ctx) }()

	ended := make(chan error, 1)
	imported, err := mcp.Import(ctx, reg.Global(), cs, mcp.WithEndHandler(func(err error) { ended <- err }))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reg.Global().Tools())

	disconnect() // the server goes away
	err = <-ended
	<-imported.Done()
	fmt.Println(errors.Is(err, mcp.ErrServerGone), errors.Is(imported.Err(), mcp.ErrServerGone))
	fmt.Println(reg.Global().Tools())
	// Output:
	// [forecast]
	// true true
	// []
}
