package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/runtime"
)

// hdef is a tool whose body is body and whose mode is fixed.
func hdef(name string, parallel bool, body func(ctx context.Context) (any, error)) runtime.Definition {
	return runtime.Definition{
		Name:       name,
		Parameters: json.RawMessage(`{"type":"object"}`),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{}`),
			Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text(string(v))}, nil
			},
		},
		Execute: func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
			return body(ctx)
		},
		IsConcurrencySafe: func(context.Context, json.RawMessage) (bool, error) { return parallel, nil },
	}
}

func mustNew(t testing.TB, opts ...runtime.Option) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func mustRegister(t testing.TB, s *runtime.Scope, d runtime.Definition) func() {
	t.Helper()
	dispose, err := s.Register(d)
	if err != nil {
		t.Fatal(err)
	}
	return dispose
}

// waitFor polls cond (tests only) until it holds or the test times out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func closeNow(t testing.TB, reg *runtime.Registry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := reg.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// Close waits for calls in flight (Execute and turns) and each returns its
// own result; calls after Close fail at once with CLOSED / ErrClosed.
func TestClose_DrainsInFlightCalls(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := mustNew(t)
	gate := make(chan struct{})
	mustRegister(t, reg.Global(), hdef("block", true, func(context.Context) (any, error) {
		<-gate
		return "done", nil
	}))
	mustRegister(t, reg.Global(), hdef("quick", true, func(context.Context) (any, error) { return "q", nil }))
	s, _ := reg.NewScope("a")
	const n = 20
	results := make(chan *runtime.Result, n)
	turns := make(chan *runtime.TurnResult, 2)
	for i := range n {
		go func() {
			results <- s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "block"})
		}()
	}
	for i := range 2 {
		go func() {
			tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: fmt.Sprint("t", i), Name: "block"}})
			if err != nil {
				t.Error(err)
			}
			turns <- tr
		}()
	}
	waitFor(t, "calls in flight", func() bool { return reg.InFlight() == n+2 })
	closed := make(chan error, 1)
	go func() { closed <- reg.Close(context.Background()) }()
	waitFor(t, "Execute after Close to fail", func() bool {
		r := s.Execute(context.Background(), runtime.Call{ID: "late", Name: "quick"})
		return r.IsError() && r.Code() == runtime.CodeClosed
	})
	if _, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "late", Name: "block"}}); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("turn after Close: err = %v, want ErrClosed", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while calls were in flight", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	for range n {
		if r := <-results; r.IsError() {
			t.Fatalf("drained call failed: %s", r.ErrorMessage())
		}
	}
	for range 2 {
		tr := <-turns
		if tr == nil || len(tr.Results) != 1 || tr.Results[0].IsError() {
			t.Fatalf("drained turn: %+v", tr)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// When Close's ctx expires, calls in flight are cancelled and still return
// one result each; a later Close completes the teardown.
func TestClose_ExpiredCtxCancelsInFlightCalls(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := mustNew(t)
	mustRegister(t, reg.Global(), hdef("slow", true, func(ctx context.Context) (any, error) {
		<-ctx.Done() // returns only on cancellation
		return "late", nil
	}))
	mustRegister(t, reg.Global(), hdef("excl", false, func(ctx context.Context) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	s, _ := reg.NewScope("a")
	const n = 16
	results := make(chan *runtime.Result, n)
	for i := range n {
		name := "slow"
		if i%4 == 0 {
			name = "excl"
		}
		go func() {
			results <- s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: name})
		}()
	}
	tr := make(chan *runtime.TurnResult, 1)
	go func() {
		res, _ := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "t0", Name: "slow"}, {ID: "t1", Name: "excl"}})
		tr <- res
	}()
	waitFor(t, "calls in flight", func() bool { return reg.InFlight() == n+1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := reg.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want deadline exceeded", err)
	}
	for range n {
		r := <-results
		if !r.IsError() {
			t.Fatalf("cancelled call succeeded: %s", r.Text())
		}
	}
	res := <-tr
	if res == nil || len(res.Results) != 2 {
		t.Fatalf("turn: %+v", res)
	}
	for _, r := range res.Results {
		if r == nil || !r.IsError() {
			t.Fatalf("turn result %+v, want a failure", r)
		}
	}
	closeNow(t, reg)
}

// Disposing a scope while its calls run loses no result (R7: calls in
// flight finish).
func TestDispose_WithCallsInFlightLosesNoResult(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := mustNew(t)
	defer closeNow(t, reg)
	s, _ := reg.NewScope("a")
	gate := make(chan struct{})
	mustRegister(t, s, hdef("p", true, func(context.Context) (any, error) { <-gate; return 1, nil }))
	mustRegister(t, s, hdef("x", false, func(context.Context) (any, error) { <-gate; return 2, nil }))
	const n = 30
	results := make(chan *runtime.Result, n)
	var started sync.WaitGroup
	for i := range n {
		name := "p"
		if i%3 == 0 {
			name = "x"
		}
		started.Add(1)
		go func() {
			started.Done()
			results <- s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: name})
		}()
	}
	started.Wait()
	waitFor(t, "calls in flight", func() bool { return reg.InFlight() == n })
	disposed := make(chan struct{})
	go func() { s.Dispose(); close(disposed) }()
	<-disposed
	close(gate)
	ok := 0
	for range n {
		r := <-results
		if !r.IsError() {
			ok++
		}
	}
	if ok == 0 {
		t.Fatal("no call survived the disposal")
	}
	// A call after disposal sees the global view only.
	if r := s.Execute(context.Background(), runtime.Call{ID: "after", Name: "p"}); r.Code() != runtime.CodeUnknownTool {
		t.Fatalf("after dispose: %q %s", r.Code(), r.ErrorMessage())
	}
}

// Close is idempotent and safe to call concurrently; Execute racing Close
// returns either a result or CLOSED, never hangs or panics.
func TestClose_ConcurrentWithCalls(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for range 20 {
		reg := mustNew(t)
		mustRegister(t, reg.Global(), hdef("t", true, func(context.Context) (any, error) { return 1, nil }))
		mustRegister(t, reg.Global(), hdef("x", false, func(context.Context) (any, error) { return 1, nil }))
		s, _ := reg.NewScope("a")
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 50 {
					name := "t"
					if (i+j)%5 == 0 {
						name = "x"
					}
					r := s.Execute(context.Background(), runtime.Call{ID: "c", Name: name})
					if r.IsError() && r.Code() != runtime.CodeClosed {
						t.Errorf("unexpected failure %q %s", r.Code(), r.ErrorMessage())
					}
					if j%10 == 0 {
						_, _ = s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "1", Name: "t"}, {ID: "2", Name: "x"}})
					}
				}
			}()
		}
		for range 3 {
			wg.Add(1)
			go func() { defer wg.Done(); closeNow(t, reg) }()
		}
		wg.Wait()
		closeNow(t, reg)
	}
}

type ctxKey struct{}

// A call's ctx is the caller's (values, deadline, cancellation), is done
// once the call has returned, and derived contexts follow it.
func TestExecute_CallCtxFollowsCallerAndEndsWithTheCall(t *testing.T) {
	reg := mustNew(t)
	defer closeNow(t, reg)
	var kept context.Context
	var derivedErr error
	mustRegister(t, reg.Global(), hdef("body", true, func(ctx context.Context) (any, error) {
		kept = ctx
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("deadline lost")
		}
		d, cancel := context.WithCancel(ctx)
		defer cancel()
		select {
		case <-d.Done():
			return nil, errors.New("derived ctx done early")
		default:
		}
		derivedErr = d.Err()
		return ctx.Value(ctxKey{}), nil
	}))
	parent, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "v"), time.Hour)
	defer cancel()
	r := reg.Execute(parent, runtime.Call{ID: "1", Name: "body"})
	if r.IsError() || r.Text() != `"v"` || derivedErr != nil {
		t.Fatalf("result %q (error %v), derived err %v", r.Text(), r.IsError(), derivedErr)
	}
	if !errors.Is(kept.Err(), context.Canceled) {
		t.Fatalf("kept ctx after return: Err = %v, want Canceled", kept.Err())
	}
	select {
	case <-kept.Done():
	default:
		t.Fatal("kept ctx after return: Done not closed")
	}
	if parent.Err() != nil {
		t.Fatal("the caller's ctx was cancelled")
	}

	// A body that never asked for Done still sees the caller's cancellation.
	pc, pcancel := context.WithCancel(context.Background())
	mustRegister(t, reg.Global(), hdef("cancelling", true, func(ctx context.Context) (any, error) {
		pcancel()
		return nil, ctx.Err()
	}))
	if r := reg.Execute(pc, runtime.Call{ID: "2", Name: "cancelling"}); !r.IsError() {
		t.Fatalf("cancelled call succeeded: %s", r.Text())
	}
}
