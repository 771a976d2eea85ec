// Command demo shows toolscope at work: a global toolset, agent scopes that
// shadow and restrict it, and one model turn run per agent.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/toolscope/toolscope/runtime"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type pathArgs struct {
	Path string `json:"path"`
}

func run() error {
	ctx := context.Background()
	reg, err := runtime.New()
	if err != nil {
		return err
	}
	defer reg.Close(ctx)

	read, err := runtime.NewTool("read", "Read a file", func(ctx context.Context, in pathArgs, rc *runtime.RunContext) (string, error) {
		return "contents of " + in.Path, nil
	}, runtime.WithParallel())
	if err != nil {
		return err
	}
	write, err := runtime.NewTool("write", "Write a file", func(ctx context.Context, in pathArgs, rc *runtime.RunContext) (string, error) {
		return "wrote " + in.Path, nil
	})
	if err != nil {
		return err
	}
	g := reg.Global()
	for _, d := range []runtime.Definition{read, write} {
		if _, err := g.Register(d); err != nil {
			return err
		}
	}
	planner, err := reg.NewScope("planner")
	if err != nil {
		return err
	}
	reviewer, err := planner.NewScope("reviewer")
	if err != nil {
		return err
	}
	if _, err := reviewer.Restrict(runtime.Restriction{Deny: []string{"write"}}); err != nil {
		return err
	}
	if _, err := reviewer.Guard(func(e runtime.Execution) (string, bool) {
		args, _ := e.Arguments()
		var a pathArgs
		_ = json.Unmarshal(args, &a)
		if strings.HasPrefix(a.Path, "/etc") {
			return "reviewer may not read outside the workspace", true
		}
		return "", false
	}); err != nil {
		return err
	}
	for _, s := range []*runtime.Scope{g, planner, reviewer} {
		name := s.Key()
		if name == "" {
			name = "(global)"
		}
		fmt.Printf("%-10s sees %v\n", name, s.Tools())
	}
	calls := []runtime.TurnCall{
		{ID: "1", Name: "read", Arguments: `{"path":"a.go"}`},
		{ID: "2", Name: "read", Arguments: `{"path":"/etc/passwd"}`},
		{ID: "3", Name: "write", Arguments: `{"path":"b.go"}`},
	}
	for _, s := range []*runtime.Scope{planner, reviewer} {
		turn, err := s.ExecuteTurn(ctx, calls)
		if err != nil {
			return err
		}
		for i, res := range turn.Results {
			status := "ok"
			if res.IsError() {
				status = "error"
				if c := res.Code(); c != "" {
					status += " " + c
				}
			}
			fmt.Printf("%-10s %s(%s) -> %s: %s\n", s.Key(), calls[i].Name, calls[i].Arguments, status, res.Text())
		}
	}
	return nil
}
