package sched

import "errors"

var (
	// ErrMaxParallel is returned by New when maxParallel is below 1 (R91).
	ErrMaxParallel = errors.New("sched: MaxParallel must be at least 1")

	// ErrCallCount is returned by New for a negative number of calls.
	ErrCallCount = errors.New("sched: negative call count")

	// ErrUnexpectedInput is wrapped by every input rejected because it does
	// not match an outstanding action (wrong call, wrong kind, out of range,
	// invalid mode, nil failure). A rejected input changes nothing.
	ErrUnexpectedInput = errors.New("sched: unexpected input")

	// ErrFinished is returned for inputs after Next has returned Done
	// (Abort excepted: it is then a no-op).
	ErrFinished = errors.New("sched: turn already finished")
)
