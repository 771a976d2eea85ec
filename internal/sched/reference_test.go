package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// This file checks Turn against a naive reference of docs/contract.md §9, the way
// etcd raft checks its quorum code against a dumb version
// (quorum/quick_test.go). Both run the same scripted turn in abstract ticks:
//
//   - reference: one straight-line "scheduler thread" written the way the
//     spec reads (loop over groups; inside a group classify live, wait for a
//     slot, start, commit the ready prefix; drain), with a virtual clock that
//     every step advances;
//   - simulate: a small discrete-event simulator that performs whatever
//     Turn.Next asks, schedules the outcome at now+duration, and feeds it
//     back.
//
// The two must produce the same trace (every classification, start, commit
// and synthetic result with its tick, and the final Done), and simulate also
// checks the invariants of §9 on the fly.

// scriptCall is what the world answers for one call.
type scriptCall struct {
	modes     [2]Mode // answer to the first classification, and to any later one
	dispatch  bool    // prepare allows the call (else: denied/aborted/failed in prepare)
	classDur  int     // ticks the classification takes
	prepDur   int     // ticks from Prepare to Prepared
	dispDur   int     // ticks the dispatch is in flight
	commitDur int     // ticks from Commit to Committed
}

// script is one model turn.
type script struct {
	max     int
	calls   []scriptCall
	abortAt int // the step ctx is cancelled at this tick; -1: never
	failAt  int // an internal failure is raised at this tick; -1: never
}

func (sc script) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "max=%d abortAt=%d failAt=%d\n", sc.max, sc.abortAt, sc.failAt)
	for i, c := range sc.calls {
		fmt.Fprintf(&b, "  %d: modes=%v/%v dispatch=%v class=%d prep=%d disp=%d commit=%d\n",
			i, c.modes[0], c.modes[1], c.dispatch, c.classDur, c.prepDur, c.dispDur, c.commitDur)
	}
	return b.String()
}

// answer returns the mode for the k-th classification (k from 0) of a call.
func (c scriptCall) answer(k int) Mode { return c.modes[min(k, 1)] }

// event is one line of a trace.
type event struct {
	At   int
	Kind ActionKind
	Call int
}

func (e event) String() string {
	return fmt.Sprintf("t%d %v", e.At, Action{Kind: e.Kind, Call: e.Call})
}

// outcome is what a run produced.
type outcome struct {
	Trace  []event
	Failed bool
}

var errInjected = errors.New("injected scheduler failure")

// reference is the naive, obviously-correct reading of §9.
func reference(sc script) outcome {
	n := len(sc.calls)
	var out outcome
	now := 0
	emit := func(k ActionKind, i int) { out.Trace = append(out.Trace, event{now, k, i}) }

	inflight := map[int]int{} // call -> tick its dispatch completes
	ready := make([]bool, n)
	classifications := make([]int, n)
	started, committed := 0, 0

	aborted := func() bool { return sc.abortAt >= 0 && now >= sc.abortAt }
	failed := func() bool { return sc.failAt >= 0 && now >= sc.failAt }
	stop := func() bool { return aborted() || failed() }

	// notice marks every dispatch completed by now as ready.
	notice := func() {
		for i, at := range inflight {
			if at <= now {
				ready[i] = true
				delete(inflight, i)
			}
		}
	}
	// commitReady commits the longest ready prefix, one call at a time
	// (R95); nothing is committed once the scheduler has failed (R98).
	commitReady := func() {
		for {
			notice()
			if failed() || committed == started || !ready[committed] {
				return
			}
			emit(Commit, committed)
			now += sc.calls[committed].commitDur
			committed++
		}
	}
	// waitOne waits for the next dispatch completion.
	waitOne := func() {
		next := -1
		for _, at := range inflight {
			if next < 0 || at < next {
				next = at
			}
		}
		now = max(now, next)
		notice()
	}
	drain := func() {
		for len(inflight) > 0 {
			waitOne()
			commitReady()
		}
		commitReady()
	}
	classify := func(i int) Mode {
		emit(Classify, i)
		m := sc.calls[i].answer(classifications[i])
		classifications[i]++
		now += sc.calls[i].classDur
		return m
	}
	start := func(i int) {
		emit(Prepare, i)
		now += sc.calls[i].prepDur
		started++
		if sc.calls[i].dispatch {
			inflight[i] = now + sc.calls[i].dispDur
		} else {
			ready[i] = true
		}
	}

	i := 0 // first unconsumed call
	for i < n {
		if stop() {
			break
		}
		head := classify(i) // R92.1, also for a call that ended the previous group
		if stop() {
			break
		}
		start(i)
		i++
		commitReady()
		if head == Parallel {
			for i < n {
				if stop() {
					break
				}
				for len(inflight) >= sc.max { // R94
					waitOne()
					commitReady()
				}
				if stop() {
					break
				}
				if classify(i) != Parallel { // R92.2: live, right before the start
					break
				}
				if stop() {
					break
				}
				start(i)
				i++
				commitReady()
			}
		}
		drain() // R92.3: groups run one after another
	}
	drain()
	if failed() {
		out.Failed = true
	} else if aborted() {
		for j := started; j < n; j++ { // R97
			emit(Synthetic, j)
		}
	}
	emit(Done, -1)
	return out
}

// simulate drives a Turn through the script and checks §9 invariants.
func simulate(sc script) (outcome, error) {
	n := len(sc.calls)
	var out outcome
	tu, err := New(n, sc.max)
	if err != nil {
		return out, err
	}

	type pending struct {
		at, seq int
		input   ActionKind // Classify→Classified, Prepare→Prepared, Commit→Committed, Wait→DispatchDone
		call    int
	}
	var queue []pending
	seq := 0
	schedule := func(at int, in ActionKind, call int) {
		queue = append(queue, pending{at, seq, in, call})
		seq++
	}

	now := 0
	emit := func(k ActionKind, i int) { out.Trace = append(out.Trace, event{now, k, i}) }
	classifications := make([]int, n)
	lastMode := make([]Mode, n)
	prepared := make([]bool, n) // Prepare handed out
	finished := make([]bool, n) // committed or synthetic
	inflight := 0
	exclusiveRunning := -1 // an exclusive call started and not yet committed
	exclusiveInFlight := false
	outstanding := 0 // Classify/Prepare/Commit handed out, not yet answered
	nextCommit := 0

	deliver := func(p pending) error {
		i := p.call
		switch p.input {
		case Classify:
			outstanding--
			m := sc.calls[i].answer(classifications[i])
			classifications[i]++
			lastMode[i] = m
			return tu.Classified(i, m)
		case Prepare:
			outstanding--
			if sc.calls[i].dispatch {
				if inflight >= sc.max {
					return fmt.Errorf("t%d: dispatch of %d would exceed MaxParallel %d", now, i, sc.max)
				}
				if exclusiveInFlight {
					return fmt.Errorf("t%d: dispatch of %d overlaps an exclusive dispatch", now, i)
				}
				if lastMode[i] == Exclusive && inflight > 0 {
					return fmt.Errorf("t%d: exclusive dispatch of %d overlaps %d others", now, i, inflight)
				}
				inflight++
				exclusiveInFlight = lastMode[i] == Exclusive
				schedule(now+sc.calls[i].dispDur, Wait, i)
			}
			return tu.Prepared(i, sc.calls[i].dispatch)
		case Wait:
			inflight--
			if lastMode[i] == Exclusive {
				exclusiveInFlight = false
			}
			return tu.DispatchDone(i)
		case Commit:
			outstanding--
			if exclusiveRunning == i {
				exclusiveRunning = -1
			}
			return tu.Committed(i)
		}
		return nil
	}

	for steps := 0; ; steps++ {
		if steps > 100000 {
			return out, errors.New("no progress")
		}
		// Deliver every outcome due by now, in (tick, scheduling) order.
		for {
			k := -1
			for j, p := range queue {
				if p.at <= now && (k < 0 || p.at < queue[k].at || p.at == queue[k].at && p.seq < queue[k].seq) {
					k = j
				}
			}
			if k < 0 {
				break
			}
			p := queue[k]
			queue = slices.Delete(queue, k, k+1)
			if err := deliver(p); err != nil {
				return out, err
			}
		}
		if tu.inFlight != inflight {
			return out, fmt.Errorf("t%d: %d dispatches in flight, simulator has %d", now, tu.inFlight, inflight)
		}
		// The shell checks the step ctx before every Next (R97).
		if sc.abortAt >= 0 && now >= sc.abortAt {
			tu.Abort()
		}
		if sc.failAt >= 0 && now >= sc.failAt {
			if err := tu.Fail(errInjected); err != nil {
				return out, err
			}
		}
		a := tu.Next()
		if a.Kind != Wait {
			emit(a.Kind, a.Call)
		}
		if (a.Kind == Classify || a.Kind == Prepare || a.Kind == Commit) && outstanding > 0 {
			return out, fmt.Errorf("t%d: %v handed out while another step is outstanding", now, a)
		}
		if (a.Kind == Classify || a.Kind == Prepare) && exclusiveRunning >= 0 {
			return out, fmt.Errorf("t%d: %v during exclusive call %d", now, a, exclusiveRunning)
		}
		switch a.Kind {
		case Classify:
			if prepared[a.Call] {
				return out, fmt.Errorf("t%d: classify of started call %d", now, a.Call)
			}
			outstanding++
			schedule(now+sc.calls[a.Call].classDur, Classify, a.Call)
		case Prepare:
			if prepared[a.Call] || slices.Contains(prepared[a.Call:], true) || (a.Call > 0 && !prepared[a.Call-1]) {
				return out, fmt.Errorf("t%d: prepare of %d out of model order", now, a.Call)
			}
			prepared[a.Call] = true
			if lastMode[a.Call] == Exclusive {
				exclusiveRunning = a.Call
			}
			outstanding++
			schedule(now+sc.calls[a.Call].prepDur, Prepare, a.Call)
		case Commit:
			if a.Call != nextCommit || !prepared[a.Call] {
				return out, fmt.Errorf("t%d: commit of %d, want %d (model order, started)", now, a.Call, nextCommit)
			}
			nextCommit++
			finished[a.Call] = true
			outstanding++
			schedule(now+sc.calls[a.Call].commitDur, Commit, a.Call)
		case Synthetic:
			if prepared[a.Call] || finished[a.Call] || a.Call != nextCommit {
				return out, fmt.Errorf("t%d: synthetic for %d out of order or for a started call", now, a.Call)
			}
			if sc.abortAt < 0 || now < sc.abortAt {
				return out, fmt.Errorf("t%d: synthetic for %d without an abort", now, a.Call)
			}
			nextCommit++
			finished[a.Call] = true
		case Done:
			if inflight > 0 || outstanding > 0 || len(queue) > 0 {
				return out, fmt.Errorf("t%d: Done with %d in flight, %d outstanding", now, inflight, outstanding)
			}
			out.Failed = tu.Err() != nil
			if !out.Failed && slices.Contains(finished, false) {
				return out, fmt.Errorf("t%d: Done but some calls neither committed nor synthetic: %v", now, finished)
			}
			if tu.Next().Kind != Done {
				return out, errors.New("Next after Done is not Done")
			}
			return out, nil
		case Wait:
			if len(queue) == 0 {
				return out, fmt.Errorf("t%d: Wait with nothing outstanding (deadlock)", now)
			}
			next := queue[0].at
			for _, p := range queue {
				next = min(next, p.at)
			}
			now = max(now, next)
		}
	}
}

// randomScript draws a small turn; sizes and ticks are small so that
// collisions (simultaneous completions, zero-length steps) are common.
func randomScript(r *rand.Rand) script {
	n := r.IntN(9)
	if r.IntN(8) == 0 {
		n = r.IntN(24)
	}
	sc := script{max: 1 + r.IntN(4), abortAt: -1, failAt: -1, calls: make([]scriptCall, n)}
	if r.IntN(6) == 0 {
		sc.max = 1 + r.IntN(30)
	}
	parallelBias := r.IntN(5) // 0: mostly exclusive … 4: nearly all parallel
	mode := func() Mode {
		if r.IntN(5) < parallelBias || r.IntN(10) == 0 {
			return Parallel
		}
		return Exclusive
	}
	for i := range sc.calls {
		c := &sc.calls[i]
		c.modes[0] = mode()
		c.modes[1] = c.modes[0]
		if r.IntN(4) == 0 {
			c.modes[1] = mode()
		}
		c.dispatch = r.IntN(5) != 0
		c.classDur = r.IntN(3) / 2 // mostly 0
		c.prepDur = r.IntN(3)
		c.dispDur = r.IntN(6)
		c.commitDur = r.IntN(2)
	}
	if r.IntN(3) == 0 {
		sc.abortAt = r.IntN(3 + 3*n)
	}
	if r.IntN(6) == 0 {
		sc.failAt = r.IntN(3 + 3*n)
	}
	return sc
}

func checkAgainstReference(t *testing.T, sc script) {
	t.Helper()
	got, err := simulate(sc)
	if err != nil {
		t.Fatalf("invariant violated: %v\nscript: %v\ntrace so far: %v", err, sc, got.Trace)
	}
	want := reference(sc)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("machine and reference disagree\nscript: %v\nmachine:   %v (failed=%v)\nreference: %v (failed=%v)",
			sc, got.Trace, got.Failed, want.Trace, want.Failed)
	}
}

func TestTurn_MatchesReference(t *testing.T) {
	iters := 200000
	if testing.Short() {
		iters = 20000
	}
	r := rand.New(rand.NewPCG(0x5eed, 0x9))
	for range iters {
		checkAgainstReference(t, randomScript(r))
	}
}

// decodeScript turns fuzz bytes into a script; every byte string is valid.
func decodeScript(data []byte) script {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	sc := script{max: 1 + next()%5, abortAt: -1, failAt: -1}
	if a := next(); a%4 == 1 {
		sc.abortAt = a / 4
	}
	if f := next(); f%8 == 1 {
		sc.failAt = f / 8
	}
	n := next() % 20
	for range n {
		b, d := next(), next()
		sc.calls = append(sc.calls, scriptCall{
			modes:     [2]Mode{Mode(b & 1), Mode(b >> 1 & 1)},
			dispatch:  b>>2&3 != 0,
			classDur:  b >> 4 & 1,
			commitDur: b >> 5 & 1,
			prepDur:   b >> 6,
			dispDur:   d % 8,
		})
	}
	return sc
}

func FuzzTurn_MatchesReference(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 0, 0, 4, 0x07, 5, 0x07, 1, 0x07, 0, 0x06, 3})          // parallel group, one denied
	f.Add([]byte{1, 0, 0, 5, 0x05, 3, 0x04, 1, 0x07, 2, 0x07, 0, 0x07, 1}) // exclusive barrier in between
	f.Add([]byte{3, 21, 0, 6, 0x07, 7, 0x07, 2, 0x07, 2, 0x07, 1, 0x07, 1, 0x07, 0})
	f.Add([]byte{3, 0, 25, 6, 0x07, 7, 0x07, 2, 0x07, 2, 0x07, 1, 0x07, 1, 0x07, 0})
	f.Add([]byte{0, 1, 0, 3, 0x07, 1, 0x07, 1, 0x07, 1}) // aborted at tick 0
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstReference(t, decodeScript(data))
	})
}

// FuzzTurn_ArbitraryInputs feeds any sequence of inputs, valid or not: the
// machine never panics, rejects what does not fit, and keeps its invariants.
func FuzzTurn_ArbitraryInputs(f *testing.F) {
	f.Add(uint8(3), uint8(2), []byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add(uint8(20), uint8(1), []byte{6, 6, 0, 0, 1, 1, 2, 2, 3, 3})
	f.Fuzz(func(t *testing.T, n, mp uint8, ops []byte) {
		tu, err := New(int(n%40), int(mp%6))
		if err != nil {
			if mp%6 != 0 {
				t.Fatal(err)
			}
			return
		}
		for len(ops) >= 2 {
			op, arg := ops[0], int(int8(ops[1]))
			ops = ops[2:]
			var err error
			switch op % 8 {
			case 0, 1:
				tu.Next()
			case 2:
				err = tu.Classified(arg, Mode(op>>3%3))
			case 3:
				err = tu.Prepared(arg, op&8 != 0)
			case 4:
				err = tu.DispatchDone(arg)
			case 5:
				err = tu.Committed(arg)
			case 6:
				tu.Abort()
			case 7:
				if op&8 != 0 {
					err = tu.Fail(nil)
				} else {
					err = tu.Fail(errInjected)
				}
			}
			if err != nil && !errors.Is(err, ErrUnexpectedInput) && !errors.Is(err, ErrFinished) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if tu.finished > tu.started || tu.started > len(tu.calls) || tu.inFlight < 0 || tu.inFlight > tu.max {
				t.Fatalf("invariant broken: finished=%d started=%d inFlight=%d max=%d", tu.finished, tu.started, tu.inFlight, tu.max)
			}
		}
	})
}
