package runtime_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

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
