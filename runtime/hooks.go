package runtime

import "fmt"

// Hooks are optional functions the registry calls at points of its calls',
// turns' and scopes' lives, in the shape of net/http/httptrace.ClientTrace:
// every field may be nil, and a registry built without hooks pays nothing
// for them. Pass them to New with WithHooks; several WithHooks are called
// in the order given. Hooks run synchronously on the goroutine where the
// point is reached, so they must be quick and must not wait for the call
// they observe; a panicking hook is contained and reported through the
// error handler and logger.
type Hooks struct {
	// Event receives every typed event (see Event and EventKind) at the
	// moment it happens: exactly one ExecutionStarted and one
	// ExecutionFinished per call (a turn's synthetic aborted calls
	// included), TurnStarted/TurnFinished per turn, RegistryChanged per
	// change. Unlike Subscribe it is never dropped and never reordered; it
	// is how other packages (actors publishes protobuf events) observe the
	// registry.
	Event func(Event)
}

// WithHooks adds h to the registry's hooks. A Hooks with no field set is
// ignored.
func WithHooks(h Hooks) Option {
	return optionFunc(func(c *config) error {
		if h.Event != nil {
			c.hooks = append(c.hooks, h)
		}
		return nil
	})
}

// installHooks turns the configured hooks into synchronous subscriptions:
// deliverTyped calls them in place, so every event path that serves
// Subscribe serves them too, at the same points.
func (r *Registry) installHooks() {
	if len(r.cfg.hooks) == 0 {
		return
	}
	subs := make([]*Subscription, 0, len(r.cfg.hooks))
	for _, h := range r.cfg.hooks {
		subs = append(subs, &Subscription{reg: r, fn: h.Event, sync: true})
	}
	r.subs.Store(&subs)
}

// deliverSync calls a hook's Event in place, containing a panic.
func (s *Subscription) deliverSync(e Event) {
	defer func() {
		if p := recover(); p != nil {
			s.reg.contain(fmt.Errorf("hooks.Event panicked on %v: %w", e.Kind, panicError(p)))
		}
	}()
	s.fn(e)
}
