package cluster

import (
	"context"
	"errors"
	"slices"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/runtime"
)

// A mutation is applied in this order, one at a time per tree:
//
//  1. a request whose call id made a live mutation already (a retry) is
//     answered with that mutation's id; nothing changes;
//  2. an addition (Mount, AddGuard, Restrict, NewScope) is built and
//     applied to the runtime scope first — the catalog factory and the
//     runtime's own validation refuse bad config there, naming the entry,
//     and a state that could not be rebuilt is never saved;
//  3. the next state (a copy) is saved, fenced by the lease;
//  4. only then is the mutation acknowledged with its id. A failed save
//     withdraws the addition (its exact disposer), and — the store's state
//     being unknown after anything but a clean refusal — ends the
//     activation, so the tree is rebuilt from what the store holds.
//
// A removal (Undo, Dispose) saves first and applies after: it never fails
// locally.

// mutationReply is the reply of a refused mutation.
func refused(e *Error) *clustermsg.MutationReply {
	return &clustermsg.MutationReply{Failure: failure(e)}
}

// begin waits for the activation and takes the mutation lock; the returned
// func releases it.
func (t *tree) beginMutation(ctx context.Context) (func(), *Error) {
	if err := t.await(ctx); err != nil {
		return nil, err
	}
	t.mmu.Lock()
	if err := t.usable(); err != nil {
		t.mmu.Unlock()
		return nil, err
	}
	return t.mmu.Unlock, nil
}

// save saves next (fenced) and makes it the state. On failure it loses the
// activation and returns the refusal to send.
func (t *tree) save(next *TreeState, what string) *Error {
	b, err := next.Encode()
	if err != nil {
		return newError(CodeInvalid, "%s refused: %v; nothing changed", what, err)
	}
	ctx, cancel := t.storeCtx()
	err = t.cfg.store.Save(ctx, t.lease, b)
	cancel()
	if err != nil {
		if errors.Is(err, ErrFenced) {
			t.lose(newError(CodeScopeUnavailable, "tree %q moved to another member; retry later", t.id))
			return newError(CodeScopeUnavailable, "%s was not applied: tree %q moved to another member; retry later", what, t.id)
		}
		t.lose(newError(CodeScopeUnavailable, "tree %q could not save its state (%v); it will be rebuilt from the store; retry later", t.id, err))
		return newError(CodeOutcomeUnknown, "%s may or may not have been saved (the store failed: %v); the tree will be rebuilt from the store: retry with the same call id, which is answered with the mutation's id if it was saved", what, err)
	}
	t.mu.Lock()
	t.state = next
	t.mu.Unlock()
	return nil
}

// scopeIndex resolves the header's scope in the state.
func (t *tree) scopeIndex(key string) (int, *runtime.Scope, *Error) {
	if key == "" {
		key = t.id
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.state.scope(key)
	if i < 0 {
		return -1, nil, newError(CodeNoSuchScope, "tree %q has no scope %q (never created, or disposed); nothing changed", t.id, key)
	}
	return i, t.built.Scopes[key], nil
}

// add runs one addition: build applies it to the runtime scope and returns
// its disposer and the mutation to store.
func (t *tree) add(ctx context.Context, h *clustermsg.Header, what string, build func(s *runtime.Scope) (func(), MutationState, *Error)) *clustermsg.MutationReply {
	unlock, err := t.beginMutation(ctx)
	if err != nil {
		return refused(err)
	}
	defer unlock()
	if id := t.state.byCallID(h.GetCallId()); id != "" {
		return &clustermsg.MutationReply{Id: id}
	}
	i, s, err := t.scopeIndex(h.GetScope())
	if err != nil {
		return refused(err)
	}
	undo, m, err := build(s)
	if err != nil {
		return refused(err)
	}
	next := t.state.Clone()
	m.ID, m.CallID = next.nextID(), h.GetCallId()
	next.Scopes[i].Mutations = append(next.Scopes[i].Mutations, m)
	if len(next.Scopes[i].Mutations) > MaxMutations {
		undo()
		return refused(newError(CodeInvalid, "%s refused: scope %q has %d mutations already, the bound; nothing changed", what, next.Scopes[i].Key, MaxMutations))
	}
	if err := t.save(next, what); err != nil {
		undo()
		return refused(err)
	}
	t.mu.Lock()
	t.built.undo[m.ID] = undo
	t.mu.Unlock()
	return &clustermsg.MutationReply{Id: m.ID}
}

// mount answers a MountRequest.
func (t *tree) mount(ctx context.Context, m *clustermsg.MountRequest) *clustermsg.MutationReply {
	what := "mount of catalog tool " + quote(m.GetEntry())
	return t.add(ctx, m.GetHeader(), what, func(s *runtime.Scope) (func(), MutationState, *Error) {
		def, err := t.cfg.catalog.Tool(m.GetEntry(), m.GetConfigJson())
		if err != nil {
			return nil, MutationState{}, newError(CodeInvalid, "%s refused: %v; nothing changed", what, err)
		}
		undo, err := s.Register(def)
		if err != nil {
			return nil, MutationState{}, newError(CodeInvalid, "%s refused: %v; nothing changed", what, err)
		}
		cfg, _ := checkConfig("tool", m.GetEntry(), m.GetConfigJson()) // canonical, checked by Tool
		return undo, MutationState{Kind: KindMount, Entry: m.GetEntry(), Config: cfg, Tool: def.Name}, nil
	})
}

// addGuard answers an AddGuardRequest.
func (t *tree) addGuard(ctx context.Context, m *clustermsg.AddGuardRequest) *clustermsg.MutationReply {
	what := "guard of catalog entry " + quote(m.GetEntry())
	return t.add(ctx, m.GetHeader(), what, func(s *runtime.Scope) (func(), MutationState, *Error) {
		g, err := t.cfg.catalog.Guard(m.GetEntry(), m.GetConfigJson())
		if err != nil {
			return nil, MutationState{}, newError(CodeInvalid, "%s refused: %v; nothing changed", what, err)
		}
		undo, err := s.Guard(g)
		if err != nil {
			return nil, MutationState{}, newError(CodeInvalid, "%s refused: %v; nothing changed", what, err)
		}
		cfg, _ := checkConfig("guard", m.GetEntry(), m.GetConfigJson())
		return undo, MutationState{Kind: KindGuard, Entry: m.GetEntry(), Config: cfg}, nil
	})
}

// restrict answers a RestrictRequest.
func (t *tree) restrict(ctx context.Context, m *clustermsg.RestrictRequest) *clustermsg.MutationReply {
	var r runtime.Restriction
	if m.GetHasAllow() {
		r.Allow = append([]string{}, m.GetAllow()...)
	}
	if m.GetHasDeny() {
		r.Deny = append([]string{}, m.GetDeny()...)
	}
	return t.add(ctx, m.GetHeader(), "restriction", func(s *runtime.Scope) (func(), MutationState, *Error) {
		undo, err := s.Restrict(runtime.Restriction{Allow: cloneList(r.Allow), Deny: cloneList(r.Deny)})
		if err != nil {
			return nil, MutationState{}, newError(CodeInvalid, "restriction refused: %v; nothing changed", err)
		}
		return undo, MutationState{Kind: KindRestrict, Allow: r.Allow, Deny: r.Deny}, nil
	})
}

// undo answers an UndoRequest: the exact disposer of one mutation.
func (t *tree) undo(ctx context.Context, m *clustermsg.UndoRequest) *clustermsg.MutationReply {
	unlock, err := t.beginMutation(ctx)
	if err != nil {
		return refused(err)
	}
	defer unlock()
	si, _, err := t.scopeIndex(m.GetHeader().GetScope())
	if err != nil {
		return refused(err)
	}
	i, j := t.state.find(m.GetId())
	if i < 0 {
		return refused(newError(CodeNoSuchScope, "tree %q has no live mutation %q (never made, or removed already); nothing changed", t.id, m.GetId()))
	}
	got := t.state.Scopes[i].Mutations[j]
	if i != si || got.Kind != m.GetKind() {
		return refused(newError(CodeInvalid, "mutation %q is a %s of scope %q, not a %s of scope %q: a disposer names exactly its own mutation; nothing changed",
			m.GetId(), got.Kind, t.state.Scopes[i].Key, m.GetKind(), t.state.Scopes[si].Key))
	}
	next := t.state.Clone()
	next.Scopes[i].Mutations = slices.Delete(next.Scopes[i].Mutations, j, j+1)
	if err := t.save(next, "removal of "+quote(m.GetId())); err != nil {
		return refused(err)
	}
	t.mu.Lock()
	b := t.built
	t.mu.Unlock()
	b.Undo(m.GetId())
	return &clustermsg.MutationReply{}
}

// newScope answers a NewScopeRequest: a sub-agent of the header's scope.
func (t *tree) newScope(ctx context.Context, m *clustermsg.NewScopeRequest) *clustermsg.MutationReply {
	unlock, err := t.beginMutation(ctx)
	if err != nil {
		return refused(err)
	}
	defer unlock()
	h := m.GetHeader()
	if id := t.state.byCallID(h.GetCallId()); id != "" {
		return &clustermsg.MutationReply{Id: id}
	}
	_, parent, err := t.scopeIndex(h.GetScope())
	if err != nil {
		return refused(err)
	}
	key := m.GetKey()
	if key == "" || t.state.scope(key) >= 0 {
		return refused(newError(CodeInvalid, "new scope refused: key %q is empty or in use in tree %q; nothing changed", key, t.id))
	}
	if len(t.state.Scopes) >= MaxScopes {
		return refused(newError(CodeInvalid, "new scope %q refused: tree %q has %d scopes, the bound; nothing changed", key, t.id, MaxScopes))
	}
	s, rerr := parent.NewScope(key)
	if rerr != nil {
		return refused(newError(CodeInvalid, "new scope %q refused: %v; nothing changed", key, rerr))
	}
	next := t.state.Clone()
	id := next.nextID()
	next.Scopes = append(next.Scopes, ScopeState{Key: key, Parent: parent.Key(), ID: id, CallID: h.GetCallId()})
	if err := t.save(next, "new scope "+quote(key)); err != nil {
		s.Dispose()
		return refused(err)
	}
	t.mu.Lock()
	t.built.Scopes[key] = s
	t.mu.Unlock()
	return &clustermsg.MutationReply{Id: id}
}

// dispose answers a DisposeRequest. A sub-agent's disposal removes it and
// its sub-agents from the state, then disposes them (children first). The
// root's disposal forgets the tree in the store (state, claims, records)
// and ends the activation.
func (t *tree) dispose(ctx context.Context, m *clustermsg.DisposeRequest) *clustermsg.MutationReply {
	unlock, err := t.beginMutation(ctx)
	if err != nil {
		return refused(err)
	}
	defer unlock()
	i, _, err := t.scopeIndex(m.GetHeader().GetScope())
	if err != nil {
		return refused(err)
	}
	if i == 0 {
		sctx, cancel := t.storeCtx()
		ferr := t.cfg.store.Forget(sctx, t.lease)
		cancel()
		if ferr != nil {
			if errors.Is(ferr, ErrFenced) {
				t.lose(newError(CodeScopeUnavailable, "tree %q moved to another member; retry later", t.id))
				return refused(newError(CodeScopeUnavailable, "disposal of tree %q was not applied: it moved to another member; retry later", t.id))
			}
			return refused(newError(CodeOutcomeUnknown, "disposal of tree %q may or may not have been saved (the store failed: %v); retry it", t.id, ferr))
		}
		t.lose(newError(CodeNoSuchScope, "tree %q was disposed", t.id))
		return &clustermsg.MutationReply{}
	}
	old := t.state
	gone := old.descendants(old.Scopes[i].Key)
	next := old.Clone()
	next.Scopes = slices.DeleteFunc(next.Scopes, func(s ScopeState) bool { return gone[s.Key] })
	if err := t.save(next, "disposal of scope "+quote(old.Scopes[i].Key)); err != nil {
		return refused(err)
	}
	var doomed []*runtime.Scope
	t.mu.Lock()
	for _, st := range old.Scopes { // parents before children
		if !gone[st.Key] {
			continue
		}
		if s := t.built.Scopes[st.Key]; s != nil {
			doomed = append(doomed, s)
			delete(t.built.Scopes, st.Key)
		}
		for _, mu := range st.Mutations {
			delete(t.built.undo, mu.ID)
		}
	}
	t.mu.Unlock()
	for _, s := range slices.Backward(doomed) { // children first
		s.Dispose()
	}
	return &clustermsg.MutationReply{}
}

func quote(s string) string { return `"` + s + `"` }
