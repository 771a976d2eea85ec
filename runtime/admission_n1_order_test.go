package runtime_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// TestAdmission_N1_FailedFirstIsAdmittedFirst: among calls that arrive at
// once, the order is that of their gate's atomic step, not of their posts
// to the line (docs/contract.md#n1). An exclusive call a fails the fast
// path first and is held before it posts; a parallel call b fails it after
// a and posts first. When the running call ends, nothing fits ahead of a's
// place: b is not admitted although it would fit; a, once it posts, runs
// alone first, then b.
func TestAdmission_N1_FailedFirstIsAdmittedFirst(t *testing.T) {
	aFailed, bFailed, letAPost := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := runtime.WithAfterFastPathFailedForTest(func(tool string) {
		switch tool {
		case "ex":
			close(aFailed)
			select { // bounded: the test lets it go, or fails first
			case <-letAPost:
			case <-time.After(r3Timeout):
			}
		case "par":
			once.Do(func() { close(bFailed) })
		}
	})
	reg := r3Reg(t, hook)
	s := r3Scope(t, reg, "a")
	g := newR3Gated("x", "a", "b")
	r3M(s.Register(r3GatedTool("hold", g, false)))
	r3M(s.Register(r3GatedTool("ex", g, false)))
	r3M(s.Register(r3GatedTool("par", g, true)))

	rx := r3Go(s, runtime.Call{ID: "x", Name: "hold", Arguments: map[string]any{"ID": "x"}})
	r3Await(t, g.started["x"])
	ra := r3Go(s, runtime.Call{ID: "a", Name: "ex", Arguments: map[string]any{"ID": "a"}})
	r3Await(t, aFailed)
	rb := r3Go(s, runtime.Call{ID: "b", Name: "par", Arguments: map[string]any{"ID": "b"}})
	r3Await(t, bFailed)
	// b posts; a is still held before its post.
	for deadline := time.Now().Add(r3Timeout); ; time.Sleep(time.Millisecond) {
		if _, posted := runtime.AdmissionForTest(s); posted == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "b never reached the line")
	}

	// x ends: its release admits whoever fits, in ticket order — nobody,
	// a's place being first and empty.
	close(g.release["x"])
	r3Success(t, r3Await(t, rx), "1")
	running, posted := runtime.AdmissionForTest(s)
	assert.Equal(t, 0, running, "a call was admitted ahead of a, whose fast path failed first")
	assert.Equal(t, 1, posted)
	select {
	case <-g.started["b"]:
		t.Fatal("b started before a, whose fast path failed first")
	default:
	}

	close(letAPost)
	r3Await(t, g.started["a"])
	close(g.release["a"])
	r3Success(t, r3Await(t, ra), "1") // it ran alone
	r3Await(t, g.started["b"])
	close(g.release["b"])
	r3Success(t, r3Await(t, rb), "1")
	assert.Equal(t, []string{"x", "a", "b"}, g.getOrder())
}
