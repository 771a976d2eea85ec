package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// Regression tests for the input defects of issue 11 (§3, §4, §5).

// TestProtocol_ResultFromProtoNilIsEmpty: a nil *messages.Result reads as
// the empty message (what the generated getters return for nil), not a
// panic.
func TestProtocol_ResultFromProtoNilIsEmpty(t *testing.T) {
	var r *runtime.Result
	require.NotPanics(t, func() { r = runtime.ResultFromProto(nil) })
	require.NotNil(t, r)
	empty := runtime.ResultFromProto(&messages.Result{})
	assert.Equal(t, empty.IsError(), r.IsError())
	_, hasValue := r.Value()
	assert.False(t, hasValue)
	_, hasMeta := r.Meta()
	assert.False(t, hasMeta)
	assert.Empty(t, r.Content())
	assert.Empty(t, r.AdditionalContexts())
	assert.False(t, r.ConcludesTurn())
	assert.Equal(t, empty.Proto().String(), r.Proto().String())
}
