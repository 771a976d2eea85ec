package sched

import "strconv"

// Mode is a call's execution mode as reported by ExecutionMode (R36).
// The zero value is Exclusive, the conservative answer.
type Mode uint8

const (
	// Exclusive calls run alone: a group of one, a barrier (R92).
	Exclusive Mode = iota
	// Parallel calls may share a group with other parallel calls (R92).
	Parallel
)

// String returns "exclusive", "parallel" or "Mode(n)".
func (m Mode) String() string {
	switch m {
	case Exclusive:
		return "exclusive"
	case Parallel:
		return "parallel"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ActionKind says what the shell must do next.
type ActionKind uint8

const (
	// Wait: nothing can happen until an outstanding outcome is reported.
	Wait ActionKind = iota
	// Classify: call ExecutionMode for the call, live, and report it with
	// Turn.Classified.
	Classify
	// Prepare: record the call-started event, run the prepare part and, if
	// the call is allowed, launch its dispatch; then report Turn.Prepared.
	// The launched dispatch later reports Turn.DispatchDone.
	Prepare
	// Commit: run post-execute (post results only) and finish, record the
	// result, collect contexts and ConcludesTurn; report Turn.Committed.
	Commit
	// Synthetic: record a synthetic call-started + ABORTED_BEFORE_DISPATCH
	// pair, bypassing the registry (R97). Nothing is reported back.
	Synthetic
	// Done: the turn is over; Turn.Err tells whether it failed (R98).
	Done
)

var kindNames = [...]string{"Wait", "Classify", "Prepare", "Commit", "Synthetic", "Done"}

// String returns the kind's name.
func (k ActionKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "ActionKind(" + strconv.Itoa(int(k)) + ")"
}

// Action is one step for the shell. Call is the call's index in model order
// for Classify, Prepare, Commit and Synthetic, and -1 for Wait and Done.
type Action struct {
	Kind ActionKind
	Call int
}

// String renders the action as "Kind(call)", or just "Kind" when it has no call.
func (a Action) String() string {
	if a.Call < 0 {
		return a.Kind.String()
	}
	return a.Kind.String() + "(" + strconv.Itoa(a.Call) + ")"
}
