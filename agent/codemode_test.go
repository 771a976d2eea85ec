package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/runtime"
)

// A code-mode scope's model is offered only run_code (R107); its program
// reaches the other tools, and a direct call of one is refused.
func TestRun_R107_CodeModeOffersOnlyRunCode(t *testing.T) {
	s := newScope(t, codemode.Option(codemode.Config{}))
	register(t, s, def(readTool()))
	require.NoError(t, s.SetPresentation(runtime.PresentationCode))
	prog, _ := json.Marshal(map[string]string{"code": `[read(path=p) for p in ["a", "b"]]`})
	m := &script{reply: func(n int, st step) (agent.Reply[msg], error) {
		switch n {
		case 1:
			return callTools(runtime.TurnCall{ID: "c1", Name: "read", ArgumentsText: `{"path":"a"}`}), nil
		case 2:
			return callTools(runtime.TurnCall{ID: "c2", Name: "run_code", ArgumentsText: string(prog)}), nil
		}
		return answer("done"), nil
	}}
	out, err := run(t, context.Background(), s, m, []msg{{Role: "user", Text: "go"}})
	require.NoError(t, err)
	assert.Equal(t, agent.Answered, out.Stop)
	require.Len(t, m.steps, 3)
	for _, st := range m.steps {
		assert.Equal(t, []string{"run_code"}, st.tools)
	}
	tr := m.steps[1].transcript
	assert.Contains(t, tr[len(tr)-1].Text, "UNKNOWN_TOOL: unknown tool \"read\": only run_code can be called directly")
	tr = m.steps[2].transcript
	assert.Equal(t, `["contents of a","contents of b"]`, tr[len(tr)-1].Text)

	// both: every tool and run_code.
	require.NoError(t, s.SetPresentation(runtime.PresentationBoth))
	m2 := &script{reply: func(int, step) (agent.Reply[msg], error) { return answer("ok"), nil }}
	_, err = run(t, context.Background(), s, m2, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"read", "run_code"}, m2.steps[0].tools)
}
