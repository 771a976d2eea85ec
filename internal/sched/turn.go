package sched

import "fmt"

// DefaultMaxParallel is the MaxParallel the shell uses when none is
// configured (R91).
const DefaultMaxParallel = 10

// callState is where one call is in its life. Calls move forward only.
type callState uint8

const (
	csPending    callState = iota // never started
	csPreparing                   // Prepare handed out, Prepared not yet reported
	csInFlight                    // dispatch launched, DispatchDone not yet reported
	csReady                       // prepare ended without dispatch, or dispatch done
	csCommitting                  // Commit handed out, Committed not yet reported
	csCommitted                   // result recorded by the registry path
	csSynthetic                   // synthetic pair handed out (R97)
)

var stateNames = [...]string{"pending", "preparing", "in flight", "ready", "committing", "committed", "synthetic"}

func (s callState) String() string { return stateNames[s] }

// lane is the single outstanding non-dispatch step, if any.
type lane uint8

const (
	laneIdle lane = iota
	laneClassify
	lanePrepare
	laneCommit
)

// inlineCalls is how many call states a Turn holds without a second
// allocation; model turns rarely carry more calls than this.
const inlineCalls = 16

// Turn is the scheduling state of one model turn of n calls. It is not safe
// for concurrent use; the shell owns it (one actor, or one goroutine). A Turn
// must not be copied after first use.
//
// Inputs are the methods Classified, Prepared, DispatchDone, Committed,
// Abort and Fail; outputs come from Next. See the package documentation for
// the loop.
type Turn struct {
	max   int
	calls []callState // indexed by model order; may alias buf

	// started: calls[:started] have been handed to Prepare (or synthesized).
	// Starts follow model order (R93), so this is a prefix.
	started int
	// finished: calls[:finished] are committed or synthetic. Commits and
	// synthetic results follow model order (R95, R97), so this is a prefix
	// too, and finished <= started.
	finished int
	// inFlight counts dispatches launched and not yet done (R94).
	inFlight int

	// lane and laneCall: the one outstanding Classify, Prepare or Commit.
	lane     lane
	laneCall int
	// laneHead: the outstanding Classify is for a group head (R92.1), not
	// for a member of an open parallel group (R92.2).
	laneHead bool

	// armed: calls[started] was classified for starting and Prepare must be
	// handed out before anything else, so nothing (not even a commit) slips
	// between the live classification and the start (R92.2).
	armed bool
	// open: a parallel group is running and may extend. While false, the
	// next start heads a new group and waits until the previous one has
	// drained and committed (R92.3).
	open bool

	aborted bool
	err     error // first internal failure (R98); non-nil means failed
	done    bool

	buf [inlineCalls]callState
}

// New returns the state for a turn of n calls in model order, with at most
// maxParallel dispatches in flight. maxParallel below 1 is a configuration
// error (R91); n may be 0, in which case Next returns Done at once.
func New(n, maxParallel int) (*Turn, error) {
	if maxParallel < 1 {
		return nil, fmt.Errorf("%w (got %d)", ErrMaxParallel, maxParallel)
	}
	if n < 0 {
		return nil, fmt.Errorf("%w (got %d)", ErrCallCount, n)
	}
	t := &Turn{max: maxParallel}
	if n <= inlineCalls {
		t.calls = t.buf[:n]
	} else {
		t.calls = make([]callState, n)
	}
	return t, nil
}

// Err returns the first internal failure passed to Fail, or nil. After Next
// has returned Done, a nil Err means the turn ran to completion (possibly
// aborted, with synthetic results).
func (t *Turn) Err() error { return t.err }

var (
	actionWait = Action{Kind: Wait, Call: -1}
	actionDone = Action{Kind: Done, Call: -1}
)

// Next returns the next action and records it as handed out: calling Next
// again returns the following action (or Wait), never the same one twice.
// The shell calls Next until it returns Wait or Done. After Done, Next keeps
// returning Done.
//
// Order of preference when no step is outstanding:
//  1. Prepare for a call just classified for starting, unless aborted or
//     failed;
//  2. Commit for the first uncommitted call if it is ready (not when failed);
//  3. when aborted or failed: Wait for in-flight dispatches, then Synthetic
//     for each never-started call (abort only), then Done;
//  4. Classify for the next call: as a member of an open parallel group when
//     a slot is free, or as the head of a new group once everything started
//     has been committed;
//  5. Done when every call is committed.
func (t *Turn) Next() Action {
	if t.done {
		return actionDone
	}
	if t.lane != laneIdle {
		return actionWait
	}
	stopping := t.aborted || t.err != nil
	if t.armed {
		t.armed = false
		if !stopping {
			i := t.started
			t.started++
			t.calls[i] = csPreparing
			t.lane, t.laneCall = lanePrepare, i
			return Action{Kind: Prepare, Call: i}
		}
	}
	if t.err == nil && t.finished < t.started && t.calls[t.finished] == csReady {
		i := t.finished
		t.calls[i] = csCommitting
		t.lane, t.laneCall = laneCommit, i
		return Action{Kind: Commit, Call: i}
	}
	if stopping {
		if t.inFlight > 0 {
			return actionWait
		}
		if t.err == nil && t.finished < len(t.calls) {
			// Aborted and drained: everything started is committed, so
			// finished == started and the rest never started (R97).
			i := t.finished
			t.calls[i] = csSynthetic
			t.finished++
			t.started = t.finished
			return Action{Kind: Synthetic, Call: i}
		}
		t.done = true
		return actionDone
	}
	if t.started == len(t.calls) {
		if t.finished < len(t.calls) {
			return actionWait
		}
		t.done = true
		return actionDone
	}
	if t.open {
		if t.inFlight >= t.max {
			return actionWait
		}
		t.lane, t.laneCall, t.laneHead = laneClassify, t.started, false
		return Action{Kind: Classify, Call: t.started}
	}
	if t.finished < t.started {
		return actionWait // previous group still draining or committing
	}
	t.lane, t.laneCall, t.laneHead = laneClassify, t.started, true
	return Action{Kind: Classify, Call: t.started}
}

// Classified reports the live ExecutionMode answer for the call of the
// outstanding Classify (R92). A parallel answer arms the call: the next
// action is its Prepare. A head answering exclusive is armed too, as a group
// of one. A member answering anything but parallel ends the open group; it
// will head the next group and be classified again then.
func (t *Turn) Classified(call int, mode Mode) error {
	if err := t.expect(laneClassify, call, "Classified"); err != nil {
		return err
	}
	if mode != Exclusive && mode != Parallel {
		return fmt.Errorf("%w: Classified(%d, %v): invalid mode", ErrUnexpectedInput, call, mode)
	}
	t.lane = laneIdle
	switch {
	case t.laneHead:
		t.open = mode == Parallel
		t.armed = true
	case mode == Parallel:
		t.armed = true
	default:
		t.open = false
	}
	return nil
}

// Prepared reports that the prepare part of the outstanding Prepare ended.
// dispatched is true when the call was allowed and its dispatch has been
// launched; it then occupies a slot until DispatchDone. false means the call
// ended during prepare (denied, aborted, failed): it is ready to commit and
// never takes a slot (R94).
func (t *Turn) Prepared(call int, dispatched bool) error {
	if err := t.expect(lanePrepare, call, "Prepared"); err != nil {
		return err
	}
	t.lane = laneIdle
	if dispatched {
		t.calls[call] = csInFlight
		t.inFlight++
	} else {
		t.calls[call] = csReady
	}
	return nil
}

// DispatchDone reports that the call's dispatch (around hooks and body)
// completed, whatever its outcome; the call becomes ready to commit.
func (t *Turn) DispatchDone(call int) error {
	if t.done {
		return ErrFinished
	}
	if call < 0 || call >= len(t.calls) || t.calls[call] != csInFlight {
		return t.unexpected("DispatchDone", call)
	}
	t.calls[call] = csReady
	t.inFlight--
	return nil
}

// Committed reports that the outstanding Commit finished: post-execute and
// finish ran and the result is recorded.
func (t *Turn) Committed(call int) error {
	if err := t.expect(laneCommit, call, "Committed"); err != nil {
		return err
	}
	t.lane = laneIdle
	t.calls[call] = csCommitted
	t.finished++
	return nil
}

// Abort reports that the step ctx is cancelled (R97). The shell checks the
// ctx before each Next (which covers "after every start and every
// completion" and "before the group started"). Abort is idempotent and may
// arrive at any time; after Done it is a no-op.
func (t *Turn) Abort() {
	if !t.done {
		t.aborted = true
	}
}

// Fail reports an internal scheduler failure (R98), such as the shell being
// unable to run a step; tool outcomes are never failures. Only the first
// failure is kept. From then on nothing is classified, started or committed;
// Next returns Done once the outstanding step and all in-flight dispatches
// have reported, and Err returns the failure. err must be non-nil.
func (t *Turn) Fail(err error) error {
	if t.done {
		return ErrFinished
	}
	if err == nil {
		return fmt.Errorf("%w: Fail(nil)", ErrUnexpectedInput)
	}
	if t.err == nil {
		t.err = err
	}
	return nil
}

// expect checks that the outstanding step is kind for call.
func (t *Turn) expect(kind lane, call int, input string) error {
	if t.done {
		return ErrFinished
	}
	if t.lane != kind || t.laneCall != call {
		return t.unexpected(input, call)
	}
	return nil
}

func (t *Turn) unexpected(input string, call int) error {
	if call < 0 || call >= len(t.calls) {
		return fmt.Errorf("%w: %s(%d): call out of range [0,%d)", ErrUnexpectedInput, input, call, len(t.calls))
	}
	return fmt.Errorf("%w: %s(%d): call is %v, outstanding step is %s", ErrUnexpectedInput, input, call, t.calls[call], t.outstanding())
}

func (t *Turn) outstanding() string {
	switch t.lane {
	case laneClassify:
		return Action{Kind: Classify, Call: t.laneCall}.String()
	case lanePrepare:
		return Action{Kind: Prepare, Call: t.laneCall}.String()
	case laneCommit:
		return Action{Kind: Commit, Call: t.laneCall}.String()
	}
	return "none"
}
