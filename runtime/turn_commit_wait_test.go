package runtime_test

import (
	"context"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// R94, R95: a finished call of a turn is committed — post-execute, result
// observers, its result recorded — while a later call of the turn waits for
// admission behind an unrelated exclusive call. Admission is part of the
// dispatch, not of prepare (R49, R93): the driver does not block in it.
//
// Turn [a, b] in scope s: a (parallel) runs; an unrelated exclusive call x
// queues behind it; b (parallel) is prepared after x queued, so it waits for
// x (first come, first served); a finishes and x runs until the test lets it
// go — which it does only after a's observer ran.
func TestTurn_R95_FinishedCallCommitsWhileLaterCallWaitsForAdmission(t *testing.T) {
	reg := mustNew(t)
	defer closeNow(t, reg)
	s, err := reg.NewScope("s")
	if err != nil {
		t.Fatal(err)
	}
	aRunning, releaseA := make(chan struct{}), make(chan struct{})
	xRunning, releaseX := make(chan struct{}), make(chan struct{})
	xQueued := make(chan struct{})
	mustRegister(t, s, hdef("a", true, func(context.Context) (any, error) {
		close(aRunning)
		<-releaseA
		return "a", nil
	}))
	mustRegister(t, s, hdef("b", true, func(context.Context) (any, error) { return "b", nil }))
	mustRegister(t, s, hdef("x", false, func(context.Context) (any, error) {
		close(xRunning)
		<-releaseX
		return "x", nil
	}))
	if _, err := s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if e.Name() == "b" {
			<-xQueued // b's prepare goes on once x waits for admission
		}
		return next()
	}); err != nil {
		t.Fatal(err)
	}
	aCommitted := make(chan struct{})
	if _, err := s.OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error {
		if e.Name() == "a" {
			close(aCommitted)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	turn := make(chan *runtime.TurnResult, 1)
	go func() {
		tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "a", Name: "a"}, {ID: "b", Name: "b"}})
		if err != nil {
			t.Error(err)
		}
		turn <- tr
	}()
	if !awaitClosed(t, aRunning, "a's body to start") {
		close(releaseA)
		close(releaseX)
		close(xQueued)
		return
	}
	xDone := make(chan *runtime.Result, 1)
	go func() { xDone <- s.Execute(context.Background(), runtime.Call{ID: "x", Name: "x"}) }()
	waitFor(t, "x to wait for admission", func() bool { return runtime.QueuedForTest(reg) >= 1 })
	close(xQueued)
	close(releaseA)
	awaitClosed(t, xRunning, "x to run once a ended")
	committed := awaitClosed(t, aCommitted, "a's commit (its result observer) while b waits for x")
	close(releaseX)
	if !committed {
		return
	}
	var tr *runtime.TurnResult
	boundedWait(t, waitLimit, "the turn", func() { tr = <-turn })
	boundedWait(t, waitLimit, "x", func() { <-xDone })
	if tr == nil || len(tr.Results) != 2 || tr.Results[0].IsError() || tr.Results[1].IsError() {
		t.Fatalf("turn results: %+v", tr)
	}
}
