// Package blocks holds what the provider adapters (providers/anthropic,
// providers/gemini, providers/openai) share about the content blocks of a
// result (runtime.Block): the data of an image block they accept
// (ImageData), and the text that stands for a block a provider has no
// equivalent for (OtherText); and the bound on a reply's response body
// (ReplyLimit, behind every adapter's WithMaxReplyBytes).
//
// It is a public package of the root module so that the adapters, each a
// module of its own, share it without importing an internal package; its
// API follows their needs.
package blocks

import (
	"strings"

	"github.com/toolscope/toolscope/runtime"
)

// ImageData is the Data of a runtime.Block of Type "image" that the adapters
// accept: base64 bytes with their media type, or a URL (with its media type
// where a provider needs one, as Gemini does for a file URI). The media type
// may also be spelled "mimeType" (MCP's image content) or "mime_type".
//
//	{"media_type": "image/png", "data": "<base64>"}
//	{"url": "https://example.com/cat.png"}
type ImageData struct {
	MediaType string `json:"media_type,omitempty"`
	MimeType  string `json:"mimeType,omitempty"`
	MimeType2 string `json:"mime_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Type returns the media type, whichever way it was spelled; media_type
// wins over mimeType, which wins over mime_type.
func (d ImageData) Type() string {
	switch {
	case d.MediaType != "":
		return d.MediaType
	case d.MimeType != "":
		return d.MimeType
	}
	return d.MimeType2
}

// OtherText renders a block a provider has no equivalent for as text: its
// type in brackets, then its text and its Data JSON as they are, each after
// a space when present ("[audio] a dog barking {"uri":"..."}").
func OtherText(b runtime.Block) string {
	var sb strings.Builder
	sb.WriteString("[")
	sb.WriteString(b.Type)
	sb.WriteString("]")
	if b.Text != "" {
		sb.WriteString(" ")
		sb.WriteString(b.Text)
	}
	if len(b.Data) > 0 {
		sb.WriteString(" ")
		sb.Write(b.Data)
	}
	return sb.String()
}
