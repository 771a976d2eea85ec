package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

func TestRestrict_R20_ScopedOnly(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "g", "G")
	changes := rrChanges(t, reg.Global())
	grp, err := reg.Global().Group()
	require.NoError(t, err)
	for _, s := range []*runtime.Scope{reg.Global(), grp} {
		for _, r := range []runtime.Restriction{{Deny: []string{"g"}}, {}, {Allow: []string{"run_code"}}} {
			_, err := s.Restrict(r)
			require.ErrorIs(t, err, runtime.ErrInvalidRestriction)
			assert.Contains(t, err.Error(), "the global scope cannot restrict", "checked first")
		}
	}
	assert.Equal(t, int64(0), changes.Load())
	assert.Equal(t, []string{"g"}, rrView(t, reg, ""))
}

func TestRestrict_R21_ValidationOrderAndMessages(t *testing.T) {
	cases := []struct {
		name   string
		global []string // global tools
		own    []string // tools the restricting scope registers itself
		r      runtime.Restriction
		want   []string // fragments, in this order
	}{
		{"both absent", []string{"a"}, nil, runtime.Restriction{}, []string{"no-op"}},
		{"reserved in allow", []string{"a"}, nil, runtime.Restriction{Allow: []string{"run_code"}}, []string{`cannot name reserved`}},
		{"reserved before unknown", []string{"a"}, nil,
			runtime.Restriction{Allow: []string{"zz"}, Deny: []string{"run_code"}}, []string{`cannot name reserved`}},
		{"one unknown", []string{"b", "a"}, nil, runtime.Restriction{Deny: []string{"x"}},
			[]string{`unknown global tool "x"`, `known global tools: a, b`}},
		{"unknown names in listing order, allow first", []string{"b", "a"}, nil,
			runtime.Restriction{Allow: []string{"a", "y"}, Deny: []string{"x", "b"}},
			[]string{`unknown global tools "y", "x"`, `known global tools: a, b`}},
		{"no known tools", nil, nil, runtime.Restriction{Deny: []string{"x", "y"}},
			[]string{`unknown global tools "x", "y"`, `known global tools: (none)`}},
		{"own-only name is unknown (R23)", []string{"a"}, []string{"mine"}, runtime.Restriction{Deny: []string{"mine"}},
			[]string{`unknown global tool "mine"`, `known global tools: a`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := rrNew(t)
			for _, n := range tc.global {
				rrReg(t, reg.Global(), n, "G")
			}
			s := rrScope(t, reg, "s")
			for _, n := range tc.own {
				rrReg(t, s, n, "S")
			}
			before := rrView(t, reg, "s")
			changes := rrChanges(t, reg.Global())
			d, err := s.Restrict(tc.r)
			require.Error(t, err)
			assert.Nil(t, d)
			assert.ErrorIs(t, err, runtime.ErrInvalidRestriction)
			msg := err.Error()
			last := -1
			for _, w := range tc.want {
				i := strings.Index(msg, w)
				require.GreaterOrEqual(t, i, 0, "%q not in %q", w, msg)
				assert.Greater(t, i, last, "order of %q in %q", w, msg)
				last = i
			}
			assert.Equal(t, int64(0), changes.Load(), "nothing notified")
			assert.Equal(t, before, rrView(t, reg, "s"), "nothing registered")
		})
	}
}

func TestRestrict_R21_AllowNilVsEmptyAndEmptyDeny(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "a", "G")
	rrReg(t, reg.Global(), "b", "G")
	s := rrScope(t, reg, "s")
	rrReg(t, s, "own", "S")
	changes := rrChanges(t, reg.Global())

	dDeny, err := s.Restrict(runtime.Restriction{Deny: []string{}})
	require.NoError(t, err, "an empty deny-list is a valid restriction")
	assert.Equal(t, int64(1), changes.Load(), "and it notifies")
	assert.Equal(t, []string{"a", "b", "own"}, rrView(t, reg, "s"))

	dNil, err := s.Restrict(runtime.Restriction{Allow: nil, Deny: []string{"b"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "own"}, rrView(t, reg, "s"), "Allow nil is no allow-list")

	dEmpty, err := s.Restrict(runtime.Restriction{Allow: []string{}})
	require.NoError(t, err)
	assert.Equal(t, []string{"own"}, rrView(t, reg, "s"), "Allow empty hides every inherited tool")

	dEmpty()
	dNil()
	dDeny()
	assert.Equal(t, int64(6), changes.Load(), "each add and lift notifies once")
	assert.Equal(t, []string{"a", "b", "own"}, rrView(t, reg, "s"))
}

func TestRestrict_R22_Meaning(t *testing.T) {
	cases := []struct {
		name    string
		parent  *runtime.Restriction
		child   []runtime.Restriction
		wantC   []string
		wantP   []string
		comment string
	}{
		{"allow", nil, []runtime.Restriction{{Allow: []string{"a", "c"}}}, []string{"a", "c"}, []string{"a", "b", "c", "d"}, ""},
		{"deny", nil, []runtime.Restriction{{Deny: []string{"a", "c"}}}, []string{"b", "d"}, []string{"a", "b", "c", "d"}, ""},
		{"allow and deny", nil, []runtime.Restriction{{Allow: []string{"a", "b", "c"}, Deny: []string{"b"}}}, []string{"a", "c"}, []string{"a", "b", "c", "d"}, ""},
		{"name in both lists is hidden", nil, []runtime.Restriction{{Allow: []string{"a"}, Deny: []string{"a"}}}, []string{}, []string{"a", "b", "c", "d"}, ""},
		{"own filters intersect", nil, []runtime.Restriction{{Allow: []string{"a", "b"}}, {Allow: []string{"b", "c"}}}, []string{"b"}, []string{"a", "b", "c", "d"}, ""},
		{"chain filters intersect", &runtime.Restriction{Allow: []string{"a", "b"}}, []runtime.Restriction{{Allow: []string{"b", "c"}}}, []string{"b"}, []string{"a", "b"}, ""},
		{"ancestor deny plus own allow", &runtime.Restriction{Deny: []string{"a"}}, []runtime.Restriction{{Allow: []string{"a", "d"}}}, []string{"d"}, []string{"b", "c", "d"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := rrNew(t)
			for _, n := range []string{"a", "b", "c", "d"} {
				rrReg(t, reg.Global(), n, "G")
			}
			p := rrScope(t, reg, "p")
			c := rrScope(t, p, "c")
			if tc.parent != nil {
				_, err := p.Restrict(*tc.parent)
				require.NoError(t, err)
			}
			for _, r := range tc.child {
				_, err := c.Restrict(r)
				require.NoError(t, err)
			}
			assert.Equal(t, tc.wantC, rrView(t, reg, "c"))
			assert.Equal(t, tc.wantP, rrView(t, reg, "p"))
			assert.Equal(t, []string{"a", "b", "c", "d"}, rrView(t, reg, ""))
			for _, n := range []string{"a", "b", "c", "d"} {
				_, ok := c.Get(n)
				res := rrExec(c, n)
				visible := false
				for _, w := range tc.wantC {
					visible = visible || w == n
				}
				assert.Equal(t, visible, ok, "Get %s", n)
				assert.Equal(t, !visible, res.Code() == runtime.CodeUnknownTool, "Execute %s", n)
			}
		})
	}
}

func TestRestrict_R23_RestrictableNames(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "g", "G")
	p := rrScope(t, reg, "p")
	rrReg(t, p, "pt", "P")
	c := rrScope(t, p, "c")
	rrReg(t, c, "ct", "C")
	rrReg(t, c, "g", "Cg") // both inherited and own

	_, err := p.Restrict(runtime.Restriction{Deny: []string{"g"}})
	require.NoError(t, err)
	_, err = c.Restrict(runtime.Restriction{Deny: []string{"g"}})
	assert.NoError(t, err, "a name already hidden by another restriction is still restrictable")
	_, err = c.Restrict(runtime.Restriction{Allow: []string{"pt", "g"}})
	assert.NoError(t, err, "ancestor tools are restrictable")
	_, err = c.Restrict(runtime.Restriction{Deny: []string{"ct"}})
	assert.ErrorContains(t, err, `unknown global tool "ct"`)
	assert.ErrorContains(t, err, "known global tools: g, pt")
	assert.Equal(t, []string{"pt", "ct", "g"}, rrView(t, reg, "c"), "own g untouched but appended (its inherited slot was restricted away)")
	assert.Equal(t, "Cg", rrTag(reg, "g", "c"))
}

func TestRestrict_R24_OwnLayerIsExempt(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "bash", "G")
	rrReg(t, reg.Global(), "read", "G")
	p := rrScope(t, reg, "p")
	c := rrScope(t, p, "c")
	rrReg(t, p, "bash", "P")
	rrReg(t, p, "mine", "P")
	_, err := p.Restrict(runtime.Restriction{Deny: []string{"bash"}})
	require.NoError(t, err, "accepted because a global bash exists")
	_, err = p.Restrict(runtime.Restriction{Allow: []string{"read", "bash"}})
	require.NoError(t, err)

	assert.Equal(t, []string{"read=G", "bash=P", "mine=P"}, rrViewTags(t, reg, "p"),
		"the parent sees its own bash (appended: the inherited bash it shadows was restricted away, R29/R35) and mine")
	assert.Equal(t, []string{"read=G"}, rrViewTags(t, reg, "c"), "children see no bash at all and not p's mine")
	assert.Equal(t, "P", rrExec(p, "bash").Text())
	assert.Equal(t, runtime.CodeUnknownTool, rrExec(c, "bash").Code())

	// The child's own tools are exempt from the ancestor's filters too.
	rrReg(t, c, "bash", "C")
	rrReg(t, c, "extra", "C")
	assert.Equal(t, []string{"read=G", "bash=C", "extra=C"}, rrViewTags(t, reg, "c"))
}

func TestRestrict_R25_LiveEvaluation(t *testing.T) {
	t.Run("AllowExcludesLaterGlobals", func(t *testing.T) {
		reg := rrNew(t)
		rrReg(t, reg.Global(), "a", "G")
		s := rrScope(t, reg, "s")
		_, err := s.Restrict(runtime.Restriction{Allow: []string{"a"}})
		require.NoError(t, err)
		rrReg(t, reg.Global(), "later", "G")
		assert.Equal(t, []string{"a"}, rrView(t, reg, "s"))
	})
	t.Run("DenyAdmitsLaterGlobals", func(t *testing.T) {
		reg := rrNew(t)
		rrReg(t, reg.Global(), "a", "G")
		s := rrScope(t, reg, "s")
		_, err := s.Restrict(runtime.Restriction{Deny: []string{"a"}})
		require.NoError(t, err)
		rrReg(t, reg.Global(), "later", "G")
		assert.Equal(t, []string{"later"}, rrView(t, reg, "s"))
	})
	t.Run("DeniedReregisteredStaysHidden", func(t *testing.T) {
		reg := rrNew(t)
		d := rrReg(t, reg.Global(), "a", "G")
		s := rrScope(t, reg, "s")
		_, err := s.Restrict(runtime.Restriction{Deny: []string{"a"}})
		require.NoError(t, err)
		d()
		rrReg(t, reg.Global(), "a", "G2")
		assert.Equal(t, []string{}, rrView(t, reg, "s"))
	})
	t.Run("AllowedReregisteredVisibleAgain", func(t *testing.T) {
		reg := rrNew(t)
		d := rrReg(t, reg.Global(), "a", "G")
		s := rrScope(t, reg, "s")
		_, err := s.Restrict(runtime.Restriction{Allow: []string{"a"}})
		require.NoError(t, err)
		d()
		assert.Equal(t, []string{}, rrView(t, reg, "s"))
		rrReg(t, reg.Global(), "a", "G2")
		assert.Equal(t, []string{"a=G2"}, rrViewTags(t, reg, "s"))
	})
	t.Run("CallerSlicesCopied", func(t *testing.T) {
		reg := rrNew(t)
		rrReg(t, reg.Global(), "a", "G")
		rrReg(t, reg.Global(), "b", "G")
		s := rrScope(t, reg, "s")
		allow := []string{"a", "b"}
		deny := []string{"b"}
		_, err := s.Restrict(runtime.Restriction{Allow: allow, Deny: deny})
		require.NoError(t, err)
		allow[0] = "b"
		deny[0] = "a"
		assert.Equal(t, []string{"a"}, rrView(t, reg, "s"))
	})
}

func TestRestrict_R26_ReachAndDisposal(t *testing.T) {
	reg := rrNew(t)
	for _, n := range []string{"a", "b", "c"} {
		rrReg(t, reg.Global(), n, "G")
	}
	p := rrScope(t, reg, "p")
	c := rrScope(t, p, "c")
	gc := rrScope(t, c, "gc")
	sib := rrScope(t, p, "sib")
	_ = gc
	_ = sib
	changes := rrChanges(t, reg.Global())

	dp, err := p.Restrict(runtime.Restriction{Deny: []string{"a"}})
	require.NoError(t, err)
	dc, err := c.Restrict(runtime.Restriction{Deny: []string{"b"}})
	require.NoError(t, err)
	dc2, err := c.Restrict(runtime.Restriction{Deny: []string{"c"}})
	require.NoError(t, err)
	assert.Equal(t, int64(3), changes.Load())
	views := map[string][]string{"": {"a", "b", "c"}, "p": {"b", "c"}, "c": {}, "gc": {}, "sib": {"b", "c"}}
	for k, want := range views {
		assert.Equal(t, want, rrView(t, reg, k), "view %q", k)
	}

	dc2()
	assert.Equal(t, []string{"c"}, rrView(t, reg, "gc"), "lifting one restriction leaves the others")
	dc2()
	assert.Equal(t, int64(4), changes.Load(), "lift notifies once, the second call is a no-op")
	dp()
	assert.Equal(t, []string{"a", "c"}, rrView(t, reg, "gc"))
	dc()
	assert.Equal(t, []string{"a", "b", "c"}, rrView(t, reg, "gc"))
	assert.Equal(t, int64(6), changes.Load())
}

func TestRestrict_R26_NotificationFailureRollsBack(t *testing.T) {
	boom := errors.New("boom")
	reg := rrNew(t)
	rrReg(t, reg.Global(), "a", "G")
	s := rrScope(t, reg, "s")
	var fail atomic.Bool
	var calls atomic.Int64
	var views [][]string
	_, err := reg.Global().OnChange(func(context.Context) error {
		calls.Add(1)
		views = append(views, s.Tools())
		if fail.Load() {
			return boom
		}
		return nil
	})
	require.NoError(t, err)
	fail.Store(true)
	d, err := s.Restrict(runtime.Restriction{Deny: []string{"a"}})
	assert.ErrorIs(t, err, boom)
	assert.Nil(t, d)
	assert.Equal(t, int64(2), calls.Load(), "announce + rollback")
	assert.Equal(t, [][]string{{}, {"a"}}, views)
	assert.Equal(t, []string{"a"}, rrView(t, reg, "s"))
	fail.Store(false)
	_, err = s.Restrict(runtime.Restriction{Deny: []string{"a"}})
	require.NoError(t, err)
	assert.Equal(t, []string{}, rrView(t, reg, "s"))
}

func TestRestrict_R35_ShadowPosition(t *testing.T) {
	cases := []struct {
		name     string
		restrict *runtime.Restriction
		want     []string
	}{
		{"shadow takes the shadowed entry's position", nil, []string{"a=G", "b=S", "c=G", "own=S"}},
		{"shadow of a restricted-away entry is appended", &runtime.Restriction{Deny: []string{"b"}}, []string{"a=G", "c=G", "own=S", "b=S"}},
		{"allow-list hiding it too", &runtime.Restriction{Allow: []string{"a"}}, []string{"a=G", "own=S", "b=S"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := rrNew(t)
			for _, n := range []string{"a", "b", "c"} {
				rrReg(t, reg.Global(), n, "G")
			}
			s := rrScope(t, reg, "s")
			rrReg(t, s, "own", "S")
			rrReg(t, s, "b", "S")
			if tc.restrict != nil {
				_, err := s.Restrict(*tc.restrict)
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, rrViewTags(t, reg, "s"))
		})
	}
	t.Run("ancestor restriction appends the parent's shadow for the child", func(t *testing.T) {
		reg := rrNew(t)
		for _, n := range []string{"a", "b", "c"} {
			rrReg(t, reg.Global(), n, "G")
		}
		p := rrScope(t, reg, "p")
		c := rrScope(t, p, "c")
		rrReg(t, p, "b", "P")
		rrReg(t, c, "b", "C")
		assert.Equal(t, []string{"a=G", "b=C", "c=G"}, rrViewTags(t, reg, "c"))
		_, err := p.Restrict(runtime.Restriction{Deny: []string{"b"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"a=G", "c=G", "b=P"}, rrViewTags(t, reg, "p"), "p's own b is exempt but appended")
		assert.Equal(t, []string{"a=G", "c=G", "b=C"}, rrViewTags(t, reg, "c"))
	})
	t.Run("re-registered name moves to the end", func(t *testing.T) {
		reg := rrNew(t)
		for _, n := range []string{"a", "b", "c"} {
			rrReg(t, reg.Global(), n, "G")
		}
		s := rrScope(t, reg, "s")
		d := rrReg(t, s, "a", "S")
		assert.Equal(t, []string{"a=S", "b=G", "c=G"}, rrViewTags(t, reg, "s"))
		d()
		rrReg(t, s, "a", "S2")
		assert.Equal(t, []string{"a=S2", "b=G", "c=G"}, rrViewTags(t, reg, "s"), "a shadow still takes the inherited position")
		dg := rrReg(t, reg.Global(), "z", "G")
		_ = dg
	})
}
