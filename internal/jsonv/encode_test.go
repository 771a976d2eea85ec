package jsonv

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var negZero = math.Copysign(0, -1)

type encodeCase struct {
	name string
	in   any
	want string // canonical output; "" means rejected
}

func runEncodeCases(t *testing.T, cases []encodeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Encode(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("Encode(%#v) = %s, want an error", tc.in, got)
				}
				if !errors.Is(err, ErrNotLossless) {
					t.Fatalf("Encode error %v does not wrap ErrNotLossless", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Encode(%#v): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Fatalf("Encode(%#v) = %s, want %s", tc.in, got, tc.want)
			}
			again, err := Encode(json.RawMessage(got))
			if err != nil || string(again) != string(got) {
				t.Fatalf("canonical form is not a fixed point: %s -> %s, %v", got, again, err)
			}
			if !Valid(got) {
				t.Fatalf("Valid(%s) = false", got)
			}
		})
	}
}

func TestEncode_R47_AcceptsScalars(t *testing.T) {
	runEncodeCases(t, []encodeCase{
		{"nil", nil, `null`},
		{"true", true, `true`},
		{"false", false, `false`},
		{"string", "héllo", `"héllo"`},
		{"string escapes", "a\"b\\c\n\t\x01</>&\u2028", `"a\"b\\c\n\t\u0001</>&` + "\u2028" + `"`},
		{"string invalid utf8", "a\xffb", `"a` + "\uFFFD" + `b"`},
		{"float64", 1.5, `1.5`},
		{"float64 integral", 3.0, `3`},
		{"float64 positive zero", 0.0, `0`},
		{"float64 small", 1e-7, `1e-7`},
		{"float64 large", 1e21, `1e+21`},
		{"float64 max", math.MaxFloat64, `1.7976931348623157e+308`},
		{"json.Number int", json.Number("12"), `12`},
		{"json.Number kept verbatim", json.Number("1.50E+3"), `1.50E+3`},
		{"json.Number zero", json.Number("0.0"), `0.0`},
		{"json.Number tiny positive literal", json.Number("1e-400"), `1e-400`},
		{"int", int(-7), `-7`},
		{"int8", int8(-8), `-8`},
		{"int16", int16(16), `16`},
		{"int32", int32(32), `32`},
		{"int64 min", int64(math.MinInt64), `-9223372036854775808`},
		{"uint", uint(1), `1`},
		{"uint8", uint8(255), `255`},
		{"uint16", uint16(16), `16`},
		{"uint32", uint32(32), `32`},
		{"uint64 max", uint64(math.MaxUint64), `18446744073709551615`},
		{"uintptr", uintptr(9), `9`},
	})
}

func TestEncode_R47_AcceptsContainers(t *testing.T) {
	shared := map[string]any{"x": 1}
	runEncodeCases(t, []encodeCase{
		{"empty slice", []any{}, `[]`},
		{"nil slice is null", []any(nil), `null`},
		{"empty map", map[string]any{}, `{}`},
		{"nil map is null", map[string]any(nil), `null`},
		{"map keys sorted", map[string]any{"b": 1, "a": 2, "é": 3, "A": 4}, `{"A":4,"a":2,"b":1,"é":3}`},
		{"nested", map[string]any{"a": []any{1, "x", nil, map[string]any{"k": false}}}, `{"a":[1,"x",null,{"k":false}]}`},
		{"sibling reuse is not a cycle", []any{shared, shared}, `[{"x":1},{"x":1}]`},
		{"raw inside map", map[string]any{"r": json.RawMessage(` { "z" : 1 , "a" : [ ] } `)}, `{"r":{"z":1,"a":[]}}`},
		{"many keys", manyKeys(40), manyKeysJSON(40)},
	})
}

func manyKeys(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("k%02d", i)] = i
	}
	return m
}

func manyKeysJSON(n int) string {
	parts := make([]string, n)
	for i := range n {
		parts[i] = fmt.Sprintf(`"k%02d":%d`, i, i)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func mustEncode(v any) []byte {
	b, err := Encode(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestEncode_R47_RawMessage(t *testing.T) {
	runEncodeCases(t, []encodeCase{
		{"compact kept", json.RawMessage(`{"path":"x"}`), `{"path":"x"}`},
		{"key order kept", json.RawMessage(`{"b":1,"a":2}`), `{"b":1,"a":2}`},
		{"whitespace removed", json.RawMessage(" \n{ \"a\" :\t[ 1 , 2 ] }\r\n"), `{"a":[1,2]}`},
		{"escapes canonicalized", json.RawMessage(`"\u0041\/\u00e9\ud83d\ude00\u001f\""`), `"A/é😀\u001f\""`},
		{"lone surrogate replaced", json.RawMessage(`"\ud800x"`), `"` + "\uFFFD" + `x"`},
		{"invalid utf8 replaced", json.RawMessage("\"\xff\""), `"` + "\uFFFD" + `"`},
		{"number literal verbatim", json.RawMessage(`[1.0,1E5,-0.5,0e0]`), `[1.0,1E5,-0.5,0e0]`},
		{"duplicate keys like JSON.parse", json.RawMessage(`{"a":1,"b":2,"a":3}`), `{"a":3,"b":2}`},
		{"duplicate keys after unescape", json.RawMessage(`{"a":1,"\u0061":2}`), `{"a":2}`},
		{"duplicate keys nested", json.RawMessage(`[{"k":{"x":1,"x":{"y":2}}}]`), `[{"k":{"x":{"y":2}}}]`},
		{"scalar", json.RawMessage(`"s"`), `"s"`},
		{"empty containers", json.RawMessage(`[{},[]]`), `[{},[]]`},
		{"nil is rejected", json.RawMessage(nil), ""},
		{"empty is rejected", json.RawMessage(``), ""},
		{"whitespace only is rejected", json.RawMessage(`  `), ""},
		{"two values are rejected", json.RawMessage(`1 2`), ""},
		{"trailing comma", json.RawMessage(`[1,]`), ""},
		{"unquoted key", json.RawMessage(`{a:1}`), ""},
		{"bad literal", json.RawMessage(`tru`), ""},
		{"leading zero", json.RawMessage(`01`), ""},
		{"NaN literal", json.RawMessage(`NaN`), ""},
		{"raw control character", json.RawMessage("\"a\x01\""), ""},
		{"bad escape", json.RawMessage(`"\x"`), ""},
		{"unterminated", json.RawMessage(`{"a":[1}`), ""},
	})
}

func TestEncode_R47_RejectsNegativeZero(t *testing.T) {
	runEncodeCases(t, []encodeCase{
		{"float64", negZero, ""},
		{"float64 nested", []any{1, map[string]any{"z": negZero}}, ""},
		{"json.Number -0", json.Number("-0"), ""},
		{"json.Number -0.0", json.Number("-0.000"), ""},
		{"json.Number -0e5", json.Number("-0e5"), ""},
		{"raw -0", json.RawMessage(`-0`), ""},
		{"raw nested -0.0E-3", json.RawMessage(`{"a":[-0.0E-3]}`), ""},
		{"tiny negative is not zero", json.Number("-0.001"), `-0.001`},
	})
}

func TestEncode_R47_RejectsNonFinite(t *testing.T) {
	runEncodeCases(t, []encodeCase{
		{"NaN", math.NaN(), ""},
		{"+Inf", math.Inf(1), ""},
		{"-Inf", math.Inf(-1), ""},
		{"nested NaN", map[string]any{"a": []any{math.NaN()}}, ""},
	})
}

func TestEncode_R47_RejectsInvalidNumberLiteral(t *testing.T) {
	runEncodeCases(t, []encodeCase{
		{"empty", json.Number(""), ""},
		{"plus sign", json.Number("+1"), ""},
		{"hex", json.Number("0x1"), ""},
		{"trailing dot", json.Number("1."), ""},
		{"space", json.Number(" 1"), ""},
		{"NaN", json.Number("NaN"), ""},
	})
}

func TestEncode_R47_RejectsOtherGoTypes(t *testing.T) {
	type myInt int
	type myString string
	var p *int
	runEncodeCases(t, []encodeCase{
		{"struct", struct{ A int }{1}, ""},
		{"pointer", &struct{}{}, ""},
		{"nil pointer", p, ""},
		{"typed map", map[string]string{"a": "b"}, ""},
		{"int-keyed map", map[int]any{1: 2}, ""},
		{"typed slice", []string{"a"}, ""},
		{"byte slice", []byte("x"), ""},
		{"array", [1]any{1}, ""},
		{"func", func() {}, ""},
		{"chan", make(chan int), ""},
		{"float32", float32(1), ""},
		{"complex", complex(1, 2), ""},
		{"named int", myInt(1), ""},
		{"named string", myString("x"), ""},
		{"time", time.Unix(0, 0), ""},
		{"error", errors.New("x"), ""},
		{"*Object (EncodeTree only)", &Object{}, ""},
		{"nested struct", map[string]any{"a": []any{struct{}{}}}, ""},
	})
}

func TestEncode_R47_RejectsCycles(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	s := make([]any, 1)
	s[0] = s
	deep := map[string]any{}
	cur := deep
	for range 2000 {
		next := map[string]any{}
		cur["n"] = next
		cur = next
	}
	cur["loop"] = deep
	for name, v := range map[string]any{"map": m, "slice": s, "long cycle": deep, "via slice": []any{m}} {
		t.Run(name, func(t *testing.T) {
			_, err := Encode(v)
			if !errors.Is(err, ErrNotLossless) {
				t.Fatalf("Encode(cycle) error = %v, want ErrNotLossless", err)
			}
		})
	}
}

func TestEncode_R45_OutputNeverAliasesInput(t *testing.T) {
	raw := json.RawMessage(`{"path":"x"}`)
	out, err := Encode(raw)
	if err != nil {
		t.Fatal(err)
	}
	out[2] = 'X'
	if string(raw) != `{"path":"x"}` {
		t.Fatalf("input mutated through output: %s", raw)
	}
	in := map[string]any{"a": []any{"b"}}
	out, _ = Encode(in)
	out[0] = '['
	if !reflect.DeepEqual(in, map[string]any{"a": []any{"b"}}) {
		t.Fatal("input changed")
	}
}

func TestEncode_R47_CanonicalAgreesWithEncodingJSON(t *testing.T) {
	// For values encoding/json can express, Encode's output decodes to
	// the same tree encoding/json's output decodes to.
	vals := []any{
		map[string]any{"k": []any{1.25, "s", true, nil, map[string]any{"z": 1e-9}}},
		[]any{0.1, 100.0, 1e20, 1e21, 123456789.0, -5.5e-7},
	}
	for _, v := range vals {
		ours := mustEncode(v)
		std, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(ours, &a); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(std, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("ours %s, encoding/json %s", ours, std)
		}
	}
}

func TestEncodeTree_OrderedObjects(t *testing.T) {
	o := &Object{Keys: []string{"z", "a"}, Values: []any{1, &Object{Keys: []string{"y"}, Values: []any{[]any{}}}}}
	got, err := EncodeTree(o)
	if err != nil || string(got) != `{"z":1,"a":{"y":[]}}` {
		t.Fatalf("EncodeTree = %s, %v", got, err)
	}
	for name, bad := range map[string]*Object{
		"duplicate keys":  {Keys: []string{"a", "a"}, Values: []any{1, 2}},
		"length mismatch": {Keys: []string{"a"}},
		"nil":             nil,
	} {
		if _, err := EncodeTree(bad); !errors.Is(err, ErrNotLossless) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestAppendCanonical(t *testing.T) {
	got, err := AppendCanonical([]byte("x="), []byte(` [ 1 , {"a" : "b"} ] `))
	if err != nil || string(got) != `x=[1,{"a":"b"}]` {
		t.Fatalf("AppendCanonical = %s, %v", got, err)
	}
	got, err = AppendCanonical([]byte("x="), []byte(`[-0]`))
	if err == nil || string(got) != "x=" {
		t.Fatalf("AppendCanonical(-0) = %s, %v", got, err)
	}
}

func TestValid_R47(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":[1,2,{"b":null}]}`: true,
		` "x" `:                  true,
		`{"a":1,"a":2}`:          true, // Encode resolves duplicates
		``:                       false,
		`-0`:                     false,
		`[1,2`:                   false,
		`{"a":1}x`:               false,
		"\"\xff\"":               true, // replaced by U+FFFD on Encode
	} {
		if got := Valid([]byte(in)); got != want {
			t.Errorf("Valid(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestValid_DoesNotAllocate(t *testing.T) {
	b := []byte(`{"path":"x","n":[1,2,3],"o":{"k":true}}`)
	if n := testing.AllocsPerRun(100, func() { Valid(b) }); n != 0 {
		t.Fatalf("Valid allocates %v times", n)
	}
}

func nested(depth int, open, close string) []byte {
	return []byte(strings.Repeat(open, depth) + strings.Repeat(close, depth))
}

func TestEncode_R34_DeepNesting(t *testing.T) {
	// 100,000 levels: an error, never a crash.
	for _, tc := range []struct{ open, close string }{{"[", "]"}, {`{"a":`, "}"}} {
		b := nested(100_000, tc.open, tc.close)
		if _, err := Encode(json.RawMessage(b)); !errors.Is(err, ErrTooDeep) {
			t.Fatalf("Encode(100k deep) err = %v, want ErrTooDeep", err)
		}
		if Valid(b) {
			t.Fatal("Valid(100k deep) = true")
		}
		if _, err := Decode(b); !errors.Is(err, ErrTooDeep) {
			t.Fatalf("Decode(100k deep) err = %v", err)
		}
		if _, err := DecodeStd(b); !errors.Is(err, ErrTooDeep) {
			t.Fatalf("DecodeStd(100k deep) err = %v", err)
		}
	}
	// Unclosed 100,000-deep prefix: also an error.
	if Valid([]byte(strings.Repeat("[", 100_000))) {
		t.Fatal("Valid(unclosed) = true")
	}
	// Exactly MaxDepth is accepted, one more is not.
	if !Valid(nested(MaxDepth, "[", "]")) || Valid(nested(MaxDepth+1, "[", "]")) {
		t.Fatal("MaxDepth boundary wrong for bytes")
	}
	var v any = []any{}
	for range MaxDepth - 1 {
		v = []any{v}
	}
	if _, err := Encode(v); err != nil {
		t.Fatalf("Encode(MaxDepth Go value): %v", err)
	}
	if _, err := Encode([]any{v}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("Encode(MaxDepth+1 Go value) err = %v", err)
	}
	// Raw text embedded deep inside Go containers counts toward the limit.
	if _, err := Encode([]any{json.RawMessage(nested(MaxDepth, "[", "]"))}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("embedded raw depth not counted: %v", err)
	}
}

// deepSchema builds a parameter schema nested depth levels of
// properties.child deep, as map[string]any.
func deepSchema(depth int) map[string]any {
	leaf := map[string]any{"type": "string", "description": "leaf"}
	for range depth {
		leaf = map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"child": leaf},
			"required":             []any{"child"},
			"additionalProperties": false,
		}
	}
	return leaf
}

func TestEncode_R34_DeepParameterSchemaRoundTrips(t *testing.T) {
	// 5,000 schema levels are 10,000 JSON levels (node + properties).
	const levels = 4_999
	schema := deepSchema(levels)
	b, err := Encode(schema)
	if err != nil {
		t.Fatalf("Encode(deep schema): %v", err)
	}
	back, err := DecodeStd(b)
	if err != nil {
		t.Fatalf("DecodeStd: %v", err)
	}
	if !reflect.DeepEqual(back, schema) {
		t.Fatal("deep schema did not round-trip")
	}
	again, err := Encode(json.RawMessage(b))
	if err != nil || string(again) != string(b) {
		t.Fatalf("raw round trip: %v", err)
	}
	s, viol := CompileSchema(json.RawMessage(b))
	if viol != nil {
		t.Fatalf("CompileSchema(deep): %v", viol[:1])
	}
	if string(s.JSON()) != string(b) {
		t.Fatal("compiled schema JSON differs")
	}
}

func TestEncode_R34_FiveThousandDeepArrays(t *testing.T) {
	var v any = "leaf"
	for range 5_000 {
		v = []any{v, map[string]any{}}
	}
	b, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeStd(b)
	if err != nil || !reflect.DeepEqual(back, v) {
		t.Fatalf("5,000-deep value did not round-trip: %v", err)
	}
}
