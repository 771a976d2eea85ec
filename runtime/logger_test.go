package runtime_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A subscriber that falls behind is warned about once, on WithLogger.
func TestLogger_DroppedEventsWarnedOnce(t *testing.T) {
	var buf lockedBuffer
	reg := r3Reg(t, runtime.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	r3M(reg.Global().Register(r3Const("t", "ok")))
	block := make(chan struct{})
	sub, err := reg.Subscribe(func(runtime.Event) { <-block }, runtime.WithBuffer(1))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { close(block); sub.Close() }()
	for range 20 {
		reg.Global().Execute(t.Context(), runtime.Call{ID: "c", Name: "t"})
	}
	assert.Greater(t, sub.Dropped(), int64(1))
	assert.Equal(t, 1, strings.Count(buf.String(), "dropping events"), buf.String())
}

// Events you can rely on (issue 25, item 8): the first drop of a
// subscription is reported where a user sees it by default — once through
// the error handler (ErrEventsDropped) and, without WithLogger, once
// through slog.Default (the registry's own logger then discards).
func TestEvents_FirstDropReportedOnce(t *testing.T) {
	var buf lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)

	var handled atomic.Int64
	reg := r3Reg(t, runtime.WithErrorHandler(func(err error) {
		if errors.Is(err, runtime.ErrEventsDropped) {
			handled.Add(1)
		}
	}))
	r3M(reg.Global().Register(r3Const("t", "ok")))
	block := make(chan struct{})
	sub, err := reg.Subscribe(func(runtime.Event) { <-block }, runtime.WithBuffer(1))
	require.NoError(t, err)
	defer func() { close(block); sub.Close() }()
	for range 20 {
		reg.Global().Execute(t.Context(), runtime.Call{ID: "c", Name: "t"})
	}
	assert.Greater(t, sub.Dropped(), int64(1))
	assert.Equal(t, int64(1), handled.Load(), "the error handler hears of the first drop only")
	assert.Equal(t, 1, strings.Count(buf.String(), "dropping events"), "slog.Default logs the first drop only: %s", buf.String())
}
