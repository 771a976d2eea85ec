package mcp_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// A tool that requires task augmentation (execution.taskSupport
// "required") cannot be called by the go-sdk client: the server answers
// every tools/call with -32601. The go-sdk's Tool drops "execution", so
// Import cannot see it in the listing; the first refusal fails that call
// and the tool is then skipped, reported in Skipped(), and stays skipped
// while the server lists it unchanged.
func TestImport_TaskRequiredToolSkipped(t *testing.T) {
	h := hostile{
		list: func(string) string {
			return toolList("",
				`{"name":"long_job","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`,
				`{"name":"ok","inputSchema":{"type":"object"}}`)
		},
		call: func(name string, _ json.RawMessage) string {
			if name == "long_job" {
				return `!{"code":-32601,"message":"tool long_job requires task augmentation"}`
			}
			return `{"content":[{"type":"text","text":"fine"}]}`
		},
	}
	cs := connectHostile(t, h)
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs)
	res := execute(t, reg.Global(), "long_job", `{}`)
	if !res.IsError() || res.Code() != mcp.CodeError || !strings.Contains(res.ErrorMessage(), "-32601") {
		t.Fatalf("first call: error=%v code=%q %q", res.IsError(), res.Code(), res.ErrorMessage())
	}
	eventually(t, "long_job skipped", func() bool {
		sk := im.Skipped()
		return len(sk) == 1 && sk[0].Tool == "long_job" && strings.Contains(sk[0].Reason, "task")
	})
	if got := im.Tools(); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Fatalf("Tools() = %v, want [ok]", got)
	}
	if res := execute(t, reg.Global(), "long_job", `{}`); res.Code() != runtime.CodeUnknownTool {
		t.Fatalf("later call: code %q, want UNKNOWN_TOOL", res.Code())
	}
	// A re-sync with the same listing keeps it skipped.
	if err := im.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := im.Tools(); !reflect.DeepEqual(got, []string{"ok"}) || len(im.Skipped()) != 1 {
		t.Fatalf("after Sync: Tools() = %v, Skipped() = %v", got, im.Skipped())
	}
	if res := execute(t, reg.Global(), "ok", `{}`); res.IsError() || res.Text() != "fine" {
		t.Fatalf("ok: %v %q", res.IsError(), res.Text())
	}
}
