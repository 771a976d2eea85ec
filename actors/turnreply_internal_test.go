package actors

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// A turn's internal failure (R98) travels with the committed prefix: the
// reply of a TurnRequest carries the error's text and the results that
// were committed before it, with their record and contexts; a
// configuration error (no result) carries the error only.
func TestTurnReply_R98_PartialResultTravelsWithTheError(t *testing.T) {
	injected := errors.New("injected scheduler failure")
	res := &runtime.TurnResult{
		Results:  []*runtime.Result{runtime.Success("a")},
		Events:   []runtime.TurnEvent{{Kind: runtime.CallStarted, CallID: "a"}, {Kind: runtime.CallStarted, CallID: "b"}, {Kind: runtime.ResultRecorded, CallID: "a"}},
		Contexts: []runtime.ContextMessage{{Role: "user", Text: "ctx"}},
	}
	reply := turnReply(res, injected)
	assert.Equal(t, injected.Error(), reply.GetError())
	require.Len(t, reply.GetResults(), 1, "the committed result comes with the error")
	assert.JSONEq(t, `"a"`, string(reply.GetResults()[0].GetValueJson()))
	assert.Equal(t, []messages.TurnEvent_Kind{messages.TurnEventCallStarted, messages.TurnEventCallStarted, messages.TurnEventResult},
		[]messages.TurnEvent_Kind{reply.GetEvents()[0].GetKind(), reply.GetEvents()[1].GetKind(), reply.GetEvents()[2].GetKind()})
	assert.Equal(t, "ctx", reply.GetContexts()[0].GetText())

	cfg := turnReply(nil, runtime.ErrClosed)
	assert.Equal(t, runtime.ErrClosed.Error(), cfg.GetError())
	assert.Empty(t, cfg.GetResults())
}
