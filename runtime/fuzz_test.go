package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/toolscope/toolscope/internal/jsonv"
	"github.com/toolscope/toolscope/runtime"
)

// --- FuzzRegistryOps: random operation sequences against a model of
// visibility (R22–R29, R6, R7). ---

const (
	fzKeys  = 4 // scope keys k0..k3
	fzNames = 4 // tool names t0..t3
)

type fzReg struct {
	layer string // "" = global
	name  string
	live  bool
	disp  func()
}

type fzRestr struct {
	owner       string
	allow, deny []string
	hasA, hasD  bool
	live        bool
	disp        func()
}

type fzRec struct {
	parent      string // "" = top level
	live        bool
	hadChildren bool
	h           *runtime.Scope
}

type fzModel struct {
	recs   map[string]*fzRec
	regs   []*fzReg
	restrs []*fzRestr
}

// chain returns [key, parent, ...] of the recorded links (R6).
func (m *fzModel) chain(key string) []string {
	var out []string
	for k := key; k != ""; {
		r := m.recs[k]
		if r == nil {
			break
		}
		out = append(out, k)
		k = r.parent
	}
	return out
}

func (m *fzModel) has(layer, name string) bool {
	for _, g := range m.regs {
		if g.live && g.layer == layer && g.name == name {
			return true
		}
	}
	return false
}

// visible returns the layer whose entry key's view shows for name.
func (m *fzModel) visible(key, name string) (string, bool) {
	chain := m.chain(key)
	layers := append(append([]string(nil), chain...), "")
	from := ""
	found := false
	for _, l := range layers {
		if m.has(l, name) {
			from, found = l, true
			break
		}
	}
	if !found {
		return "", false
	}
	if len(chain) > 0 && from == chain[0] {
		return from, true // own layer is exempt (R24)
	}
	for _, rs := range m.restrs {
		if !rs.live || !slices.Contains(chain, rs.owner) {
			continue
		}
		if rs.hasA && !slices.Contains(rs.allow, name) {
			return "", false
		}
		if rs.hasD && slices.Contains(rs.deny, name) {
			return "", false
		}
	}
	return from, true
}

// restrictable is R23 for live scope key.
func (m *fzModel) restrictable(key, name string) bool {
	chain := m.chain(key)
	for _, l := range append(chain[1:], "") {
		if m.has(l, name) {
			return true
		}
	}
	return false
}

func fzDef(layer, name string) runtime.Definition {
	d := hdef(name, true, func(context.Context) (any, error) { return 1, nil })
	d.Description = "L:" + layer + ":" + name
	return d
}

func FuzzRegistryOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 0, 0, 0, 1, 0, 5})
	f.Add([]byte{3, 0, 0, 3, 1, 1, 0, 0, 1, 0, 1, 1, 2, 1, 3, 1, 5, 4, 0, 5})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 1, 2, 1, 0x11, 0x02, 5, 4, 0, 5, 3, 0, 0, 5})
	f.Add([]byte{3, 1, 0, 3, 2, 1, 0, 2, 2, 0, 1, 0, 2, 2, 0x33, 0x01, 2, 1, 0x10, 0x05, 5, 1, 0, 5, 4, 1, 5, 4, 2, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		reg, err := runtime.New(runtime.WithEvents(false))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Close(context.Background())
		m := &fzModel{recs: map[string]*fzRec{}}
		next := func() int {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return int(b)
		}
		key := func(i int) string { return fmt.Sprint("k", i%fzKeys) }
		name := func(i int) string { return fmt.Sprint("t", i%fzNames) }
		// handle of a layer index: 0 = global, 1.. = a live scope.
		handle := func(i int) (*runtime.Scope, string, bool) {
			i %= fzKeys + 1
			if i == 0 {
				return reg.Global(), "", true
			}
			r := m.recs[key(i-1)]
			if r == nil || !r.live {
				return nil, "", false
			}
			return r.h, key(i - 1), true
		}
		names := func(mask int) []string {
			out := []string{}
			for i := range fzNames {
				if mask&(1<<i) != 0 {
					out = append(out, name(i))
				}
			}
			return out
		}
		for len(ops) > 0 {
			switch next() % 6 {
			case 0: // register
				h, layer, ok := handle(next())
				n := name(next())
				if !ok {
					continue
				}
				disp, err := h.Register(fzDef(layer, n))
				want := !m.has(layer, n)
				if (err == nil) != want {
					t.Fatalf("register %q in %q: err=%v, model ok=%v", n, layer, err, want)
				}
				if err == nil {
					m.regs = append(m.regs, &fzReg{layer: layer, name: n, live: true, disp: disp})
				}
			case 1: // dispose a registration (or a restriction)
				i := next()
				if len(m.regs) > 0 && i%2 == 0 {
					g := m.regs[(i/2)%len(m.regs)]
					g.disp()
					g.live = false
				} else if len(m.restrs) > 0 {
					rs := m.restrs[(i/2)%len(m.restrs)]
					rs.disp()
					rs.live = false
				}
			case 2: // restrict
				h, k, ok := handle(1 + next()%fzKeys)
				sets := next()
				ad := next()
				if !ok {
					continue
				}
				rs := &fzRestr{owner: k, hasA: ad&1 != 0, hasD: ad&2 != 0}
				var r runtime.Restriction
				if rs.hasA {
					rs.allow = names(sets & 0xF)
					r.Allow = rs.allow
				}
				if rs.hasD {
					rs.deny = names(sets >> 4)
					r.Deny = rs.deny
				}
				want := rs.hasA || rs.hasD
				for _, n := range append(append([]string(nil), rs.allow...), rs.deny...) {
					if !m.restrictable(k, n) {
						want = false
					}
				}
				disp, err := h.Restrict(r)
				if (err == nil) != want {
					t.Fatalf("restrict %q %+v: err=%v, model ok=%v", k, r, err, want)
				}
				if err == nil {
					rs.live, rs.disp = true, disp
					m.restrs = append(m.restrs, rs)
				}
			case 3: // new scope under a layer handle
				h, parent, ok := handle(next())
				k := key(next())
				if !ok {
					continue
				}
				rec := m.recs[k]
				// R3: a disposed top-level key may be bound under a parent
				// (unless that forms a cycle); a bound key keeps its parent.
				rebind := rec != nil && !rec.live && rec.parent == "" && parent != ""
				want := rec == nil || (!rec.live && rec.parent == parent) || rebind
				if (rec == nil || rebind) && slices.Contains(m.chain(parent), k) {
					want = false
				}
				s, err := h.NewScope(k)
				if (err == nil) != want {
					t.Fatalf("NewScope %q under %q: err=%v, model ok=%v (rec %+v)", k, parent, err, want, rec)
				}
				if err == nil {
					if rec == nil {
						rec = &fzRec{parent: parent}
						m.recs[k] = rec
						if parent != "" {
							m.recs[parent].hadChildren = true
						}
					}
					if rebind {
						rec.parent = parent
						m.recs[parent].hadChildren = true
					}
					rec.live, rec.h = true, s
				}
			case 4: // dispose a scope
				k := key(next())
				rec := m.recs[k]
				if rec == nil || !rec.live {
					continue
				}
				rec.h.Dispose()
				// R7: the scope and every live descendant go.
				gone := map[string]bool{k: true}
				for changed := true; changed; {
					changed = false
					for ck, cr := range m.recs {
						if cr.live && !gone[ck] && gone[cr.parent] {
							gone[ck], changed = true, true
						}
					}
				}
				for gk := range gone {
					m.recs[gk].live = false
				}
				for _, g := range m.regs {
					if gone[g.layer] {
						g.live = false
					}
				}
				for _, rs := range m.restrs {
					if gone[rs.owner] {
						rs.live = false
					}
				}
				if rec.parent == "" && !rec.hadChildren {
					delete(m.recs, k) // forgotten; R6 behaves the same
				}
			case 5: // check every view
				for ki := -1; ki < fzKeys+1; ki++ {
					k := ""
					if ki >= 0 {
						k = key(ki)
						if ki == fzKeys {
							k = "never"
						}
					}
					var want []string
					for ni := range fzNames {
						n := name(ni)
						layer, vis := m.visible(k, n)
						def, ok := reg.View(k).Get(n)
						if ok != vis {
							t.Fatalf("Get(%q, %q) found=%v, model %v", n, k, ok, vis)
						}
						if ok {
							want = append(want, n)
							if def.Description != "L:"+layer+":"+n {
								t.Fatalf("Get(%q, %q) = %q, model layer %q", n, k, def.Description, layer)
							}
						}
					}
					if rec := m.recs[k]; rec != nil && rec.live {
						got := rec.h.Tools()
						slices.Sort(got)
						if !slices.Equal(got, want) {
							t.Fatalf("Tools(%q) = %v, model %v", k, got, want)
						}
					}
				}
			}
		}
	})
}

// --- FuzzTurnArgs: R91 argument parsing through ExecuteTurn. ---

func FuzzTurnArgs(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":1}`, `[1,2]`, `"str"`, `12345678901234567890123`, `{"a":`, "not json",
		`{"a":1,"a":2}`, `"\ud800"`, "\xff", `1e400`, `{"x":[[[[[]]]]]}`, " {} ", "null", `{"big":1.000000000000000000001}`, "-0", `{"z":-0.0}`} {
		f.Add(s)
	}
	reg, err := runtime.New(runtime.WithEvents(false))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = reg.Close(context.Background()) })
	got := make(chan json.RawMessage, 1)
	d := hdef("echo", true, func(context.Context) (any, error) { return 1, nil })
	d.Execute = func(_ context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
		got <- append(json.RawMessage(nil), args...)
		return "ok", nil
	}
	if _, err := reg.Global().Register(d); err != nil {
		f.Fatal(err)
	}
	s, err := reg.NewScope("fuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "1", Name: "echo", ArgumentsText: text}})
		if err != nil {
			t.Fatalf("turn error: %v", err)
		}
		if len(tr.Results) != 1 || tr.Results[0] == nil {
			t.Fatalf("results: %+v", tr.Results)
		}
		r := tr.Results[0]
		var args json.RawMessage
		select {
		case args = <-got:
		default:
		}
		if r.IsError() {
			// Only a lossy argument snapshot may fail (R48); the body never ran.
			if args != nil || !strings.Contains(r.ErrorMessage(), "losslessly JSON-serializable") {
				t.Fatalf("turn call failed: %q (body ran: %v)", r.ErrorMessage(), args != nil)
			}
			return
		}
		if args == nil {
			t.Fatal("success without a body call")
		}
		switch {
		case text == "":
			if !jsonEqual(args, []byte("{}")) {
				t.Fatalf("empty text gave %s, want {}", args)
			}
		case jsonv.Valid([]byte(text)):
			if !jsonEqual(args, []byte(text)) {
				t.Fatalf("valid JSON %q arrived as %s", text, args)
			}
		case json.Valid([]byte(text)):
			// Valid but not lossless JSON (e.g. negative zero "-0") is
			// parsed, so its snapshot fails (R48): the body never runs.
			t.Fatalf("lossy JSON %q reached the body as %s", text, args)
		default:
			var sv string
			if err := json.Unmarshal(args, &sv); err != nil || (utf8.ValidString(text) && sv != text) {
				t.Fatalf("invalid JSON %q arrived as %s (want the raw string)", text, args)
			}
		}
	})
}

func jsonEqual(a, b []byte) bool {
	dec := func(x []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		return v, err
	}
	va, ea := dec(a)
	vb, eb := dec(b)
	if ea != nil || eb != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return reflect.DeepEqual(va, vb)
}

// --- Huge and deep arguments: processed or a clear error, never a crash. ---

func TestHugeAndDeepArguments(t *testing.T) {
	// The bound raised past the 24 MiB below, so that the text is processed
	// (TestExecute_ArgumentTextOverBoundInvalidArgs tests the refusal).
	reg := mustNew(t, runtime.WithEvents(false), runtime.WithMaxArgumentBytes(32<<20))
	defer closeNow(t, reg)
	var seen atomic.Int64
	d := hdef("size", true, func(context.Context) (any, error) { return 0, nil })
	d.Execute = func(_ context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
		seen.Store(int64(len(args)))
		return len(args), nil
	}
	mustRegister(t, reg.Global(), d)
	s, _ := reg.NewScope("a")

	const huge = 24 << 20
	big := `{"blob":"` + strings.Repeat("x", huge) + `"}`
	for _, tc := range []struct {
		name string
		args any
	}{
		{"24MiB string (raw)", json.RawMessage(big)},
		{"24MiB string (Go value)", map[string]any{"blob": strings.Repeat("y", huge)}},
		{"100k nested arrays", json.RawMessage(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))},
		{"100k nested objects", json.RawMessage(strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000))},
		{"100k unbalanced", json.RawMessage(strings.Repeat("[", 100000))},
		{"invalid utf8", json.RawMessage("{\"a\":\"\xff\"}")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen.Store(-1)
			r := s.Execute(context.Background(), runtime.Call{ID: "1", Name: "size", Arguments: tc.args})
			if r.IsError() {
				if r.ErrorMessage() == "" {
					t.Fatal("failure without a message")
				}
				t.Logf("clear error: %.120s", r.ErrorMessage())
				return
			}
			if seen.Load() <= 0 {
				t.Fatalf("success but the body saw %d bytes", seen.Load())
			}
		})
	}
	// The same through a turn (R91 parses the text once).
	tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{
		{ID: "1", Name: "size", ArgumentsText: big},
		{ID: "2", Name: "size", ArgumentsText: strings.Repeat("[", 100000)},
	})
	if err != nil || len(tr.Results) != 2 {
		t.Fatalf("turn: %v %+v", err, tr)
	}
	if tr.Results[0].IsError() {
		t.Fatalf("24MiB turn argument failed: %s", tr.Results[0].ErrorMessage())
	}
}
