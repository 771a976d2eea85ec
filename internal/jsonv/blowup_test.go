package jsonv

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// Shared sub-schemas (R100 allows a sub-schema reused in sibling
// positions) arrive as a DAG of Go maps. JSON text repeats each use, so n
// levels that each use the one below twice are 2^n copies: every walk must
// stay linear in the distinct input and refuse past MaxSharedExpansion
// (issue 11 §4).

// dagSchema returns levels object schemas, each declaring two properties
// that share the schema below.
func dagSchema(levels int) map[string]any {
	s := map[string]any{"type": "string"}
	for range levels {
		s = map[string]any{"type": "object", "properties": map[string]any{"a": s, "b": s}}
	}
	return s
}

// bounded runs f off the test goroutine and fails with a goroutine dump if
// it has not returned after 20 s. It also fails if f allocated more than
// maxAlloc bytes: the work must stay linear in the (tiny) input.
func bounded(t *testing.T, what string, maxAlloc uint64, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		t.Fatalf("%s did not return within 20s", what)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > maxAlloc {
		t.Errorf("%s allocated %d MB, want at most %d MB", what, got>>20, maxAlloc>>20)
	}
}

const blowupAlloc = 256 << 20

func TestSchema_R100_SharedSubschemaBounded(t *testing.T) {
	schema := dagSchema(81)
	bounded(t, "CompileSchema of 81 shared levels", blowupAlloc, func() {
		s, viol := CompileSchema(schema)
		if s != nil || len(viol) != 1 || viol[0] != tooLargeViolation {
			t.Errorf("CompileSchema = %v, %q", s, viol)
		}
	})
	bounded(t, "Encode of 81 shared levels", blowupAlloc, func() {
		if _, err := Encode(schema); !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrNotLossless) {
			t.Errorf("Encode err = %v", err)
		}
		if _, err := EncodeTree(schema); !errors.Is(err, ErrTooLarge) {
			t.Errorf("EncodeTree err = %v", err)
		}
	})
	bounded(t, "ValidateValue of 81 shared levels", blowupAlloc, func() {
		s := mustCompile(t, `{"type":"object"}`)
		if got := s.ValidateValue(schema, "value"); len(got) != 1 || got[0] != `"value" must be a lossless JSON value` {
			t.Errorf("ValidateValue = %q", got)
		}
	})
}

// TestSchema_R100_SharedSubschemaWithinBound: moderate sharing is fine and
// means exactly what the expanded tree means.
func TestSchema_R100_SharedSubschemaWithinBound(t *testing.T) {
	for _, levels := range []int{1, 5, 11} {
		dag := dagSchema(levels)
		text, err := json.Marshal(dag) // encoding/json expands it
		if err != nil {
			t.Fatal(err)
		}
		s, viol := CompileSchema(dag)
		if viol != nil {
			t.Fatalf("%d levels: %q", levels, viol)
		}
		tree, viol := CompileSchema(json.RawMessage(text))
		if viol != nil {
			t.Fatal(viol)
		}
		if string(s.JSON()) != string(tree.JSON()) || string(s.JSON()) != string(text) {
			t.Fatalf("%d levels: JSON differs", levels)
		}
		enc, err := Encode(dag)
		if err != nil || string(enc) != string(text) {
			t.Fatalf("%d levels: Encode = %v", levels, err)
		}
	}
	// A large distinct value may repeat as much as it holds otherwise.
	big := make([]any, 2*MaxSharedExpansion)
	for i := range big {
		big[i] = i
	}
	shared := make([]any, MaxSharedExpansion+10)
	for i := range shared {
		shared[i] = "x"
	}
	if _, err := Encode(map[string]any{"big": big, "s1": shared, "s2": shared}); err != nil {
		t.Fatalf("sharing less than the rest: %v", err)
	}
	// The first use is not tracked yet, the second is the one written
	// otherwise, so five uses repeat more than the rest.
	if _, err := Encode(map[string]any{"s1": shared, "s2": shared, "s3": shared, "s4": shared}); err != nil {
		t.Fatalf("four uses: %v", err)
	}
	if _, err := Encode(map[string]any{"s1": shared, "s2": shared, "s3": shared, "s4": shared, "s5": shared}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("sharing more than the rest: %v", err)
	}
}

// TestSchema_R100_CyclesStillCircular: tracking sharing does not hide a
// cycle, shallow or behind enough values to be tracked.
func TestSchema_R100_CyclesStillCircular(t *testing.T) {
	loop := map[string]any{"type": "object"}
	loop["properties"] = map[string]any{"self": loop}
	if _, viol := CompileSchema(loop); len(viol) != 1 || viol[0] != "schema.properties.self is circular" {
		t.Errorf("shallow cycle: %q", viol)
	}
	props := map[string]any{}
	for i := range 3 * sharedTrackAfter {
		props[strings.Repeat("k", 1+i%7)+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676))] = map[string]any{"type": "string"}
	}
	deep := map[string]any{"type": "object", "properties": props}
	props["zzzz-loop"] = deep
	viol := func() []string { _, v := CompileSchema(deep); return v }()
	if len(viol) != 1 || viol[0] != "schema.properties.zzzz-loop is circular" {
		t.Errorf("tracked cycle: %q", viol)
	}
	if _, err := Encode(deep); !errors.Is(err, errCycle) {
		t.Errorf("Encode of a cycle: %v", err)
	}
}

// dagType0 … dagType16: each struct uses the one below in two fields (named
// types, so their names stay short while their schemas double per level).
type dagType0 struct {
	A string `json:"a"`
	B string `json:"b"`
}
type dagType1 struct {
	A dagType0 `json:"a"`
	B dagType0 `json:"b"`
}
type dagType2 struct {
	A dagType1 `json:"a"`
	B dagType1 `json:"b"`
}
type dagType3 struct {
	A dagType2 `json:"a"`
	B dagType2 `json:"b"`
}
type dagType4 struct {
	A dagType3 `json:"a"`
	B dagType3 `json:"b"`
}
type dagType5 struct {
	A dagType4 `json:"a"`
	B dagType4 `json:"b"`
}
type dagType6 struct {
	A dagType5 `json:"a"`
	B dagType5 `json:"b"`
}
type dagType7 struct {
	A dagType6 `json:"a"`
	B dagType6 `json:"b"`
}
type dagType8 struct {
	A dagType7 `json:"a"`
	B dagType7 `json:"b"`
}
type dagType9 struct {
	A dagType8 `json:"a"`
	B dagType8 `json:"b"`
}
type dagType10 struct {
	A dagType9 `json:"a"`
	B dagType9 `json:"b"`
}
type dagType11 struct {
	A dagType10 `json:"a"`
	B dagType10 `json:"b"`
}
type dagType12 struct {
	A dagType11 `json:"a"`
	B dagType11 `json:"b"`
}
type dagType13 struct {
	A dagType12 `json:"a"`
	B dagType12 `json:"b"`
}
type dagType14 struct {
	A dagType13 `json:"a"`
	B dagType13 `json:"b"`
}
type dagType15 struct {
	A dagType14 `json:"a"`
	B dagType14 `json:"b"`
}
type dagType16 struct {
	A dagType15 `json:"a"`
	B dagType15 `json:"b"`
}

// TestForType_R100_SharedTypesBounded: a DAG of Go types (each struct
// using the one below in two fields) is derived once per type and refused
// past the bound, instead of building 2^n nodes.
func TestForType_R100_SharedTypesBounded(t *testing.T) {
	bounded(t, "ForType of 16 shared levels", blowupAlloc, func() {
		b, err := ForType(reflect.TypeFor[dagType16](), false)
		if err == nil || !strings.Contains(err.Error(), "expands to more than 65536 repeated values") {
			t.Errorf("ForType = %.80s…, %v", b, err)
		}
		if _, err := ForType(reflect.TypeFor[dagType16](), true); err == nil {
			t.Error("ForType root accepted")
		}
	})
	b, err := ForType(reflect.TypeFor[dagType4](), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, viol := CompileSchema(json.RawMessage(b)); viol != nil {
		t.Fatal(viol)
	}
	if n := strings.Count(string(b), `"a":{"type":"string"}`); n != 1<<4 {
		t.Fatalf("the shared type is written %d times, want 16", n)
	}
}
