// Package sched is the pure scheduling policy for one model turn (docs/contract.md#turns,
// R91–R99): which tool call to classify, start or commit next, how many
// dispatches may overlap, and what happens on abort or internal failure.
//
// It follows etcd-io/raft's split of a pure core driven by a shell. A [Turn] is a
// deterministic state machine with no goroutines, no clock, no I/O and no
// protoactor import. The shell (the runtime's turn driver) performs the work the
// machine asks for, on goroutines where the work runs user code, and feeds
// each outcome back as an input. Nothing here knows what a tool, a registry
// or a context is; calls are indices 0..n-1 in model order.
//
// # Parts of a call
//
// The shell splits each call's execution into the parts §9 talks about:
//
//   - classify: ExecutionMode for the call, live (R36, R92);
//   - prepare: record call-started, then entry, pre-execute, approval,
//     guards and the cancel check (R93). When the call is allowed, the
//     shell launches its dispatch (around hooks + body) before reporting;
//   - dispatch: the only part that overlaps other calls (R94);
//   - commit: post-execute and finish, record the result, collect contexts
//     and ConcludesTurn (R95);
//   - synthetic: a call-started + ABORTED_BEFORE_DISPATCH pair that bypasses
//     the registry (R97).
//
// # Driving a Turn
//
// [Turn.Next] hands out one [Action] at a time and records that it was
// handed out, so the shell calls it until it returns [Wait] or [Done]:
//
//	t, err := sched.New(len(calls), maxParallel)
//	...
//	for {
//		if ctx.Err() != nil {
//			t.Abort() // R97: checked before every action, idempotent
//		}
//		switch a := t.Next(); a.Kind {
//		case sched.Classify:
//			// ExecutionMode(call a.Call), then t.Classified(a.Call, mode)
//		case sched.Prepare:
//			// go: call-started event + prepare; if allowed launch the
//			// dispatch (which later reports t.DispatchDone(a.Call)),
//			// then report t.Prepared(a.Call, launched)
//		case sched.Commit:
//			// go: post-execute + finish, then t.Committed(a.Call)
//		case sched.Synthetic:
//			// record the synthetic pair now; nothing to report
//		case sched.Wait:
//			// block until one outcome arrives and feed it in
//		case sched.Done:
//			return t.Err() // non-nil after Fail (R98)
//		}
//	}
//
// A shell driven by messages does the same: feed each outcome as it arrives, then
// call Next until Wait or Done. Every Classify, Prepare and Commit must be
// answered by exactly one matching input, and every launched dispatch by one
// DispatchDone; inputs that do not fit the current state are rejected with
// an error wrapping [ErrUnexpectedInput] and change nothing.
//
// # The policy
//
// Groups (R92). When nothing from the previous group is in flight or
// uncommitted, the first unconsumed call is classified; it heads a group. An
// exclusive head is a group of one, a barrier: nothing else is classified or
// started until it is committed. A parallel head opens a group that may
// extend over all remaining calls: every later call is classified again,
// live, right before it would start (after the previous prepare finished and
// a slot is free). A non-parallel answer ends the group: nothing more starts,
// in-flight dispatches drain and commit, and then that call heads the next
// group — and, as the first unconsumed call, it is classified once more
// (R92.1 applied literally). Observers and post-execute hooks of the drained
// group may have changed the registry in between, so the second answer is the
// one that counts; it may well be parallel.
//
// Start and overlap (R93, R94). Prepare is strictly sequential in model
// order. At most maxParallel dispatches are in flight; a call whose prepare
// ended without a dispatch (denied, aborted, failed) never takes a slot, and
// Classify for a group member is only issued when a slot is free.
//
// Commit (R95). Whenever the machine is not busy with another step, it first
// commits the longest ready prefix in model order, one Commit at a time. A
// call is ready when its prepare ended without dispatch or its dispatch
// completed; a ready call behind an unready one (a fast later result, or a
// later denial) waits. Commits happen before any further classification, so
// registry changes made while committing are seen by later calls.
//
// One lane. Classify, Prepare and Commit form a single lane: at most one of
// them is outstanding at any time, matching the reference's single logical
// scheduler thread. Only dispatches overlap. A consequence worth knowing: a
// dispatch that completes while a later call's prepare waits (for example on
// approval) is committed once that prepare has finished.
//
// Abort (R97). [Turn.Abort] may arrive at any time and is idempotent. From
// then on nothing is classified or started (a call classified but not yet
// prepared counts as never started); outstanding steps and in-flight
// dispatches are awaited and every started call is committed in model order;
// then each never-started call gets [Synthetic], in model order. If the turn
// is aborted before its first start, every call is synthetic.
//
// Failure (R98). [Turn.Fail] records the first internal failure. Nothing more
// is classified, started or committed and no synthetic results are invented;
// once the outstanding step and every in-flight dispatch have reported, Next
// returns Done and [Turn.Err] returns the failure.
//
// What the machine does not track: arguments (R91), contexts (R96) and
// ConcludesTurn (R99) are per-result data the shell collects when it
// commits; they do not influence scheduling.
package sched
