package gemini_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/gemini"
	"google.golang.org/genai"
)

// TestAttack_BoundedHTTPClient_TwoModelsOneClient: one BoundedHTTPClient
// shared by two Models with different bounds, called concurrently: each
// request is bounded by the Model that sent it, never by the other's
// (the bound rides in the request's ctx, not on the client).
func TestAttack_BoundedHTTPClient_TwoModelsOneClient(t *testing.T) {
	big := reply("STOP", text(strings.Repeat("x", 32<<10)))
	srv := newRawServer(t, 200, big)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "test-key", Backend: genai.BackendGeminiAPI,
		HTTPClient: gemini.BoundedHTTPClient(srv.Client()), HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := gemini.New(client, testModel, nil)
	if err != nil {
		t.Fatal(err)
	}
	small, large := m.WithMaxReplyBytes(8<<10), m.WithMaxReplyBytes(int64(len(big)))
	const each = 8
	errs := make([]error, 2*each)
	within(t, 30*time.Second, func() {
		var wg sync.WaitGroup
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mm := small
				if i%2 == 1 {
					mm = large
				}
				_, errs[i] = mm.Generate(context.Background(), []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}, nil, false)
			}()
		}
		wg.Wait()
	})
	for i, err := range errs {
		if tooBig := errors.Is(err, agent.ErrReplyTooLarge); tooBig != (i%2 == 0) {
			t.Errorf("call %d (small bound: %v): err %v", i, i%2 == 0, err)
		}
		if i%2 == 1 && err != nil {
			t.Errorf("call %d under the large bound: %v", i, err)
		}
	}
}
