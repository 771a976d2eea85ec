package runtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// TestAttack_Admission_TeardownWithATicketOnItsWay: an exclusive call a
// failed its scope's fast path (its ticket issued) and is held before it
// posts to the line; a parallel call b failed after it and posted; x runs.
// Then the scope goes away with a's ticket outstanding:
//   - Dispose: the line retires but keeps admitting in ticket order — b
//     is not admitted ahead of a's reserved place when x ends (N1 holds
//     through R7); once a posts, both are admitted and answered once
//     (their tools went with the scope: UNKNOWN_TOOL);
//   - Close: the line stops and fails open (nobody is stranded) — every
//     call is answered, once, and nothing hangs.
func TestAttack_Admission_TeardownWithATicketOnItsWay(t *testing.T) {
	for _, teardown := range []string{"dispose", "close"} {
		t.Run(teardown, func(t *testing.T) {
			aFailed, bFailed, letAPost := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var once sync.Once
			hook := runtime.WithAfterFastPathFailedForTest(func(tool string) {
				switch tool {
				case "ex":
					close(aFailed)
					select {
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
			for deadline := time.Now().Add(r3Timeout); ; time.Sleep(time.Millisecond) {
				if _, posted := runtime.AdmissionForTest(s); posted == 1 {
					break
				}
				require.True(t, time.Now().Before(deadline), "b never reached the line")
			}

			down := make(chan struct{})
			go func() {
				defer close(down)
				if teardown == "dispose" {
					s.Dispose()
				} else {
					_ = reg.Close(context.Background())
				}
			}()
			if teardown == "dispose" {
				r3Await(t, down) // Dispose does not wait for the calls in flight
				close(g.release["x"])
				r3Await(t, rx)
				select { // a's place is first: b is neither admitted nor answered
				case <-g.started["b"]:
					t.Fatal("b started ahead of a's reserved place after Dispose")
				case res := <-rb:
					t.Fatalf("b answered ahead of a's reserved place after Dispose: %v", res.Code())
				case <-time.After(20 * time.Millisecond):
				}
				close(letAPost)
				// Admitted in order, each finds its tool gone with the scope
				// (resolved at dispatch): answered once, none runs.
				for _, ch := range []<-chan *runtime.Result{ra, rb} {
					res := r3Await(t, ch)
					assert.Equal(t, runtime.CodeUnknownTool, res.Code())
				}
				assert.Equal(t, []string{"x"}, g.getOrder())
				return
			}
			// Close: b may be admitted at once (the stopped line fails
			// open); a, posting late, runs unadmitted. Every call ends.
			close(letAPost)
			close(g.release["x"])
			close(g.release["a"])
			close(g.release["b"])
			for _, ch := range []<-chan *runtime.Result{rx, ra, rb} {
				require.NotNil(t, r3Await(t, ch))
			}
			r3Await(t, down)
		})
	}
}
