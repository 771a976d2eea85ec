package jsonv

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
)

func TestDecode_OrderedTree(t *testing.T) {
	v, err := Decode([]byte(` {"b":[1,"x\n",true,false,null],"a":{"z":1.50},"b":{"k":[]}} `))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if !reflect.DeepEqual(o.Keys, []string{"b", "a"}) || o.Len() != 2 {
		t.Fatalf("keys %q: JSON.parse keeps the first position", o.Keys)
	}
	b, ok := o.Get("b")
	if !ok || !reflect.DeepEqual(b, &Object{Keys: []string{"k"}, Values: []any{[]any{}}}) {
		t.Fatalf("b = %#v: JSON.parse keeps the last value", b)
	}
	a, _ := o.Get("a")
	if z, _ := a.(*Object).Get("z"); z != json.Number("1.50") {
		t.Fatalf("z = %#v", z)
	}
	if _, ok := o.Get("missing"); ok {
		t.Fatal("Get(missing) found")
	}
	var nilObj *Object
	if _, ok := nilObj.Get("a"); ok || nilObj.Len() != 0 {
		t.Fatal("nil *Object")
	}
	if _, ok := (&Object{Keys: []string{"a"}}).Get("a"); ok {
		t.Fatal("malformed *Object")
	}
}

func TestDecode_LargeObjectDuplicates(t *testing.T) {
	text := `{`
	for i := range 30 {
		text += `"k` + string(rune('a'+i)) + `":` + strconv.Itoa(i) + `,`
	}
	text += `"ka":"last"}`
	v, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if o.Len() != 30 || o.Keys[0] != "ka" || o.Values[0] != "last" {
		t.Fatalf("len %d first %q=%v", o.Len(), o.Keys[0], o.Values[0])
	}
}

func TestDecodeStd_EncodingJSONShape(t *testing.T) {
	v, err := DecodeStd([]byte(`{"a":[1,{"b":"\u00e9"}],"a":[2],"n":null}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": []any{json.Number("2")}, "n": nil}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("DecodeStd = %#v", v)
	}
	for _, bad := range []string{`-0`, `{"a":[-0.0]}`, `{`, ``} {
		if _, err := DecodeStd([]byte(bad)); !errors.Is(err, ErrNotLossless) {
			t.Errorf("DecodeStd(%q) err = %v", bad, err)
		}
		if _, err := Decode([]byte(bad)); !errors.Is(err, ErrNotLossless) {
			t.Errorf("Decode(%q) err = %v", bad, err)
		}
	}
}

func TestNumbers_ExactDecimal(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		equal bool
	}{
		{"1", "1.0", true}, {"1", "1e0", true}, {"10", "1e1", true}, {"0.01", "1e-2", true},
		{"100", "1.00E+2", true}, {"0", "0.000e99", true}, {"-0", "0", true},
		{"-1.5", "-15e-1", true}, {"1", "-1", false}, {"1", "2", false}, {"0.1", "0.10000000000000001", false},
		{"12", "120e-1", true}, {"123", "12.3e1", true}, {"1e400", "10e399", true}, {"1e400", "1e401", false},
		{"9007199254740993", "9007199254740992", false},
	} {
		if got := numEqual(tc.a, tc.b); got != tc.equal {
			t.Errorf("numEqual(%s, %s) = %v", tc.a, tc.b, got)
		}
		if got := numEqual([]byte(tc.b), tc.a); got != tc.equal {
			t.Errorf("numEqual(%s, %s) = %v (swapped)", tc.b, tc.a, got)
		}
	}
	for lit, want := range map[string]bool{
		"0": true, "-3": true, "1.0": true, "1.5": false, "15e-1": false, "150e-2": false, "1.5e1": true,
		"1e-5": false, "0.0e-9": true, "1e999999999999999999": true, "12.3400e2": true, "12.3401e2": false,
	} {
		if got := numIntegral(lit); got != want {
			t.Errorf("numIntegral(%s) = %v", lit, got)
		}
	}
	for lit, want := range map[string]bool{
		"1e308": true, "1.7976931348623157e308": true, "1e309": false, "-1e309": false, "1e-400": true,
		"123": true,
	} {
		if got := numFinite(lit); got != want {
			t.Errorf("numFinite(%s) = %v", lit, got)
		}
	}
}

func TestEncode_R47_StringEscapes(t *testing.T) {
	in := "\b\f\n\r\t\x00\x1f\x7f\"\\/"
	want := `"\b\f\n\r\t\u0000\u001f` + "\x7f" + `\"\\/"`
	if got := string(mustEncode(in)); got != want {
		t.Fatalf("Encode(%q) = %s, want %s", in, got, want)
	}
	// The same string spelled with every escape form canonicalizes equally.
	text := `"\b\f\n\r\t\u0000\u001F\u007f\"\\\/"`
	if got := string(mustEncode(json.RawMessage(text))); got != want {
		t.Fatalf("Encode(raw) = %s, want %s", got, want)
	}
	if v, _ := Decode([]byte(text)); v != in {
		t.Fatalf("Decode = %q", v)
	}
	for _, bad := range []string{`"\u12G4"`, `"\u12"`, `"\`, `"abc`} {
		if Valid([]byte(bad)) {
			t.Errorf("Valid(%s)", bad)
		}
	}
}

type dominanceA struct {
	Name string `json:"name"`
	X    int
}
type dominanceB struct {
	Name string
	X    int
	Y    int `json:"y"`
}
type dominance struct {
	dominanceA
	*dominanceB
	Y string // shallower than dominanceB.Y: wins
}

func TestForType_EmbeddedDominance(t *testing.T) {
	got, err := ForType(reflect.TypeFor[dominance](), false)
	if err != nil {
		t.Fatal(err)
	}
	// name: tagged A.name and untagged B.Name differ; X: a tie at the same
	// depth, dropped; Y: the outer field beats nothing (B's is "y").
	want := `{"type":"object","properties":{"name":{"type":"string"},"Name":{"type":"string"},"y":{"type":"integer"},"Y":{"type":"string"}},"required":["name","Name","y","Y"],"additionalProperties":false}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Cross-check the names and their order with encoding/json.
	js, _ := json.Marshal(dominance{dominanceB: &dominanceB{}})
	tree, _ := Decode(js)
	if keys := tree.(*Object).Keys; !reflect.DeepEqual(keys, []string{"name", "Name", "y", "Y"}) {
		t.Fatalf("encoding/json writes %s", js)
	}
}

func TestForType_MapValueCheck(t *testing.T) {
	type badValue struct {
		F func() `json:"f"`
	}
	if _, err := ForType(reflect.TypeFor[map[string]badValue](), false); err == nil {
		t.Fatal("map of struct holding a func accepted")
	}
	if _, err := ForType(reflect.TypeFor[map[string][]*complex64](), false); err == nil {
		t.Fatal("map of complex accepted")
	}
	if _, err := ForType(reflect.TypeFor[map[string]map[bool]int](), false); err == nil {
		t.Fatal("nested bad key accepted")
	}
	if _, err := ForType(reflect.TypeFor[map[string]map[string]json.RawMessage](), false); err != nil {
		t.Fatal(err)
	}
}

func TestSchema_ConcurrentUse(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"a":{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"integer"}]}}},"required":["a"]}`)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				ok := []byte(`{"a":["x",1]}`)
				bad := []byte(`{"a":[true]}`)
				if got := s.Validate(ok, ""); got != nil {
					t.Errorf("g%d/%d: %q", g, i, got)
				}
				if got := s.Validate(bad, ""); len(got) != 1 {
					t.Errorf("g%d/%d: %q", g, i, got)
				}
				if _, err := Encode(map[string]any{"g": g, "i": i}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}
