package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// unprintableErr is an error whose Error method panics.
type unprintableErr struct{}

func (unprintableErr) Error() string { panic("Error method exploded") }

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestObservers_R75_UnprintableErrorMessage: an observer failing with an
// error whose Error method panics (returned or panicked) is contained like
// any other failure, and both the warning and the error handler read the
// the contract's "<unprintable value>" (§0.3), not fmt's "%!v(PANIC=…)".
// The handler's error still unwraps to the observer's own error.
func TestObservers_R75_UnprintableErrorMessage(t *testing.T) {
	var logs syncBuffer
	var mu sync.Mutex
	var handled []error
	reg, err := runtime.New(
		runtime.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		runtime.WithErrorHandler(func(err error) {
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, err)
		}),
	)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	g := reg.Global()
	_, err = g.Register(runtime.Definition{
		Name:    "t",
		Output:  &runtime.Output{Schema: map[string]any{}, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "ok", nil },
	})
	require.NoError(t, err)
	_, err = g.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { return unprintableErr{} })
	require.NoError(t, err)
	_, err = g.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { panic(unprintableErr{}) })
	require.NoError(t, err)
	later := 0
	_, err = g.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { later++; return nil })
	require.NoError(t, err)

	res := reg.Execute(context.Background(), runtime.Call{ID: "c1", Name: "t", Arguments: json.RawMessage(`{}`)})
	require.False(t, res.IsError(), res.ErrorMessage())
	assert.Equal(t, 1, later, "a failing observer affects no other observer")

	want := `result observer failed for call "c1": <unprintable value>`
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, handled, 2)
	for _, e := range handled {
		assert.Equal(t, want, e.Error())
		assert.True(t, errors.As(e, new(unprintableErr)), "the handler's error unwraps to the observer's")
	}
	out := logs.String()
	assert.Equal(t, 2, bytes.Count([]byte(out), []byte("<unprintable value>")), out)
	assert.NotContains(t, out, "PANIC")
}

// The same for a change subscriber failing while a removal is announced
// (R90): the handler reads "<unprintable value>".
func TestChange_R90_UnprintableSubscriberErrorOnRemoval(t *testing.T) {
	var mu sync.Mutex
	var handled []error
	reg, err := runtime.New(runtime.WithErrorHandler(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, err)
	}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	g := reg.Global()
	dispose, err := g.Register(runtime.Definition{
		Name:    "t",
		Output:  &runtime.Output{Schema: map[string]any{}, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "ok", nil },
	})
	require.NoError(t, err)
	_, err = g.OnChange(func(context.Context) error { return unprintableErr{} })
	require.NoError(t, err)
	dispose()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, handled, 1)
	assert.Equal(t, "change subscriber failed while a removal was announced: <unprintable value>", handled[0].Error())
}
