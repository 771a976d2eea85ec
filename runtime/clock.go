package runtime

import (
	"context"
	"fmt"
	"reflect"
	"time"
)

// Clock is a source of time for a registry (WithClock): what Now reads is
// what every timestamp the registry reports carries (events, hook points,
// durations), and AfterFunc is where declared timeouts (R83: the
// registry's own, on by default, and TimeoutHook's) are armed. *simclock.Clock is one: virtual time for
// simulations.
type Clock interface {
	// Now reads the clock.
	Now() time.Time
	// AfterFunc calls f on a goroutine of its own once d has passed on the
	// clock. stop cancels f if it has not started, and reports whether it
	// did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// WithClock makes c the registry's clock: its event timestamps, the times
// its hooks read (CallInfo.Now and the like) and the deadlines of declared
// timeouts follow c instead of the wall clock. nil keeps the wall clock
// (the default, read with time.Now; a registry without WithClock pays
// nothing for the option). Under another clock a timeout's ctx carries no
// Deadline (a deadline is wall time to the standard library) and is
// cancelled when c reaches it: its Err is context.Canceled, not
// context.DeadlineExceeded, and context.Cause says "toolscope: tool
// timeout". The result is TOOL_TIMEOUT either way (R83). A c that holds a
// nil pointer (a *simclock.Clock declared and never made) is refused with
// ErrInvalidConfig: it is not the nil that means the wall clock.
func WithClock(c Clock) Option {
	return optionFunc(func(cfg *config) error {
		if err := nilClock("WithClock", c); err != nil {
			return err
		}
		cfg.clock = c
		return nil
	})
}

// nilClock refuses a clock that is not nil but holds a nil pointer, map,
// func or the like: every read of it would panic, inside some call.
func nilClock(option string, c any) error {
	if c == nil {
		return nil
	}
	switch v := reflect.ValueOf(c); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		if v.IsNil() {
			return fmt.Errorf("%w: %s(%T(nil)): a nil clock of a concrete type (for the wall clock pass nil itself)", ErrInvalidConfig, option, c)
		}
	}
	return nil
}

// withTimeout derives the ctx of a declared timeout of d: on the wall
// clock context.WithTimeoutCause; on another clock a ctx cancelled by the
// clock's AfterFunc with the same cause.
func (r *Registry) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c := r.cfg.clock
	if c == nil {
		return context.WithTimeoutCause(ctx, d, errToolTimeout)
	}
	tctx, cancel := context.WithCancelCause(ctx)
	stop := c.AfterFunc(d, func() { cancel(errToolTimeout) })
	return tctx, func() { stop(); cancel(context.Canceled) }
}
