package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// echoConfig configures the test catalog's "echo" tool: a tool named Name
// whose body returns Prefix + its "text" argument.
type echoConfig struct {
	Name   string `json:"name"`
	Prefix string `json:"prefix"`
}

// denyConfig configures the test catalog's "deny" guard: it denies calls of
// Tool with Reason.
type denyConfig struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

func strictJSON(b json.RawMessage, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	return nil
}

// testCatalog is the catalog every test member builds: same code on every
// member.
func testCatalog(t testing.TB) *Catalog {
	t.Helper()
	c := NewCatalog()
	err := errors.Join(
		c.AddTool("echo", func(cfg json.RawMessage) (runtime.Definition, error) {
			var ec echoConfig
			if err := strictJSON(cfg, &ec); err != nil {
				return runtime.Definition{}, err
			}
			if ec.Name == "" {
				return runtime.Definition{}, errors.New(`"name" is required`)
			}
			prefix := ec.Prefix
			return runtime.NewTool(ec.Name, "echoes text with a prefix",
				func(ctx context.Context, in struct {
					Text string `json:"text"`
				}, _ *runtime.RunContext) (string, error) {
					return prefix + in.Text, nil
				})
		}),
		c.AddGuard("deny", func(cfg json.RawMessage) (runtime.Guard, error) {
			var dc denyConfig
			if err := strictJSON(cfg, &dc); err != nil {
				return nil, err
			}
			if dc.Tool == "" {
				return nil, fmt.Errorf(`"tool" is required`)
			}
			return func(ctx context.Context, e runtime.Execution) (string, bool) {
				if e.Name() == dc.Tool {
					return dc.Reason, true
				}
				return "", false
			}, nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
