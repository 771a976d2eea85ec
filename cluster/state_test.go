package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// sampleState is a tree with a sub-agent, a mount, a guard and two
// restrictions (one with an empty, present Allow).
func sampleState() *TreeState {
	t := NewTreeState("root")
	t.Seq = 5
	t.Scopes[0].Mutations = []MutationState{
		{ID: "m1", Kind: KindMount, CallID: "c1", Entry: "echo", Config: json.RawMessage(`{"name":"say","prefix":"root:"}`), Tool: "say"},
		{ID: "m2", Kind: KindGuard, Entry: "deny", Config: json.RawMessage(`{"tool":"g1","reason":"not here"}`)},
	}
	t.Scopes = append(t.Scopes,
		ScopeState{Key: "child", Parent: "root", ID: "m3", Mutations: []MutationState{
			{ID: "m4", Kind: KindRestrict, Deny: []string{"g2"}},
		}},
		ScopeState{Key: "grandchild", Parent: "child", ID: "m5", Mutations: []MutationState{
			{ID: "m6", Kind: KindRestrict, Allow: []string{}},
		}},
	)
	return t
}

func TestTreeState_Item2_EncodeDecodeRoundTrip(t *testing.T) {
	in := sampleState()
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeTreeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in %+v\nout %+v", in, out)
	}
	if a := out.Scopes[2].Mutations[0].Allow; a == nil || len(a) != 0 {
		t.Fatalf("an empty Allow must stay present and empty, got %#v", a)
	}
	if d := out.Scopes[2].Mutations[0].Deny; d != nil {
		t.Fatalf("an absent Deny must stay absent, got %#v", d)
	}
	c := out.Clone()
	c.Scopes[1].Mutations[0].Deny[0] = "changed"
	if out.Scopes[1].Mutations[0].Deny[0] != "g2" {
		t.Fatal("Clone shares a list with its original")
	}
}

func TestTreeState_Item2_DecodeRefusesBadState(t *testing.T) {
	cases := map[string]string{
		"not json":            `{`,
		"trailing":            `{"format":1,"tree":"a","seq":0,"scopes":[{"key":"a"}]} {}`,
		"unknown field":       `{"format":1,"tree":"a","seq":0,"scopes":[{"key":"a"}],"x":1}`,
		"wrong format":        `{"format":2,"tree":"a","seq":0,"scopes":[{"key":"a"}]}`,
		"no root":             `{"format":1,"tree":"a","seq":0,"scopes":[]}`,
		"root not first":      `{"format":1,"tree":"a","seq":0,"scopes":[{"key":"b","parent":"a"},{"key":"a"}]}`,
		"child before parent": `{"format":1,"tree":"a","seq":0,"scopes":[{"key":"a"},{"key":"c","parent":"b"},{"key":"b","parent":"a"}]}`,
		"repeated key":        `{"format":1,"tree":"a","seq":0,"scopes":[{"key":"a"},{"key":"a","parent":"a"}]}`,
		"repeated id":         `{"format":1,"tree":"a","seq":0,"scopes":[{"key":"a","mutations":[{"id":"m1","kind":"restrict","deny":["x"]},{"id":"m1","kind":"restrict","deny":["y"]}]}]}`,
		"unknown kind":        `{"format":1,"tree":"a","seq":0,"scopes":[{"key":"a","mutations":[{"id":"m1","kind":"wipe"}]}]}`,
		"no-op restriction":   `{"format":1,"tree":"a","seq":0,"scopes":[{"key":"a","mutations":[{"id":"m1","kind":"restrict"}]}]}`,
		"mount, no entry":     `{"format":1,"tree":"a","seq":0,"scopes":[{"key":"a","mutations":[{"id":"m1","kind":"mount"}]}]}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeTreeState([]byte(in)); !errors.Is(err, ErrState) {
				t.Fatalf("err = %v, want ErrState", err)
			}
		})
	}
}

func FuzzDecodeTreeState(f *testing.F) {
	b, _ := sampleState().Encode()
	f.Add(b)
	f.Add([]byte(`{"format":1,"tree":"a","seq":0,"scopes":[{"key":"a"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		st, err := DecodeTreeState(in)
		if err != nil {
			return
		}
		again, err := st.Encode()
		if err != nil {
			t.Fatalf("a decoded state does not encode: %v", err)
		}
		st2, err := DecodeTreeState(again)
		if err != nil || !reflect.DeepEqual(st, st2) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

// globalRegistry is the test members' registry: global tools g1, g2.
func globalRegistry(t testing.TB) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"g1", "g2"} {
		def, err := runtime.NewTool(n, "global tool", func(ctx context.Context, in struct{}, _ *runtime.RunContext) (string, error) { return "ran", nil })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Global().Register(def); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	return reg
}

func TestRebuild_Item2_TreeFromStateHoldsItsRules(t *testing.T) {
	reg := globalRegistry(t)
	b, err := Rebuild(reg, testCatalog(t), sampleState())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	root, child, grand := b.Scopes["root"], b.Scopes["child"], b.Scopes["grandchild"]
	if got := root.Execute(ctx, runtime.Call{Name: "say", Arguments: json.RawMessage(`{"text":"hi"}`)}); got.IsError() || got.Text() != "root:hi" {
		t.Fatalf("mounted tool: %v %q", got.IsError(), got.Text())
	}
	if got := root.Execute(ctx, runtime.Call{Name: "g1"}); !got.IsError() || got.ErrorMessage() != "not here" {
		t.Fatalf("guard: %q", got.ErrorMessage())
	}
	if got := child.Tools(); !reflect.DeepEqual(got, []string{"g1", "say"}) {
		t.Fatalf("child view (deny g2) = %q", got)
	}
	if got := grand.Tools(); len(got) != 0 {
		t.Fatalf("grandchild view (allow none) = %q", got)
	}
	if !b.Undo("m4") || b.Undo("m4") {
		t.Fatal("Undo must remove m4 exactly once")
	}
	if got := child.Tools(); len(got) != 3 {
		t.Fatalf("child view after undoing its restriction = %q", got)
	}
	b.Dispose("root")
	select {
	case <-grand.Done():
	default:
		t.Fatal("disposing the built tree left a scope alive")
	}
}

func TestRebuild_Item2_FailureNamesTheMutationAndLeavesNothing(t *testing.T) {
	reg := globalRegistry(t)
	st := sampleState()
	st.Scopes[1].Mutations[0].Deny = []string{"no_such_tool"}
	_, err := Rebuild(reg, testCatalog(t), st)
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), `scope "child": mutation "m4"`) {
		t.Fatalf("err = %v", err)
	}
	if _, ok := reg.Scope("root"); ok {
		t.Fatal("a failed rebuild left the root scope registered")
	}
}
