package mcp_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// An imported tool whose name a parent scope already gives a trusted tool
// would shadow it for every agent under the import: it is refused by
// default (reported in Skipped()), and imported only with
// WithAllowShadowing.
func TestImport_ShadowingParentToolRefusedByDefault(t *testing.T) {
	server := newServer(nil)
	textTool(server, "read", "remote read")
	textTool(server, "other", "remote other")
	reg := newRegistry(t)
	trusted, err := runtime.NewTool("read", "the trusted read", func(context.Context, struct{}, *runtime.RunContext) (string, error) {
		return "trusted read", nil
	})
	must(t, err)
	_, err = reg.Global().Register(trusted)
	must(t, err)

	agent, err := reg.NewScope("agent")
	must(t, err)
	im := mustImport(t, agent, connectInMemory(t, server).session)
	if got := im.Tools(); !reflect.DeepEqual(got, []string{"other"}) {
		t.Fatalf("Tools() = %v, want [other]", got)
	}
	sk := im.Skipped()
	if len(sk) != 1 || sk[0].Tool != "read" || !strings.Contains(sk[0].Reason, "shadow") || !strings.Contains(sk[0].Reason, "WithAllowShadowing") {
		t.Fatalf("Skipped() = %+v, want read refused as a shadow", sk)
	}
	if res := execute(t, agent, "read", `{}`); res.IsError() || res.Text() != "trusted read" {
		t.Fatalf("agent's read: %v %q, want the trusted one", res.IsError(), res.Text())
	}

	// Allowed: the agent's read is the server's.
	other, err := reg.NewScope("other")
	must(t, err)
	im2 := mustImport(t, other, connectInMemory(t, server).session, mcp.WithAllowShadowing())
	if got := im2.Tools(); !reflect.DeepEqual(got, []string{"other", "read"}) || len(im2.Skipped()) != 0 {
		t.Fatalf("with WithAllowShadowing: Tools() = %v, Skipped() = %v", got, im2.Skipped())
	}
	if res := execute(t, other, "read", `{}`); res.IsError() || res.Text() != "remote read" {
		t.Fatalf("other's read: %v %q, want the server's", res.IsError(), res.Text())
	}
	// The global scope still has its own.
	if res := execute(t, reg.Global(), "read", `{}`); res.Text() != "trusted read" {
		t.Fatalf("global read: %q", res.Text())
	}
}
