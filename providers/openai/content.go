package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolscope/toolscope/providers/blocks"
	"github.com/toolscope/toolscope/runtime"
)

// checkTurn reports a TurnResult that does not answer calls one to one:
// the adapter never invents or drops a result, so it refuses to map one.
func checkTurn(calls []runtime.TurnCall, res *runtime.TurnResult) error {
	if res == nil {
		return fmt.Errorf("openai: no turn result for %d calls", len(calls))
	}
	if len(res.Results) != len(calls) {
		return fmt.Errorf("openai: turn result has %d results for %d calls", len(res.Results), len(calls))
	}
	for i, r := range res.Results {
		if r == nil {
			return fmt.Errorf("openai: result %d (call %q) is nil", i, calls[i].ID)
		}
		if calls[i].ID == "" {
			return fmt.Errorf("openai: call %d (%s) has no id", i, calls[i].Name)
		}
	}
	return nil
}

// ResultText renders one result as the text OpenAI receives where only
// text fits (every Chat Completions tool message):
//
//   - text blocks as they are, one per line;
//   - an image block as a placeholder line naming it ("[image: <url>]" or
//     "[image: image/png, 2048 bytes base64]"): chat tool messages cannot
//     carry images;
//   - any other block as "[<type>] <data JSON>";
//   - an error result starts with "Error" (its content normally already
//     reads "Error: <message>"; content a hook replaced gets the prefix) and
//     ends with a line "[code: <CODE>]" when the failure has a code, so the
//     model can tell ABORTED_BEFORE_DISPATCH from a tool's own failure;
//   - an empty result is "(no output)": an empty string tells the model
//     nothing, not even that the call ran.
//
// The success value and the presentation metadata are not sent: the model
// sees the rendered content, as the tool's renderer decided (R64: meta is
// for presentation, not for the model).
func ResultText(r *runtime.Result) string {
	var sb strings.Builder
	for i, b := range r.Content() {
		if i > 0 {
			sb.WriteByte('\n')
		}
		writeBlockText(&sb, b)
	}
	text := sb.String()
	if r.IsError() {
		if !hasErrorPrefix(text) {
			msg := text
			if msg == "" {
				msg = r.ErrorMessage()
			}
			text = "Error: " + msg
		}
		if code := r.Code(); code != "" {
			text += "\n[code: " + string(code) + "]"
		}
	}
	if text == "" {
		return "(no output)"
	}
	return text
}

// hasErrorPrefix reports whether text already reads as an error.
func hasErrorPrefix(text string) bool { return strings.HasPrefix(text, "Error") }

// blockText renders one block as text (see ResultText).
func blockText(b runtime.Block) string {
	var sb strings.Builder
	writeBlockText(&sb, b)
	return sb.String()
}

func writeBlockText(sb *strings.Builder, b runtime.Block) {
	switch b.Type {
	case "text":
		sb.WriteString(b.Text)
	case "image":
		img, ok := parseImage(b.Data)
		switch {
		case !ok:
			sb.WriteString("[image]")
		case img.url != "":
			sb.WriteString("[image: " + img.url + "]")
		default:
			fmt.Fprintf(sb, "[image: %s, %d bytes base64]", img.mime, len(img.data))
		}
	default:
		sb.WriteString(blocks.OtherText(b))
	}
}

// image is an image block's payload. The block's Data is one of
//
//	{"url": "https://..."}                      (or a data: URL)
//	{"data": "<base64>", "mimeType": "image/png"} (MCP's shape; "mime_type" and "media_type" too)
type image struct {
	url, data, mime string
}

func parseImage(data json.RawMessage) (image, bool) {
	var v struct {
		URL       string `json:"url"`
		Data      string `json:"data"`
		MimeType  string `json:"mimeType"`
		MimeType2 string `json:"mime_type"`
		MediaType string `json:"media_type"`
	}
	if len(data) == 0 || json.Unmarshal(data, &v) != nil {
		return image{}, false
	}
	mime := v.MimeType
	if mime == "" {
		mime = v.MimeType2
	}
	if mime == "" {
		mime = v.MediaType
	}
	switch {
	case v.URL != "":
		return image{url: v.URL}, true
	case v.Data != "" && mime != "":
		return image{data: v.Data, mime: mime}, true
	}
	return image{}, false
}

// imageURL is the URL OpenAI accepts for an image: the URL itself, or a
// data URL built from base64 data.
func (i image) imageURL() string {
	if i.url != "" {
		return i.url
	}
	return "data:" + i.mime + ";base64," + i.data
}

// contextRole maps a context message's role to an OpenAI message role:
// "system", "developer", "user" and "assistant" map to themselves; "" is
// "user" (a context is information for the model, and a user message is
// what every model reads); any other role becomes a user message whose
// text starts with "[<role>] ", so nothing is lost and nothing fails.
func contextRole(m runtime.ContextMessage) (role, text string) {
	switch m.Role {
	case "system", "developer", "user", "assistant":
		return m.Role, m.Text
	case "":
		return "user", m.Text
	}
	return "user", "[" + m.Role + "] " + m.Text
}
