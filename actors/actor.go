package actors

import (
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
)

// wake tells the global actor that agent actors wait to be spawned. The
// work lives in Host.pending, not in the message: a wake protoactor drops
// (the global actor stopped behind the host's back) loses nothing, because
// the next incarnation takes the pending list when it starts. It is
// unexported: no other actor can send one.
type wake struct{}

var wakeMsg = &wake{}

// retireMsg tells a disposed scope's actor, out of the process registry
// already, to stop once it has taken the requests queued before it
// (Host.retire). It goes straight to the actor's process (a stop by PID
// would look the PID up, find nothing and be a dead letter). Unexported:
// no other actor can send one.
type retireMsg struct{ proc actor.Process }

// scopeActor is the actor of one scope. It is stateless — the scope's
// state lives in the registry — so an incarnation spawned after protoactor
// stopped the last one carries on at once. It never runs user code in
// Receive: a request is answered on one of the host's workers (workers.go), so
// a tool body, hook or classifier that sends to a PID, even its own
// scope's, never waits for the actor it runs under.
//
// The global scope's actor is also the parent of every agent scope's
// actor: it spawns them (Host.pending), hears when one terminates and, if
// its scope lives, respawns it under the PID handed out (respawn).
type scopeActor struct {
	h        *Host
	rec      *actorRec
	global   bool
	stopping bool // the global actor is stopping: its children follow it
}

// props returns the props of rec's actor. The lock-free mailbox: a scope
// actor sees the occasional request, never the Go call path, and an idle
// one is smaller with it than with the default ring buffer.
func (h *Host) props(rec *actorRec, global bool) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &scopeActor{h: h, rec: rec, global: global}
	}, actor.WithMailbox(actor.UnboundedLockfree()), actor.WithDispatcher(dispatcher{h}))
}

// spawnGlobal spawns the global scope's actor (the first PID request of
// the host).
func (h *Host) spawnGlobal() {
	g := h.global // set by recFor before, never changed
	pid, err := h.sys.Root.SpawnNamed(h.props(g, true), "toolscope"+h.sys.ProcessRegistry.NextId())
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || h.closed {
		h.lost = true
		h.giveUpLocked()
		if err == nil {
			go h.stop(pid)
		}
		return
	}
	g.pid, g.cur = pid, pid
	close(g.ready)
}

// giveUpLocked releases every PID request waiting for an actor that will
// not come (closed or lost host): they get a PID no process serves.
func (h *Host) giveUpLocked() {
	for _, rec := range h.pending {
		close(rec.ready)
	}
	h.pending = nil
	if g := h.global; g != nil && g.pid == nil {
		close(g.ready)
	}
}

// Receive implements actor.Actor.
func (a *scopeActor) Receive(c actor.Context) {
	if sender := c.Sender(); sender != nil {
		// A request (protoactor's own lifecycle messages never come with a
		// sender: one that does was sent by someone, and is answered as an
		// unknown message, not acted on).
		a.h.run(request{rec: a.rec, sender: sender, msg: c.Message()})
		return
	}
	switch m := c.Message().(type) {
	case *actor.Started:
		if a.global {
			a.h.spawnPending(c, true)
		}
	case *wake:
		if a.global {
			if a.stopping {
				a.stopSelf(c) // see stopSelf
				return
			}
			a.h.spawnPending(c, false)
		}
	case *retireMsg:
		m.proc.Stop(c.Self())
	case *actor.Stopping:
		a.stopping = true
	case *actor.Restarting:
	case *actor.Terminated:
		if a.global && !slices.ContainsFunc(c.Children(), func(p *actor.PID) bool { return p.Equal(m.Who) }) {
			a.h.childTerminated(c, m.GetWho(), a.stopping)
			if a.stopping {
				a.stopSelf(c)
			}
		}
	case *actor.Stopped:
		if a.global {
			a.h.globalStopped(c)
		}
	default:
		// Sent without a sender (Send): nobody could hear an answer, so
		// nothing runs.
	}
}

// stopSelf stops the global actor while it believes it is stopping. While
// it stops it spawns nothing (a child spawned now would never be stopped,
// and it would wait for it forever); its successor spawns what is pending
// and respawns its children. A real stop makes this a no-op; a Stopping
// message someone sent without a sender (it is not told apart from
// protoactor's) is made true by it, so the pending spawns and respawns
// happen in the successor instead of never.
func (a *scopeActor) stopSelf(c actor.Context) { a.h.stop(c.Self()) }

// spawnPending spawns the agent actors waiting for one, as children of
// the global actor c; a new global actor (started) also respawns those
// whose incarnation ended with its predecessor.
func (h *Host) spawnPending(c actor.Context, started bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	todo := h.pending
	h.pending = nil
	if started {
		for _, rec := range h.scopes {
			if rec.cur == nil && rec.pid != nil && !rec.retired {
				todo = append(todo, rec) // its old incarnation went with the old global actor
			}
		}
	}
	for _, rec := range todo {
		if rec.retired || h.closed {
			if rec.pid == nil {
				close(rec.ready)
			}
			delete(h.scopes, rec.scope)
			continue
		}
		h.spawnChildLocked(c, rec)
	}
}

// spawnChildLocked spawns one incarnation of rec's actor as a child of c.
// The first one's own PID is the PID handed out. A later one is spawned
// under a fresh name, which nobody knows, and only once it is fully set up
// is its process added to the registry under the PID handed out as well:
// protoactor's spawn adds a process to the registry before its mailbox is
// ready, so a send racing a spawn under a known name could hit a mailbox
// whose dispatcher was still nil.
func (h *Host) spawnChildLocked(c actor.Context, rec *actorRec) {
	fresh, err := c.SpawnNamed(h.props(rec, false), "scope"+h.sys.ProcessRegistry.NextId())
	if err != nil {
		h.abandonLocked(rec)
		return
	}
	if rec.pid == nil {
		rec.pid, rec.cur = fresh, fresh
		close(rec.ready)
		return
	}
	procs := h.sys.ProcessRegistry
	proc, ok := procs.Get(fresh)
	if ok {
		_, ok = procs.Add(proc, rec.pid.Id)
	}
	if !ok {
		h.abandonLocked(rec)
		c.Stop(fresh)
		return
	}
	rec.cur = fresh
}

// abandonLocked gives rec up: its PID (if it has one) stays served by no
// process, and its scope is served by messages no more.
func (h *Host) abandonLocked(rec *actorRec) {
	rec.retired = true
	delete(h.scopes, rec.scope)
	if rec.pid == nil {
		close(rec.ready)
	}
	h.report(fmt.Errorf("toolscope actors: the actor of scope %q could not be spawned; its PID is served by no process", rec.key))
}

// childTerminated runs in the global actor when a scope actor has stopped
// (it is out of the process registry under its own name): its alias under
// the PID handed out is dropped, and it is respawned unless its scope was
// disposed, the host is closing, or the global actor itself is stopping
// (the next global actor respawns it when it starts).
func (h *Host) childTerminated(c actor.Context, who *actor.PID, stopping bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var rec *actorRec
	for _, r := range h.scopes {
		if r.cur != nil && r.cur.Equal(who) {
			rec = r
			break
		}
	}
	if rec == nil {
		return
	}
	rec.cur = nil
	if !who.Equal(rec.pid) {
		h.sys.ProcessRegistry.Remove(rec.pid) // the alias of a stopped incarnation
	}
	switch {
	case rec.retired || h.closed:
		delete(h.scopes, rec.scope)
	case stopping:
		// respawned by the next global actor (spawnPending)
	default:
		h.spawnChildLocked(c, rec)
	}
}

// globalStopped runs when the global actor has stopped (its children
// stopped before it). Unless the host is closing, a new global actor is
// spawned under a fresh name and aliased under the global PID, as for a
// scope actor; when it starts it respawns every scope actor.
func (h *Host) globalStopped(c actor.Context) {
	procs := h.sys.ProcessRegistry
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.global
	self := c.Self()
	if _, alive := procs.GetLocal(self.Id); alive || g.cur == nil || !g.cur.Equal(self) {
		return // not this incarnation's real stop (a forged Stopped message)
	}
	g.cur = nil
	if !self.Equal(g.pid) {
		procs.Remove(g.pid)
	}
	if h.closed {
		return
	}
	fresh, err := h.sys.Root.SpawnNamed(h.props(g, true), "toolscope"+h.sys.ProcessRegistry.NextId())
	ok := err == nil
	var proc actor.Process
	if ok {
		proc, ok = procs.Get(fresh)
	}
	if ok {
		_, ok = procs.Add(proc, g.pid.Id)
	}
	if !ok {
		// No successor (the system is shutting down): every PID is served
		// by no process from now on.
		h.lost = true
		h.giveUpLocked()
		if err == nil {
			go h.stop(fresh)
		}
		h.report(fmt.Errorf("toolscope actors: the global scope's actor stopped and could not be respawned"))
		return
	}
	g.cur = fresh
}

// send sends msg to pid, containing a panicking event-stream subscriber
// hearing its dead letter (protoactor publishes a dead letter on the
// sender's goroutine, which here may be a goroutine with nobody above it
// to recover).
func (h *Host) send(pid *actor.PID, msg any) {
	defer h.recoverSubscriber()
	h.sys.Root.Send(pid, msg)
}

// stop stops pid, containing a panicking subscriber as send does.
func (h *Host) stop(pid *actor.PID) {
	defer h.recoverSubscriber()
	h.sys.Root.Stop(pid)
}

func (h *Host) recoverSubscriber() {
	if p := recover(); p != nil {
		h.report(fmt.Errorf("event stream subscriber panicked: %v", p))
	}
}
