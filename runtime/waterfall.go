package runtime

import (
	"sync"

	"github.com/toolscope/toolscope/internal/core"
)

// A waterfall runs a list of hooks outermost first, each with a next that
// runs the rest of the list (R52, R68); the innermost next returns the
// default decision. Not calling next vetoes the later hooks; calling it
// again returns the same decision without running them again. Pre-execute
// (decisions D = Decision) and post-execute (D = PostDecision) are the two
// waterfalls; the around hooks are not one (their next takes a ctx and may
// be called again for a fresh dispatch, around.go).

// hookCaller calls one hook of a waterfall whose decisions are D.
type hookCaller[D any] interface {
	// call calls the hook (an entry's payload) with next, containing a
	// panic (safecall.go).
	call(hook any, next func() (D, error)) (D, error)
	// innermost is the decision of the innermost next.
	innermost() D
}

// runWaterfall runs the hooks of list through c and returns the outermost
// hook's decision. The levels share one allocation.
func runWaterfall[D any, C hookCaller[D]](c C, list []core.Entry) (D, error) {
	if len(list) == 0 {
		return c.innermost(), nil
	}
	levels := make([]level[D, C], len(list))
	for i := range levels {
		l := &levels[i]
		l.c, l.hook = c, list[i].Payload
		if i+1 < len(levels) {
			l.inner = &levels[i+1]
		}
	}
	return levels[0].run()
}

// level is one level of a waterfall: its hook, the level its next runs
// (nil: the innermost default) and what that returned.
type level[D any, C hookCaller[D]] struct {
	c     C
	hook  any
	inner *level[D, C]
	once  sync.Once
	d     D
	e     error
}

func (l *level[D, C]) run() (D, error) {
	return l.c.call(l.hook, l.next)
}

// next is the hook's next: the rest of the waterfall, once.
func (l *level[D, C]) next() (D, error) {
	l.once.Do(l.rest)
	return l.d, l.e
}

func (l *level[D, C]) rest() {
	if l.inner == nil {
		l.d, l.e = l.c.innermost(), nil
		return
	}
	l.d, l.e = l.inner.run()
}

// preHooks calls pre-execute hooks (R52): the innermost default is Allow.
type preHooks struct{ ex Execution }

func (c preHooks) call(hook any, next func() (Decision, error)) (Decision, error) {
	return callPre(hook.(PreExecuteHook), c.ex, next)
}

func (preHooks) innermost() Decision { return Allow() }

// postHooks calls post-execute hooks on res (R68): the innermost default
// is Accept.
type postHooks struct {
	ex  Execution
	res *Result
}

func (c postHooks) call(hook any, next func() (PostDecision, error)) (PostDecision, error) {
	return callPost(hook.(PostExecuteHook), c.ex, c.res, next)
}

func (postHooks) innermost() PostDecision { return Accept() }

// runPre is the pre-execute waterfall (R52).
func runPre(ex Execution, list []core.Entry) (Decision, error) {
	return runWaterfall[Decision](preHooks{ex}, list)
}

// runPostHooks is the post-execute waterfall over res (R68).
func runPostHooks(ex Execution, res *Result, list []core.Entry) (PostDecision, error) {
	return runWaterfall[PostDecision](postHooks{ex, res}, list)
}
