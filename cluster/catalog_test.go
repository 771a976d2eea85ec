package cluster

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

func TestCatalog_Item1_BadConfigRefusedNamingTheEntry(t *testing.T) {
	c := testCatalog(t)
	cases := []struct {
		name, entry, config, want string
		guard                     bool
	}{
		{"unknown tool entry", "nope", `{}`, `no tool entry "nope"`, false},
		{"unknown guard entry", "nope", `{}`, `no guard entry "nope"`, true},
		{"not JSON", "echo", `{`, `tool entry "echo": config is not one JSON value`, false},
		{"two values", "echo", `{} {}`, `tool entry "echo": config is not one JSON value`, false},
		{"factory refuses", "echo", `{"prefix":"x"}`, `tool entry "echo" refused its config: "name" is required`, false},
		{"wrong type", "echo", `{"name":3}`, `tool entry "echo" refused its config`, false},
		{"guard refuses", "deny", `{}`, `guard entry "deny" refused its config: "tool" is required`, true},
		{"too large", "echo", `"` + strings.Repeat("x", MaxConfigBytes) + `"`, `tool entry "echo": config is`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.guard {
				_, err = c.Guard(tc.entry, json.RawMessage(tc.config))
			} else {
				_, err = c.Tool(tc.entry, json.RawMessage(tc.config))
			}
			if !errors.Is(err, ErrCatalog) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrCatalog containing %q", err, tc.want)
			}
		})
	}
}

func TestCatalog_Item1_GoodConfigBuilds(t *testing.T) {
	c := testCatalog(t)
	def, err := c.Tool("echo", json.RawMessage(`{"name":"say","prefix":">"}`))
	if err != nil || def.Name != "say" {
		t.Fatalf("Tool = %q, %v", def.Name, err)
	}
	if g, err := c.Guard("deny", json.RawMessage(`{"tool":"say","reason":"no"}`)); err != nil || g == nil {
		t.Fatalf("Guard = %v", err)
	}
	if got := c.Tools(); len(got) != 1 || got[0] != "echo" {
		t.Fatalf("Tools = %q", got)
	}
}

func TestCatalog_Item1_PanickingFactoryIsARefusal(t *testing.T) {
	c := NewCatalog()
	if err := c.AddTool("boom", func(json.RawMessage) (d runtime.Definition, err error) { panic("kaboom") }); err != nil {
		t.Fatal(err)
	}
	_, err := c.Tool("boom", nil)
	if !errors.Is(err, ErrCatalog) || !strings.Contains(err.Error(), `tool entry "boom": the factory panicked`) {
		t.Fatalf("err = %v", err)
	}
}

func TestCatalog_Item1_DuplicateAndEmptyEntriesRefused(t *testing.T) {
	c := testCatalog(t)
	if err := c.AddTool("echo", func(json.RawMessage) (d runtime.Definition, err error) { return }); err == nil || !strings.Contains(err.Error(), `"echo" is already`) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := c.AddGuard("", nil); !errors.Is(err, ErrCatalog) {
		t.Fatalf("empty: %v", err)
	}
}
