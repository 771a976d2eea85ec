package runtime

// TaskClock is a Clock that counts the work running on it: Acquire marks
// one more piece of work as running, Release one less, and a virtual clock
// moves only while nothing runs. *simclock.Clock is one (package simclock
// tells what counts as its tasks).
type TaskClock interface {
	Clock
	// Acquire takes one hold: the clock does not move until the matching
	// Release.
	Acquire()
	// Release gives up one hold taken by Acquire (or the caller's own, as
	// a task of the clock).
	Release()
}

// WithTaskClock makes c the registry's clock, as WithClock does, and
// makes the registry's own work on turns count as tasks of c, so that a
// virtual clock moves only when that work too is blocked on it:
//
//   - a turn's dispatch the registry starts on one of its workers is a
//     task from the moment the turn hands it over (an Acquire on the
//     worker's behalf, by the goroutine driving the turn) until the worker
//     is done with it and whatever driving of the turn it took on (a
//     Release); while the dispatch's body sleeps on c, that hold is the
//     body's to give up;
//   - ExecuteTurn's caller, once nothing is left for it to drive, gives
//     up its hold while it waits for the turn's last commit (a Release),
//     and the goroutine that makes that commit takes one for it before
//     waking it (an Acquire): the caller runs on with a hold, and the
//     clock cannot move between the commit and the caller's next step.
//
// So with a task clock every goroutine that calls ExecuteTurn must be a
// task of c (one holding a hold it may give up: a goroutine started by
// simclock's Go, or a tool body the registry runs). A single Execute runs
// on its caller's goroutine and needs nothing more.
//
// What this does not hand over keeps its hold while it waits, so the
// clock stands still rather than run ahead of it: a dispatch waiting for
// its scope's admission behind another call (N1, N2), for a host slot
// (WithMaxInFlight), or for room in a back-pressure subscription. A
// simulation whose calls wait like that stalls; keep such simulations to
// one turn per scope at a time (cmd/demo does), or model the waits as
// package load does.
//
// The last of WithClock and WithTaskClock given wins; nil keeps the wall
// clock, and a c holding a nil pointer is refused (ErrInvalidConfig). A registry without a task clock pays a type check of its clock
// twice per dispatch handed to a worker and twice per turn.
func WithTaskClock(c TaskClock) Option {
	return optionFunc(func(cfg *config) error {
		if c == nil {
			cfg.clock = nil
			return nil
		}
		if err := nilClock("WithTaskClock", c); err != nil {
			return err
		}
		cfg.clock = &taskClocked{c}
		return nil
	})
}

// taskClocked is the registry's clock as WithTaskClock gives it: c, marked
// so that the turn machinery hands c's holds over (a clock given with
// WithClock is only read, whatever its methods).
type taskClocked struct{ TaskClock }

// taskClock is the registry's task clock, nil when it has none: a compare
// of the clock's type, no field of its own.
func (r *Registry) taskClock() TaskClock {
	if t, ok := r.cfg.clock.(*taskClocked); ok {
		return t.TaskClock
	}
	return nil
}
