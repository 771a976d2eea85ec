package admit

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestTranscripts runs the admission transcripts in testdata/*.txt: a
// scope's gate, its admission line's queue and the registry's nested policy
// (Nest), driven one step at a time on one goroutine the way the runtime
// drives them, every step's outcome written down. Regenerate the expected
// output with `go test ./internal/admit -run TestTranscripts -rewrite`
// (then read the diff: it is the spec).
//
// Commands (ids are names; a scope is created on first use):
//
//	call id=A scope=s mode=excl|par [parent=B]  A asks for admission in s; parent
//	                                            is the call it runs within (its host)
//	arrive id=A scope=s mode=excl|par           A (not nested) tries the gate's fast path
//	                                            only: admitted, or issued a ticket and
//	                                            on its way to the line, not yet posted
//	post id=A                                   A, on its way, posts to the line
//	end id=A                                    A's dispatch ends: it releases what it holds
//	cancel id=A                                 A's ctx ends while it waits
//	dispose scope=s                             s is torn down: its admission line retires
//	                                            (keeps its line, stops once it is empty)
//	drain scope=s                               s's admission line stops for good: everyone
//	                                            still in line is admitted
//	state                                       every scope and every call
//
// A call that is not nested (no ancestor holds an admission) takes the
// gate's fast path or waits in the scope's queue, as Registry.acquire does;
// a nested one goes to Nest.Enter. AdmitWaiting effects are applied at once: the queue
// admits whoever fits.
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newHarness()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type tCall struct {
	id, scope, parent string
	parallel          bool
	// holding is the scope whose admission the call holds ("": none).
	holding    string
	excl, slot bool
	state      string // running, queued, in line, waiting, left, failed, ended, unadmitted
	entry      *Waiter
}

type tScope struct {
	name    string
	gate    Gate
	inside  Inside[string]
	queue   Queue
	entries map[*Waiter]string // queue entries → calls
	// retiring: torn down, the queue keeps its order; stopped: nobody
	// keeps a line any more (a post fails).
	retiring, stopped bool
}

type harness struct {
	calls  map[string]*tCall
	order  []string
	scopes map[string]*tScope
	nest   Nest[string, string, *harness]
	out    strings.Builder
	// arriving is the call of the arrive command being run.
	arriving string
}

func newHarness() *harness {
	h := &harness{calls: map[string]*tCall{}, scopes: map[string]*tScope{}}
	h.nest.World = h
	return h
}

// World.

func (h *harness) Host(c string) string {
	if x := h.calls[c]; x != nil {
		return x.parent
	}
	return ""
}

func (h *harness) Holding(c string) (string, bool) {
	if x := h.calls[c]; x != nil {
		return x.holding, x.excl
	}
	return "", false
}

func (h *harness) Hold(c, s string, excl, slot bool) {
	x := h.calls[c]
	x.holding, x.excl, x.slot, x.state = s, excl, slot, "running"
}

func (h *harness) Scope(s string) (*Gate, *Inside[string]) {
	sc := h.scope(s)
	return &sc.gate, &sc.inside
}

func (h *harness) scope(s string) *tScope {
	sc := h.scopes[s]
	if sc == nil {
		sc = &tScope{name: s, entries: map[*Waiter]string{}}
		sc.queue.G = &sc.gate
		h.scopes[s] = sc
	}
	return sc
}

func (h *harness) printf(format string, args ...any) { fmt.Fprintf(&h.out, format+"\n", args...) }

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	h.out.Reset()
	arg := func(key string) string {
		var v string
		if d.HasArg(key) {
			d.ScanArgs(t, key, &v)
		}
		return v
	}
	call := func() *tCall {
		x := h.calls[arg("id")]
		if x == nil {
			d.Fatalf(t, "no call %q", arg("id"))
		}
		return x
	}
	switch d.Cmd {
	case "call":
		id := arg("id")
		if h.calls[id] != nil {
			d.Fatalf(t, "call %q exists", id)
		}
		mode := arg("mode")
		if mode != "excl" && mode != "par" {
			d.Fatalf(t, "mode must be excl or par, got %q", mode)
		}
		x := &tCall{id: id, scope: arg("scope"), parent: arg("parent"), parallel: mode == "par"}
		if x.parent != "" && h.calls[x.parent] == nil {
			d.Fatalf(t, "no parent call %q", x.parent)
		}
		h.calls[id] = x
		h.order = append(h.order, id)
		h.acquire(x)
	case "arrive":
		id := arg("id")
		if h.calls[id] != nil {
			d.Fatalf(t, "call %q exists", id)
		}
		mode := arg("mode")
		if mode != "excl" && mode != "par" {
			d.Fatalf(t, "mode must be excl or par, got %q", mode)
		}
		x := &tCall{id: id, scope: arg("scope"), parallel: mode == "par"}
		h.calls[id] = x
		h.order = append(h.order, id)
		h.arriving = id
		h.arrive(x)
		h.arriving = ""
	case "post":
		x := call()
		if x.state != "on its way" {
			d.Fatalf(t, "%s is %s, not on its way", x.id, x.state)
		}
		x.state = "queued"
		h.printf("%s: posts ticket %d", x.id, x.entry.Ticket)
		h.post(h.scope(x.scope), x)
	case "end":
		h.end(call())
	case "cancel":
		h.cancel(call())
	case "dispose":
		sc := h.scope(arg("scope"))
		sc.retiring = true
		h.maybeStop(sc)
		h.printf("%s retiring (stopped: %v)", sc.name, sc.stopped)
	case "drain":
		sc := h.scope(arg("scope"))
		sc.stopped = true
		for _, w := range sc.queue.Drain() {
			h.admittedByQueue(sc, w)
		}
	case "state":
		h.state()
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	if d.Cmd != "state" {
		h.state()
	}
	return h.out.String()
}

// acquire is Registry.acquire.
func (h *harness) acquire(x *tCall) {
	sc := h.scope(x.scope)
	if x.parent == "" || !h.nest.Nested(x.id) {
		if h.arrive(x) {
			x.state = "queued"
			h.printf("%s: queued", x.id)
			h.post(sc, x)
		}
		return
	}
	d, fx := h.nest.Enter(x.id, sc.name, x.parallel)
	switch d {
	case Admitted:
		h.printf("%s: admitted (%s)", x.id, map[bool]string{true: "slot", false: "inside"}[h.calls[x.id].slot])
	case WouldDeadlock:
		x.state = "failed"
		h.printf("%s: WOULD_DEADLOCK", x.id)
	case Wait:
		x.state = "waiting"
		h.printf("%s: waits (nested)", x.id)
	case Line:
		x.entry = &Waiter{Parallel: x.parallel}
		if h.nest.Line(x.entry) {
			h.printf("%s: admitted (slot)", x.id)
			break
		}
		x.state = "in line"
		h.printf("%s: in line", x.id)
		h.apply(fx)
		if sc.stopped {
			h.apply(h.nest.Promote(x.id))
			return
		}
		h.post(sc, x)
		return
	}
	h.apply(fx)
}

// arrive is the fast path of Registry.acquire: admitted, or issued a ticket
// (true: the call is on its way to the line, its entry made).
func (h *harness) arrive(x *tCall) bool {
	sc := h.scope(x.scope)
	tk, ok := sc.gate.TryAcquire(x.parallel)
	if ok {
		h.Hold(x.id, sc.name, !x.parallel, true)
		h.printf("%s: admitted (slot)", x.id)
		return false
	}
	if sc.stopped {
		// admitGone: the scope was torn down before the call got in
		// line; it runs unadmitted (the runtime retries on the key's
		// live scope, whose gate is another scope here).
		x.state = "unadmitted"
		h.printf("%s: unadmitted (the scope is gone)", x.id)
		return false
	}
	x.entry = &Waiter{Parallel: x.parallel, Ticket: tk}
	x.state = "on its way"
	if h.printing(x) {
		h.printf("%s: ticket %d, on its way to the line", x.id, tk)
	}
	return true
}

// printing: arrive says so only for the arrive command (call's output is
// as it was before tickets).
func (h *harness) printing(x *tCall) bool { return h.arriving == x.id }

// post hands x's entry to the scope's queue (the admission line's Admit).
func (h *harness) post(sc *tScope, x *tCall) {
	sc.entries[x.entry] = x.id
	for _, w := range sc.queue.Admit(x.entry) {
		h.admittedByQueue(sc, w)
	}
}

func (h *harness) admittedByQueue(sc *tScope, w *Waiter) {
	id := sc.entries[w]
	delete(sc.entries, w)
	x := h.calls[id]
	if x.state == "in line" {
		h.nest.AdmittedInLine(id)
	} else {
		h.Hold(id, sc.name, !x.parallel, true)
	}
	h.printf("%s: queue admits %s", sc.name, id)
}

// apply is Registry.apply: wake, then admit the waiting (here the queue admits
// at once).
func (h *harness) apply(fx Effects[string, string]) {
	wake := slices.Clone(fx.Wake)
	waiting := slices.Clone(fx.AdmitWaiting)
	for _, c := range wake {
		h.printf("wake %s", c)
	}
	for _, s := range waiting {
		h.admitWaiting(h.scope(s))
	}
}

func (h *harness) admitWaiting(sc *tScope) {
	for _, w := range sc.queue.AdmitWaiting() {
		h.admittedByQueue(sc, w)
	}
	h.maybeStop(sc)
}

func (h *harness) maybeStop(sc *tScope) {
	if sc.retiring && !sc.stopped && !sc.gate.Load().Queued() {
		sc.stopped = true
	}
}

// end is Registry.releaseAdmission.
func (h *harness) end(x *tCall) {
	if x.state != "running" && x.state != "unadmitted" {
		h.printf("%s is %s: nothing to end", x.id, x.state)
		return
	}
	x.state = "ended"
	if x.holding == "" {
		return
	}
	sc := h.scope(x.holding)
	x.holding = ""
	if !x.slot {
		h.apply(h.nest.ReleaseInside(x.id, sc.name, x.excl))
		return
	}
	if sc.gate.TryRelease(x.excl) {
		return
	}
	was := sc.gate.Release(x.excl)
	if was.NestWaiting() {
		h.apply(h.nest.Recheck())
	}
	if was.Queued() {
		h.admitWaiting(sc)
	}
}

// cancel is a waiter's ctx ending (admitWait, cancelNested).
func (h *harness) cancel(x *tCall) {
	sc := h.scope(x.scope)
	switch x.state {
	case "queued":
		if sc.gate.Leave(x.entry) {
			delete(sc.entries, x.entry)
			x.state = "left"
			h.printf("%s: left (ABORTED_BEFORE_DISPATCH)", x.id)
			h.admitWaiting(sc)
		}
		return
	case "waiting", "in line":
	default:
		h.printf("%s is %s: nothing to cancel", x.id, x.state)
		return
	}
	c, fx := h.nest.Cancel(x.id)
	switch c {
	case Left:
		delete(sc.entries, x.entry)
		x.state = "left"
		h.printf("%s: left (ABORTED_BEFORE_DISPATCH)", x.id)
	default:
		h.printf("%s: %s", x.id, c)
	}
	h.apply(fx)
}

func (h *harness) state() {
	names := make([]string, 0, len(h.scopes))
	for n := range h.scopes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sc := h.scopes[n]
		w := sc.gate.Load()
		if uint64(w)&(ticketOne-1) == 0 && sc.gate.Waiting() == 0 && len(sc.inside.calls) == 0 {
			continue // idle (the tickets issued are no state)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d running", n, w.Count())
		for _, f := range []struct {
			on   bool
			name string
		}{{w.Exclusive(), "excl"}, {uint64(w)&nestHold != 0, "hold"}, {w.NestWaiting(), "nest-wait"}, {w.Queued(), "queued"}, {sc.stopped, "stopped"}} {
			if f.on {
				b.WriteString(" " + f.name)
			}
		}
		if k := sc.gate.Waiting(); k != 0 {
			fmt.Fprintf(&b, "; %d waiting", k)
		}
		var line []string
		q := &sc.queue
		for i := range ticketOf(uint64(w)).after(q.first) {
			// Place i from the head: posted, or reserved for a ticket on its way.
			if q.head+i < len(q.waiters) && q.waiters[q.head+i] != nil {
				if e := q.waiters[q.head+i]; e.Waiting() {
					line = append(line, sc.entries[e])
				}
				continue
			}
			for _, id := range h.order {
				if x := h.calls[id]; x.state == "on its way" && x.scope == n && x.entry.Ticket == (q.first+Ticket(i))&ticketMask {
					line = append(line, "("+id+" on its way)")
				}
			}
		}
		if len(line) > 0 {
			fmt.Fprintf(&b, "; line %s", strings.Join(line, " "))
		}
		if len(sc.inside.calls) > 0 {
			fmt.Fprintf(&b, "; inside %s", strings.Join(sc.inside.calls, " "))
		}
		h.printf("%s", b.String())
	}
	nested := map[string]bool{}
	h.nest.EachWaiter(func(c, _ string, _, inLine bool) { nested[c] = !inLine })
	var calls []string
	for _, id := range h.order {
		x := h.calls[id]
		if x.state == "ended" || x.state == "left" || x.state == "failed" {
			continue
		}
		if nested[id] {
			x.state = "waiting" // taken out of the line
		}
		s := id + " " + x.state
		if x.state == "running" {
			s += fmt.Sprintf(" in %s (%s, %s)", x.holding, map[bool]string{true: "excl", false: "par"}[x.excl], map[bool]string{true: "slot", false: "inside"}[x.slot])
		}
		calls = append(calls, s)
	}
	if len(calls) > 0 {
		h.printf("calls: %s", strings.Join(calls, "; "))
	}
	if h.nest.Waiting() > 0 {
		var ws []string
		h.nest.EachWaiter(func(c, s string, parallel, inLine bool) {
			how := "nested"
			if inLine {
				how = "in line"
			}
			ws = append(ws, fmt.Sprintf("%s@%s (%s)", c, s, how))
		})
		h.printf("nest waiters: %s", strings.Join(ws, ", "))
	}
}
