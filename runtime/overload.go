package runtime

import (
	"fmt"

	"github.com/toolscope/toolscope/internal/core"
)

// WithMaxQueued bounds the executions waiting for admission in one scope
// (calls that found the scope's dispatch busy: an exclusive call running,
// or an exclusive call queued ahead). While n calls wait, a new Execute in
// that scope fails at once with the coded OVERLOADED failure
// (OverloadedError), before any hook runs, so a flooded scope costs
// bounded memory instead of an ever-growing queue. n = 0 (the default)
// means unbounded. Turn dispatches are bounded by MaxParallel and are not
// rejected, but they count as waiting. Nested calls waiting for admission
// count too; a call whose ctx ended while it waited stops counting at once.
// After Close began a call gets CLOSED, not OVERLOADED.
//
// The bound is checked when a call enters; calls already past entry still
// queue, so the queue may briefly exceed n by the number of calls entering
// concurrently.
func WithMaxQueued(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: MaxQueued must not be negative, got %d", ErrInvalidConfig, n)
		}
		c.maxQueued = n
		return nil
	})
}

// overloaded reports whether node's scope has maxQueued calls waiting.
func (r *Registry) overloaded(node *core.Node) bool {
	sh := r.admission(node)
	if sh == nil {
		return false
	}
	return sh.gate.Waiting() >= int64(r.cfg.maxQueued)
}

func overloadedResult() *Result {
	return codedFailure(NameOverloaded, CodeOverloaded, "tool call rejected: too many calls waiting for admission in this scope")
}
