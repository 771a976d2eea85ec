// Command consumer is CI's stand-in for a user's module: it requires
// toolscope next to the model and MCP SDKs (which bring a current
// OpenTelemetry API) and nothing else, and must build. Issue 12, item 10:
// protoactor alone pins otel/sdk/metric v1.21, whose meter does not
// implement the newer metric API, so such a module failed to build unless
// toolscope's own go.mod raises otel/sdk and otel/sdk/metric.
package main

import (
	"context"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"go.opentelemetry.io/otel"
	"google.golang.org/genai"

	"github.com/toolscope/toolscope/runtime"
)

func main() {
	reg, err := runtime.New()
	if err != nil {
		panic(err)
	}
	defer reg.Close(context.Background())
	_ = otel.Tracer("consumer")
	_ = openai.ChatCompletionNewParams{}
	_ = anthropic.MessageNewParams{}
	_ = genai.Content{}
	_ = mcp.Implementation{Name: "consumer"}
	fmt.Println("ok")
}
