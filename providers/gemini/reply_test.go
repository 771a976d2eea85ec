package gemini_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/gemini"
	"google.golang.org/genai"
)

// TestModel_MaxReplyBytes_BoundsTheReplyThroughTheSDK: the official client,
// made with BoundedHTTPClient, against a loopback generateContent: a reply
// body past the Model's bound (WithMaxReplyBytes, default
// agent.DefaultMaxReplyBytes) fails with agent.ErrReplyTooLarge, a success
// or an API error alike; one within it is read whole; a client made without
// BoundedHTTPClient is not bounded (the SDK reads the body itself).
func TestModel_MaxReplyBytes_BoundsTheReplyThroughTheSDK(t *testing.T) {
	big := reply("STOP", text(strings.Repeat("x", 64<<10)))
	bigError := `{"error":{"code":400,"message":"` + strings.Repeat("e", 64<<10) + `","status":"INVALID_ARGUMENT"}}`
	cases := []struct {
		name    string
		body    string
		status  int
		max     int64
		bounded bool // the client is made with BoundedHTTPClient
		tooBig  bool
	}{
		{"over the bound", big, 200, 16 << 10, true, true},
		{"exactly the bound", big, 200, int64(len(big)), true, false},
		{"one byte under", big, 200, int64(len(big)) - 1, true, true},
		{"the default bound", big, 200, 0, true, false},
		{"an API error over the bound", bigError, 400, 16 << 10, true, true},
		{"a client without BoundedHTTPClient", big, 200, 16 << 10, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRawServer(t, tc.status, tc.body)
			hc := srv.Client()
			if tc.bounded {
				hc = gemini.BoundedHTTPClient(hc)
			}
			client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
				APIKey: "test-key", Backend: genai.BackendGeminiAPI,
				HTTPClient: hc, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
			})
			if err != nil {
				t.Fatal(err)
			}
			m, err := gemini.New(client, testModel, nil)
			if err != nil {
				t.Fatal(err)
			}
			m = m.WithMaxReplyBytes(tc.max)
			var rerr error
			within(t, 20*time.Second, func() {
				_, rerr = m.Generate(context.Background(), []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}, nil, false)
			})
			if got := errors.Is(rerr, agent.ErrReplyTooLarge); got != tc.tooBig {
				t.Fatalf("Generate: err %v; ErrReplyTooLarge %v, want %v", rerr, got, tc.tooBig)
			}
			if !tc.tooBig && tc.status == 200 && rerr != nil {
				t.Fatalf("Generate: %v", rerr)
			}
		})
	}
}

// TestBoundedHTTPClient_CopiesTheClient: the copy keeps the client's
// settings and the caller's client is left as it was.
func TestBoundedHTTPClient_CopiesTheClient(t *testing.T) {
	orig := &http.Client{Timeout: 7 * time.Second}
	got := gemini.BoundedHTTPClient(orig)
	if got == orig || orig.Transport != nil || got.Timeout != orig.Timeout || got.Transport == nil {
		t.Fatalf("BoundedHTTPClient(%+v) = %+v", orig, got)
	}
	if c := gemini.BoundedHTTPClient(nil); c == nil || c.Transport == nil {
		t.Fatalf("BoundedHTTPClient(nil) = %+v", c)
	}
}

// newRawServer answers every request with status and body.
func newRawServer(t testing.TB, status int, body string) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}
