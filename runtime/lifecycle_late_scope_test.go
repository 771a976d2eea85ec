package runtime_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// R7, Close: a scope created while Close runs either fails with ErrClosed
// or is torn down by that Close. No scope survives it: after Close returned
// nil, registering through any scope handle it ever returned fails.
func TestClose_R7_ScopeCreatedDuringCloseDoesNotSurvive(t *testing.T) {
	const rounds = 200
	const creators = 4
	for round := range rounds {
		reg := mustNew(t, runtime.WithEvents(false))
		var (
			mu      sync.Mutex
			created []*runtime.Scope
			wg      sync.WaitGroup
			start   = make(chan struct{})
		)
		for c := range creators {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; ; i++ {
					s, err := reg.NewScope(fmt.Sprintf("r%d-c%d-%d", round, c, i))
					if err != nil {
						if !errors.Is(err, runtime.ErrClosed) {
							t.Errorf("NewScope: %v", err)
						}
						return
					}
					mu.Lock()
					created = append(created, s)
					mu.Unlock()
				}
			}()
		}
		close(start)
		time.Sleep(time.Duration(round%5) * 50 * time.Microsecond)
		boundedWait(t, 20*time.Second, "Close with scopes being created", func() {
			closeNow(t, reg)
			wg.Wait()
		})
		mu.Lock()
		for _, s := range created {
			if d, err := s.Register(hdef("late", true, nil)); err == nil {
				d()
				t.Fatalf("round %d: scope %q survived Close: Register through it succeeded", round, s.Key())
			}
		}
		mu.Unlock()
	}
}
