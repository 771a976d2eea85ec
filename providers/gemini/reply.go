package gemini

import (
	"context"
	"net/http"

	"github.com/toolscope/toolscope/providers/blocks"
)

// BoundedHTTPClient returns a copy of c (a new client when c is nil) whose
// transport (c's, or http.DefaultTransport) bounds every response body:
// by the bound of the Model whose Generate sent the request
// (WithMaxReplyBytes), or by agent.DefaultMaxReplyBytes for a request no
// Model sent. Give it to the SDK as genai.ClientConfig.HTTPClient: the SDK
// reads a reply's body itself, and this is the one place a bound can sit.
// A Model on a client made without it reads replies unbounded.
//
//	client, err := genai.NewClient(ctx, &genai.ClientConfig{HTTPClient: gemini.BoundedHTTPClient(nil)})
//
// On Vertex AI with default credentials, call ClientConfig.UseDefaultCredentials
// (the SDK's way for a client it is given), which adds its authorization
// around this transport.
func BoundedHTTPClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	rt := out.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	out.Transport = boundedTransport{rt: rt}
	return &out
}

// boundedTransport bounds each response body by the reply limit in its
// request's ctx (Model.Generate puts it there), else by the default.
type boundedTransport struct{ rt http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	limit, ok := req.Context().Value(replyLimitKey{}).(*blocks.ReplyLimit)
	if !ok {
		limit = blocks.NewReplyLimit(0)
	}
	return limit.Wrap(resp), err
}

type replyLimitKey struct{}

// withReplyLimit returns ctx carrying the limit a BoundedHTTPClient applies
// to the replies of requests sent with it.
func withReplyLimit(ctx context.Context, l *blocks.ReplyLimit) context.Context {
	return context.WithValue(ctx, replyLimitKey{}, l)
}
