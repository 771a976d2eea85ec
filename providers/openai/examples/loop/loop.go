package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

// run starts the scripted server, registers the tools, runs the loop and
// prints the transcript to w.
func run(ctx context.Context, w io.Writer) error {
	srv := wire.New(
		wire.Chat("tool_calls", "", // one message, seven calls, in this order
			wire.Call{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes/a.md"}`},
			wire.Call{ID: "call_2", Name: "read_file", Arguments: `{"path":"notes/b.md"}`},
			wire.Call{ID: "call_3", Name: "read_file", Arguments: `{"path":"notes/c.md"}`},
			wire.Call{ID: "call_4", Name: "write_file", Arguments: `{"path":"notes/index.md","text":"a b c"}`},
			wire.Call{ID: "call_5", Name: "read_file", Arguments: `{"path":"notes/index.md"}`},
			wire.Call{ID: "call_6", Name: "delete_file", Arguments: `{"path":"notes/a.md"}`},
			wire.Call{ID: "call_7", Name: "fetch_url", Arguments: `{"url":"https://example.com"}`}),
		summarize, // the second request: answer from the tool messages
	)
	defer srv.Close()

	reg, err := runtime.New()
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = reg.Close(cctx)
	}()
	if err := registerTools(reg.Global()); err != nil {
		return err
	}

	client := oai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("no-key-needed"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	model := openai.NewChatModel(&client, oai.ChatCompletionNewParams{Model: "scripted-model"})
	out, err := agent.Run(ctx, reg.Global(), model, []oai.ChatCompletionMessageParamUnion{
		oai.SystemMessage("You keep the notes folder tidy."),
		oai.UserMessage("Index my notes, drop a.md, and check example.com."),
	})
	if err != nil {
		return err
	}
	printTranscript(w, out.Transcript)
	for i, turn := range out.Turns {
		events := make([]string, len(turn.Events))
		for j, e := range turn.Events {
			events[j] = e.String()
		}
		fmt.Fprintf(w, "\nturn %d record: %s\n", i+1, strings.Join(events, " "))
	}
	fmt.Fprintf(w, "\nstopped: %s after %d model requests (finish_reason %q)\n", out.Stop, out.Steps, out.LastStopReason)
	return nil
}

// summarize is the scripted model's second answer: it reads the tool
// messages the client sent and reports what happened.
func summarize(req map[string]any) any {
	var ok, failed []string
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		if msg["role"] != "tool" {
			continue
		}
		id, _ := msg["tool_call_id"].(string)
		content, _ := msg["content"].(string)
		if strings.HasPrefix(content, "Error") {
			failed = append(failed, id)
		} else {
			ok = append(ok, id)
		}
	}
	return wire.Chat("stop", fmt.Sprintf("Done: %d calls succeeded (%s); %d failed (%s).",
		len(ok), strings.Join(ok, " "), len(failed), strings.Join(failed, " ")))(req)
}

// files is the example's little file system.
type files struct {
	mu   sync.Mutex
	data map[string]string
}

func registerTools(g *runtime.Scope) error {
	fs := &files{data: map[string]string{
		"notes/a.md": "alpha", "notes/b.md": "bravo", "notes/c.md": "charlie",
	}}
	rendezvous := newRendezvous(3)
	read, err := runtime.NewTool("read_file", "Read a file",
		func(ctx context.Context, in struct {
			Path string `json:"path"`
		}, rc *runtime.RunContext) (string, error) {
			// The first three reads wait for each other: they can only all
			// finish if they really run at the same time.
			if err := rendezvous.arrive(ctx, 5*time.Second); err != nil {
				return "", err
			}
			fs.mu.Lock()
			defer fs.mu.Unlock()
			text, ok := fs.data[in.Path]
			if !ok {
				return "", fmt.Errorf("no such file %s", in.Path)
			}
			return text, nil
		}, runtime.WithParallel())
	if err != nil {
		return err
	}
	write, err := runtime.NewTool("write_file", "Write a file (runs alone)",
		func(ctx context.Context, in struct {
			Path string `json:"path"`
			Text string `json:"text"`
		}, rc *runtime.RunContext) (string, error) {
			fs.mu.Lock()
			defer fs.mu.Unlock()
			fs.data[in.Path] = in.Text
			rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "notes/index.md changed; re-read it before quoting it."})
			return fmt.Sprintf("wrote %d bytes to %s", len(in.Text), in.Path), nil
		})
	if err != nil {
		return err
	}
	del, err := runtime.NewTool("delete_file", "Delete a file",
		func(ctx context.Context, in struct {
			Path string `json:"path"`
		}, rc *runtime.RunContext) (string, error) {
			return "", errors.New("unreachable: the guard denies every delete")
		})
	if err != nil {
		return err
	}
	fetch, err := runtime.NewTool("fetch_url", "Fetch a URL",
		func(ctx context.Context, in struct {
			URL string `json:"url"`
		}, rc *runtime.RunContext) (string, error) {
			return "", fmt.Errorf("no network in this example (wanted %s)", in.URL)
		})
	if err != nil {
		return err
	}
	for _, d := range []runtime.Definition{read, write, del, fetch} {
		if _, err := g.Register(d); err != nil {
			return err
		}
	}
	_, err = g.Guard(func(ctx context.Context, e runtime.Execution) (string, bool) {
		if e.Name() == "delete_file" {
			args, _ := e.Arguments()
			var in struct {
				Path string `json:"path"`
			}
			_ = json.Unmarshal(args, &in)
			return "deleting " + in.Path + " needs a human", true
		}
		return "", false
	})
	return err
}

// rendezvous lets the first n arrivals go only once all n have arrived;
// later arrivals pass at once. The wait is bounded by ctx and a timeout.
type rendezvous struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{}
}

func newRendezvous(n int) *rendezvous { return &rendezvous{n: n, all: make(chan struct{})} }

func (r *rendezvous) arrive(ctx context.Context, limit time.Duration) error {
	r.mu.Lock()
	r.arrived++
	if r.arrived == r.n {
		close(r.all)
	}
	r.mu.Unlock()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-r.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return errors.New("the parallel reads never overlapped")
	}
}

func printTranscript(w io.Writer, transcript []oai.ChatCompletionMessageParamUnion) {
	for _, m := range transcript {
		switch {
		case m.OfSystem != nil:
			fmt.Fprintf(w, "system: %s\n", m.OfSystem.Content.OfString.Value)
		case m.OfUser != nil:
			fmt.Fprintf(w, "user: %s\n", m.OfUser.Content.OfString.Value)
		case m.OfAssistant != nil:
			a := m.OfAssistant
			if a.Content.OfString.Valid() {
				fmt.Fprintf(w, "assistant: %s\n", a.Content.OfString.Value)
			}
			if len(a.ToolCalls) > 0 {
				fmt.Fprintf(w, "assistant calls %d tools:\n", len(a.ToolCalls))
				for _, tc := range a.ToolCalls {
					if fn := tc.OfFunction; fn != nil {
						fmt.Fprintf(w, "  %s %s %s\n", fn.ID, fn.Function.Name, fn.Function.Arguments)
					}
				}
			}
		case m.OfTool != nil:
			text := strings.ReplaceAll(m.OfTool.Content.OfString.Value, "\n", "\n    ")
			fmt.Fprintf(w, "tool %s: %s\n", m.OfTool.ToolCallID, text)
		}
	}
}
