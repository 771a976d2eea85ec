package runtime

import (
	"sync"

	"github.com/toolscope/toolscope/internal/core"
)

// decision); the levels share one allocation.
func runPre(ex Execution, list []core.Entry) (Decision, error) {
	if len(list) == 0 {
		return Allow(), nil
	}
	steps := make([]preStep, len(list))
	for i := range steps {
		p := &steps[i]
		p.ex, p.all, p.list, p.i = ex, steps, list, i
	}
	return steps[0].run()
}

// preStep is one level of the pre-execute waterfall.
type preStep struct {
	ex   Execution
	all  []preStep
	list []core.Entry
	i    int
	once sync.Once
	d    Decision
	e    error
}

func (p *preStep) run() (Decision, error) {
	return callPre(p.list[p.i].Payload.(PreExecuteHook), p.ex, p.next)
}

// next is the hook's next: the rest of the waterfall, once.
func (p *preStep) next() (Decision, error) {
	p.once.Do(p.rest)
	return p.d, p.e
}

func (p *preStep) rest() {
	if p.i+1 == len(p.all) {
		p.d, p.e = Allow(), nil
		return
	}
	p.d, p.e = p.all[p.i+1].run()
}

// postStep is one level of the post-execute waterfall (runPost), like
// preStep.
type postStep struct {
	ex   Execution
	res  *Result
	all  []postStep
	list []core.Entry
	i    int
	once sync.Once
	d    PostDecision
	e    error
}

func (p *postStep) run() (PostDecision, error) {
	return callPost(p.list[p.i].Payload.(PostExecuteHook), p.ex, p.res, p.next)
}

func (p *postStep) next() (PostDecision, error) {
	p.once.Do(p.rest)
	return p.d, p.e
}

func (p *postStep) rest() {
	if p.i+1 == len(p.all) {
		p.d, p.e = Accept(), nil
		return
	}
	p.d, p.e = p.all[p.i+1].run()
}
