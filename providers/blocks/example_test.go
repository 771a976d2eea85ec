package blocks_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/blocks"
	"github.com/toolscope/toolscope/runtime"
)

// An MCP image block's data spells its media type "mimeType"; a block no
// provider has an equivalent for is sent as text.
func Example() {
	var d blocks.ImageData
	_ = json.Unmarshal([]byte(`{"mimeType":"image/png","data":"iVBORw0KGgo="}`), &d)
	fmt.Println(d.Type(), d.Data)
	fmt.Println(blocks.OtherText(runtime.Block{Type: "audio", Text: "a dog barking", Data: json.RawMessage(`{"uri":"file:///bark.wav"}`)}))
	fmt.Println(blocks.OtherText(runtime.Block{Type: "resource_link"}))
	// Output:
	// image/png iVBORw0KGgo=
	// [audio] a dog barking {"uri":"file:///bark.wav"}
	// [resource_link]
}

// A ReplyLimit bounds a response body: reading past the bound fails, and
// Err reports agent.ErrReplyTooLarge whatever the SDK made of that.
func ExampleReplyLimit() {
	limit := blocks.NewReplyLimit(5)
	resp := limit.Wrap(&http.Response{Body: io.NopCloser(strings.NewReader("a reply of 24 characters"))})
	b, err := io.ReadAll(resp.Body)
	fmt.Printf("%q\n", b)
	fmt.Println(errors.Is(limit.Err(fmt.Errorf("sdk: %v", err)), agent.ErrReplyTooLarge))
	// Output:
	// "a rep"
	// true
}
