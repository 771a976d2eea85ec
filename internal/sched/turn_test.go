package sched

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// A transcript drives one Turn line by line, in the spirit of etcd raft's
// interaction tests:
//
//	next A B …          successive Next calls return A, B, … (e.g. Classify(0), Wait)
//	classified I par|excl
//	prepared I dispatch|ended
//	done I              DispatchDone(I)
//	committed I
//	abort
//	fail MSG
//	! <input>           the input must be rejected (ErrUnexpectedInput or ErrFinished)
//	inflight K          K dispatches are in flight
//	err MSG|nil         Err()
//
// Lines starting with # are comments.
func runTranscript(t *testing.T, n, maxParallel int, transcript string) {
	t.Helper()
	tu, err := New(n, maxParallel)
	if err != nil {
		t.Fatalf("New(%d, %d): %v", n, maxParallel, err)
	}
	for lineNo, raw := range strings.Split(transcript, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := "line " + strconv.Itoa(lineNo+1) + " `" + line + "`"
		f := strings.Fields(line)
		wantReject := false
		if f[0] == "!" {
			wantReject, f = true, f[1:]
		}
		var inErr error
		switch f[0] {
		case "next":
			for _, want := range f[1:] {
				if got := tu.Next().String(); got != want {
					t.Fatalf("%s: Next() = %s, want %s", where, got, want)
				}
			}
			continue
		case "inflight":
			if got := tu.inFlight; strconv.Itoa(got) != f[1] {
				t.Fatalf("%s: %d dispatches in flight", where, got)
			}
			continue
		case "err":
			got := "nil"
			if tu.Err() != nil {
				got = tu.Err().Error()
			}
			if got != f[1] {
				t.Fatalf("%s: Err() = %s", where, got)
			}
			continue
		case "classified":
			m := Mode(99)
			switch f[2] {
			case "par":
				m = Parallel
			case "excl":
				m = Exclusive
			}
			inErr = tu.Classified(atoi(t, f[1]), m)
		case "prepared":
			inErr = tu.Prepared(atoi(t, f[1]), f[2] == "dispatch")
		case "done":
			inErr = tu.DispatchDone(atoi(t, f[1]))
		case "committed":
			inErr = tu.Committed(atoi(t, f[1]))
		case "abort":
			tu.Abort()
		case "fail":
			var e error
			if len(f) > 1 {
				e = errors.New(f[1])
			}
			inErr = tu.Fail(e)
		default:
			t.Fatalf("%s: unknown command", where)
		}
		switch {
		case wantReject && inErr == nil:
			t.Fatalf("%s: input accepted, want rejection", where)
		case wantReject && !errors.Is(inErr, ErrUnexpectedInput) && !errors.Is(inErr, ErrFinished):
			t.Fatalf("%s: rejected with %v, want ErrUnexpectedInput or ErrFinished", where, inErr)
		case !wantReject && inErr != nil:
			t.Fatalf("%s: %v", where, inErr)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type transcriptCase struct {
	name   string
	n, max int
	script string
}

func runCases(t *testing.T, cases []transcriptCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runTranscript(t, tc.n, tc.max, tc.script) })
	}
}

func TestTurn_R91_NewRejectsMaxParallelBelowOne(t *testing.T) {
	for _, mp := range []int{0, -1, -10} {
		if _, err := New(3, mp); !errors.Is(err, ErrMaxParallel) {
			t.Errorf("New(3, %d) err = %v, want ErrMaxParallel", mp, err)
		}
	}
	if _, err := New(-1, 1); !errors.Is(err, ErrCallCount) {
		t.Errorf("New(-1, 1) err = %v, want ErrCallCount", err)
	}
	for _, n := range []int{0, 1, inlineCalls, inlineCalls + 1, 100} {
		tu, err := New(n, DefaultMaxParallel)
		if err != nil || len(tu.calls) != n {
			t.Errorf("New(%d, default) = %v, %v", n, tu, err)
		}
	}
}

func TestTurn_R91_EmptyTurnIsDone(t *testing.T) {
	runTranscript(t, 0, 1, `
		next Done Done
		err nil
	`)
}

func TestTurn_R91_MaxParallelOneIsSerial(t *testing.T) {
	runTranscript(t, 3, 1, `
		next Classify(0)
		classified 0 par
		next Prepare(0) Wait
		prepared 0 dispatch
		# the only slot is taken: no live classification of call 1 yet
		next Wait
		done 0
		next Commit(0) Wait
		committed 0
		next Classify(1)
		classified 1 par
		next Prepare(1)
		prepared 1 dispatch
		next Wait
		done 1
		next Commit(1)
		committed 1
		next Classify(2)
		classified 2 par
		next Prepare(2)
		prepared 2 dispatch
		done 2
		next Commit(2)
		committed 2
		next Done
	`)
}

func TestTurn_R92_Groups(t *testing.T) {
	runCases(t, []transcriptCase{
		{"ExclusiveHeadIsBarrier", 3, 4, `
			next Classify(0)
			classified 0 excl
			next Prepare(0)
			prepared 0 dispatch
			# a group of one: nothing is classified while it runs
			next Wait Wait
			done 0
			next Commit(0) Wait
			committed 0
			next Classify(1)
			classified 1 par
			next Prepare(1)
			prepared 1 dispatch
			next Classify(2)
			classified 2 par
			next Prepare(2)
			prepared 2 dispatch
			inflight 2
			done 2
			done 1
			next Commit(1)
			committed 1
			next Commit(2)
			committed 2
			next Done
		`},
		{"ExclusiveBarrierAfterParallelGroup", 3, 4, `
			next Classify(0)
			classified 0 par
			next Prepare(0)
			prepared 0 dispatch
			# call 1 answers exclusive live: the group ends while 0 is in flight
			next Classify(1)
			classified 1 excl
			next Wait
			done 0
			next Commit(0)
			committed 0
			# 1 heads the next group and is classified again (R92.1)
			next Classify(1)
			classified 1 excl
			next Prepare(1)
			prepared 1 dispatch
			next Wait
			done 1
			next Commit(1)
			committed 1
			next Classify(2)
			classified 2 excl
			next Prepare(2)
			prepared 2 ended
			next Commit(2)
			committed 2
			next Done
		`},
	})
}

func TestTurn_R92_NonParallelReclassEndsGroup(t *testing.T) {
	runTranscript(t, 4, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		next Classify(1)
		classified 1 par
		next Prepare(1)
		prepared 1 dispatch
		next Classify(2)
		classified 2 excl
		# group ended: nothing more starts, in-flight calls drain
		next Wait Wait
		inflight 2
		done 1
		next Wait
		done 0
		next Commit(0)
		committed 0
		next Commit(1)
		committed 1
		# 2 heads the next group, as an exclusive call (a barrier for 3)
		next Classify(2)
		classified 2 excl
		next Prepare(2)
		prepared 2 dispatch
		next Wait
		done 2
		next Commit(2)
		committed 2
		next Classify(3)
		classified 3 par
		next Prepare(3)
		prepared 3 dispatch
		next Wait
		done 3
		next Commit(3)
		committed 3
		next Done
	`)
}

func TestTurn_R92_HeadClassifiedAgainMayOpenGroup(t *testing.T) {
	// The answer that ended the group is not reused: after the drain and
	// the commits (which may change the registry) the head is asked again.
	runTranscript(t, 3, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		next Classify(1)
		classified 1 excl
		next Wait
		done 0
		next Commit(0)
		committed 0
		next Classify(1)
		classified 1 par
		next Prepare(1)
		prepared 1 dispatch
		# 1 now heads a parallel group: 2 is classified while 1 runs
		next Classify(2)
		classified 2 par
		next Prepare(2)
		prepared 2 dispatch
		inflight 2
		done 1
		done 2
		next Commit(1)
		committed 1
		next Commit(2)
		committed 2
		next Done
	`)
}

func TestTurn_R93_PrepareIsSequential(t *testing.T) {
	runTranscript(t, 3, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		# prepare of 0 outstanding: nothing else is classified or started
		next Wait Wait
		! prepared 1 dispatch
		prepared 0 dispatch
		next Classify(1)
		classified 1 par
		next Prepare(1)
		prepared 1 ended
		# 1 ended during prepare but waits for 0 (R95)
		next Classify(2)
		classified 2 par
		next Prepare(2)
		prepared 2 dispatch
		next Wait
		done 0
		next Commit(0)
		committed 0
		next Commit(1)
		committed 1
		next Wait
		done 2
		next Commit(2)
		committed 2
		next Done
	`)
}

func TestTurn_R94_DeniedTakesNoSlot(t *testing.T) {
	runTranscript(t, 4, 2, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		next Classify(1)
		classified 1 par
		next Prepare(1)
		prepared 1 ended
		inflight 1
		# call 1 was denied: a slot is still free for call 2
		next Classify(2)
		classified 2 par
		next Prepare(2)
		prepared 2 dispatch
		inflight 2
		# both slots taken now
		next Wait
		done 2
		# a slot freed (commit of 2 must still wait for 0): start 3
		next Classify(3)
		classified 3 par
		next Prepare(3)
		prepared 3 dispatch
		next Wait
		done 0
		next Commit(0)
		committed 0
		next Commit(1)
		committed 1
		next Commit(2)
		committed 2
		next Wait
		done 3
		next Commit(3)
		committed 3
		next Done
	`)
}

func TestTurn_R95_SlowEarlierHoldsBackFastLater(t *testing.T) {
	runTranscript(t, 3, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		next Classify(1)
		classified 1 par
		next Prepare(1)
		prepared 1 dispatch
		next Classify(2)
		classified 2 par
		next Prepare(2)
		prepared 2 dispatch
		done 2
		done 1
		# 1 and 2 are ready, 0 is slow: nothing commits
		next Wait
		done 0
		next Commit(0) Wait
		committed 0
		next Commit(1)
		committed 1
		next Commit(2)
		committed 2
		next Done
	`)
}

func TestTurn_R95_CommitPrecedesReclassification(t *testing.T) {
	runTranscript(t, 3, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		next Classify(1)
		classified 1 par
		next Prepare(1)
		done 0
		prepared 1 dispatch
		# after the start of 1, the ready prefix (0) commits before 2 is classified
		next Commit(0) Wait
		committed 0
		next Classify(2)
		classified 2 par
		next Prepare(2)
		prepared 2 dispatch
		done 1
		done 2
		next Commit(1)
		committed 1
		next Commit(2)
		committed 2
		next Done
	`)
}

func TestTurn_R92_LiveClassificationImmediatelyPrecedesStart(t *testing.T) {
	// A completion reported while a member's classification is outstanding
	// does not slip a commit between the classification and the start.
	runTranscript(t, 2, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		next Classify(1)
		done 0
		next Wait
		classified 1 par
		next Prepare(1)
		prepared 1 dispatch
		next Commit(0)
		committed 0
		next Wait
		done 1
		next Commit(1)
		committed 1
		next Done
	`)
}

func TestTurn_R97_AbortBeforeTurn(t *testing.T) {
	runTranscript(t, 3, 10, `
		abort
		next Synthetic(0) Synthetic(1) Synthetic(2) Done Done
		err nil
	`)
}

func TestTurn_R97_AbortDuringGroup(t *testing.T) {
	// 0, 1 run in a parallel group; 2 is denied; abort lands after the
	// start of 2. Started calls drain and commit in order; 3 (the rest of
	// the group) and 4 (which would have been a barrier) become synthetic.
	runTranscript(t, 5, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		next Classify(1)
		classified 1 par
		next Prepare(1)
		prepared 1 dispatch
		next Classify(2)
		classified 2 par
		next Prepare(2)
		prepared 2 ended
		abort
		next Wait
		done 1
		next Wait
		done 0
		next Commit(0)
		abort
		committed 0
		next Commit(1)
		committed 1
		next Commit(2)
		committed 2
		next Synthetic(3) Synthetic(4) Done
		err nil
	`)
}

func TestTurn_R97_AbortBetweenGroups(t *testing.T) {
	runTranscript(t, 3, 10, `
		next Classify(0)
		classified 0 excl
		next Prepare(0)
		prepared 0 dispatch
		done 0
		next Commit(0)
		committed 0
		abort
		next Synthetic(1) Synthetic(2) Done
	`)
}

func TestTurn_R97_AbortWhileClassifyingCountsAsNeverStarted(t *testing.T) {
	runTranscript(t, 2, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		next Classify(1)
		abort
		next Wait
		classified 1 par
		# classified but not started: no Prepare
		next Wait
		done 0
		next Commit(0)
		committed 0
		next Synthetic(1) Done
	`)
}

func TestTurn_R97_AbortDuringPrepareStillDispatches(t *testing.T) {
	// The call started before the abort; its prepare may still launch a
	// dispatch (the registry decides), which is drained and committed.
	runTranscript(t, 2, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		abort
		prepared 0 dispatch
		next Wait
		done 0
		next Commit(0)
		committed 0
		next Synthetic(1) Done
	`)
}

func TestTurn_R97_AbortAfterDoneIsNoOp(t *testing.T) {
	runTranscript(t, 1, 10, `
		next Classify(0)
		classified 0 excl
		next Prepare(0)
		prepared 0 ended
		next Commit(0)
		committed 0
		next Done
		abort
		next Done
	`)
	tu, _ := New(0, 1)
	tu.Next()
	tu.Abort()
	if tu.aborted {
		t.Error("Abort after Done was recorded")
	}
}

func TestTurn_R98_FailureDrainsNoSynthetic(t *testing.T) {
	runTranscript(t, 4, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		next Classify(1)
		classified 1 par
		next Prepare(1)
		prepared 1 ended
		next Classify(2)
		classified 2 par
		next Prepare(2)
		fail boom
		# the outstanding prepare still reports and its dispatch is awaited
		next Wait
		prepared 2 dispatch
		next Wait
		done 0
		# no commits after a failure, and no synthetic result for 3
		next Wait
		done 2
		next Done Done
		err boom
		! done 2
		! fail again
	`)
}

func TestTurn_R98_FirstFailureWinsAndOutstandingCommitFinishes(t *testing.T) {
	runTranscript(t, 3, 10, `
		next Classify(0)
		classified 0 par
		next Prepare(0)
		prepared 0 dispatch
		done 0
		next Commit(0)
		fail first
		fail second
		abort
		next Wait
		committed 0
		next Done
		err first
	`)
}

func TestTurn_R98_FailureBeforeTurn(t *testing.T) {
	runTranscript(t, 3, 10, `
		fail boom
		next Done
		err boom
	`)
}

func TestTurn_UnexpectedInputsAreRejectedAndChangeNothing(t *testing.T) {
	runTranscript(t, 3, 10, `
		! classified 0 par
		! prepared 0 dispatch
		! done 0
		! committed 0
		! fail
		next Classify(0)
		! classified 1 par
		! classified -1 par
		! classified 3 par
		! classified 0 bogus
		! prepared 0 dispatch
		! committed 0
		classified 0 par
		! classified 0 par
		next Prepare(0)
		! prepared 1 dispatch
		! done 0
		prepared 0 dispatch
		! prepared 0 dispatch
		! committed 0
		! done 1
		! done 99
		next Classify(1)
		classified 1 excl
		done 0
		! done 0
		next Commit(0)
		! committed 1
		committed 0
		! committed 0
		next Classify(1)
		classified 1 excl
		next Prepare(1)
		prepared 1 ended
		next Commit(1)
		committed 1
		next Classify(2)
		classified 2 excl
		next Prepare(2)
		prepared 2 ended
		next Commit(2)
		committed 2
		next Done
		! classified 2 par
		! prepared 2 ended
		! done 2
		! committed 2
		! fail late
		err nil
	`)
}

func TestAction_String(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Action{Kind: Wait, Call: -1}.String(), "Wait"},
		{Action{Kind: Commit, Call: 3}.String(), "Commit(3)"},
		{ActionKind(42).String(), "ActionKind(42)"},
		{Exclusive.String(), "exclusive"},
		{Parallel.String(), "parallel"},
		{Mode(7).String(), "Mode(7)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
