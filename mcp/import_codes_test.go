package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// A remote server may label its failure with any code under
// _meta["toolscope/code"]; a code the registry itself gives (say
// ABORTED_BEFORE_DISPATCH, which promises the call never started) is
// namespaced as REMOTE_<code>, so no caller mistakes the server's word for
// the registry's; the server's own codes (QUOTA) pass as they are; a code
// that is not a code (too long, odd characters) is dropped.
func TestImport_RemoteCodesKeptApartFromRegistryCodes(t *testing.T) {
	codes := map[string]string{
		"before":    `"ABORTED_BEFORE_DISPATCH"`,
		"timeout":   `"TOOL_TIMEOUT"`,
		"args":      `"INVALID_ARGS"`,
		"unavail":   `"MCP_UNAVAILABLE"`,
		"quota":     `"QUOTA"`,
		"dotted":    `"acme.rate_limited"`,
		"long":      `"` + strings.Repeat("A", 65) + `"`,
		"newline":   `"BAD\nCODE"`,
		"number":    `42`,
		"remote":    `"REMOTE_ABORTED"`,
		"uncoded":   ``,
		"lowercase": `"aborted"`,
	}
	h := hostile{
		list: func(string) string {
			var tools []string
			for name := range codes {
				tools = append(tools, `{"name":"`+name+`","inputSchema":{"type":"object"}}`)
			}
			return toolList("", tools...)
		},
		call: func(name string, _ json.RawMessage) string {
			meta := ""
			if c := codes[name]; c != "" {
				meta = `,"_meta":{"toolscope/code":` + c + `}`
			}
			return `{"isError":true,"content":[{"type":"text","text":"remote says no"}]` + meta + `}`
		},
	}
	cs := connectHostile(t, h)
	reg := newRegistry(t)
	mustImport(t, reg.Global(), cs)
	for name, want := range map[string][2]string{
		"before":    {mcp.NameToolError, "REMOTE_ABORTED_BEFORE_DISPATCH"},
		"timeout":   {mcp.NameToolError, "REMOTE_TOOL_TIMEOUT"},
		"args":      {mcp.NameToolError, "REMOTE_INVALID_ARGS"},
		"unavail":   {mcp.NameToolError, "REMOTE_MCP_UNAVAILABLE"},
		"quota":     {mcp.NameToolError, "QUOTA"},
		"dotted":    {mcp.NameToolError, "acme.rate_limited"},
		"long":      {"", ""},
		"newline":   {"", ""},
		"number":    {"", ""},
		"remote":    {mcp.NameToolError, "REMOTE_ABORTED"},
		"uncoded":   {"", ""},
		"lowercase": {mcp.NameToolError, "aborted"},
	} {
		res := execute(t, reg.Global(), name, `{}`)
		errName, code, _ := res.ErrorInfo()
		if !res.IsError() || res.ErrorMessage() != "remote says no" || errName != want[0] || string(code) != want[1] {
			t.Errorf("%s: error=%v message %q name %q code %q, want name %q code %q", name, res.IsError(), res.ErrorMessage(), errName, code, want[0], want[1])
		}
		if res.Code() == runtime.CodeAbortedBeforeDispatch || res.Code() == runtime.CodeToolTimeout {
			t.Errorf("%s: the server's code passed as the registry's own %s", name, res.Code())
		}
	}
}
