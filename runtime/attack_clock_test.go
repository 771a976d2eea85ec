package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/runtime"
	"github.com/toolscope/toolscope/simclock"
)

// TestAttack_Clock_TypedNilRefused: a nil *simclock.Clock (declared, never
// made) given to WithTaskClock or WithClock is not the nil the options
// read as "the wall clock": it was taken as the clock, and the registry
// panicked at its first clock read — inside a call, perhaps on a worker.
// New now refuses it with ErrInvalidConfig naming the option.
func TestAttack_Clock_TypedNilRefused(t *testing.T) {
	var clk *simclock.Clock
	for _, c := range []struct {
		name string
		opt  runtime.Option
	}{
		{"WithTaskClock", runtime.WithTaskClock(clk)},
		{"WithClock", runtime.WithClock(clk)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := runtime.New(c.opt)
			if err == nil {
				r.Close(context.Background())
				t.Fatal("New accepted a nil *simclock.Clock")
			}
			if !errors.Is(err, runtime.ErrInvalidConfig) || !strings.Contains(err.Error(), c.name) {
				t.Fatalf("err %v: want ErrInvalidConfig naming %s", err, c.name)
			}
		})
	}
	// An untyped nil still means the wall clock.
	for _, opt := range []runtime.Option{runtime.WithTaskClock(nil), runtime.WithClock(nil)} {
		r, err := runtime.New(opt)
		if err != nil {
			t.Fatal(err)
		}
		r.Close(context.Background())
	}
}
