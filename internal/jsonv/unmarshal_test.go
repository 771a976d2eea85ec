package jsonv

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Types the differential tests decode into.

type umInner struct {
	A string `json:"a"`
	B int    `json:"b"`
	C []int  `json:"c"`
	D *bool  `json:"d"`
}

type umNode struct {
	V    int      `json:"v"`
	Next *umNode  `json:"next"`
	Kids []umNode `json:"kids"`
	M    map[string]*umNode
}

type umString string

type umAll struct {
	S    string                `json:"s"`
	Bo   bool                  `json:"bo"`
	I    int                   // untagged: JSON name "I"
	I8   int8                  `json:"i8"`
	I16  int16                 `json:"i16"`
	I32  int32                 `json:"i32"`
	I64  int64                 `json:"i64,omitempty"`
	U    uint                  `json:"u"`
	U8   uint8                 `json:"u8"`
	U16  uint16                `json:"u16"`
	U32  uint32                `json:"u32,omitzero"`
	U64  uint64                `json:"u64"`
	Up   uintptr               `json:"up"`
	F32  float32               `json:"f32"`
	F64  float64               `json:"f64"`
	PS   *string               `json:"ps"`
	PPI  **int                 `json:"ppi"`
	SS   []string              `json:"ss"`
	SI   []umInner             `json:"si"`
	SP   []*umInner            `json:"sp"`
	SSS  [][]string            `json:"sss"`
	MI   map[string]int        `json:"mi"`
	MA   map[string]any        `json:"ma"`
	MS   map[string][]int      `json:"ms"`
	MP   map[string]*umInner   `json:"mp"`
	MN   map[umString]umString `json:"mn"`
	Any  any                   `json:"any"`
	PAny *any                  `json:"pany"`
	SAny []any                 `json:"sany"`
	In   umInner               `json:"in"`
	PIn  *umInner              `json:"pin"`
	Node *umNode               `json:"node"`
	K    int                   `json:"k"`  // reachable through U+212A KELVIN SIGN
	Sx   int                   `json:"sx"` // reachable through U+017F LONG S
	//lint:ignore SA5008 encoding/json names this field "-": the case under test
	Dash   int      `json:"-,"` // named "-"
	Skip   int      `json:"-"`  // ignored
	hidden int      //nolint:unused // unexported: ignored
	Ab     int      `json:"ab"` // first of a fold collision
	AB     int      `json:"AB"` // exact "AB" only
	Dot    int      `json:"a.b_c-d"`
	Named  umString `json:"named"`
	Empty  struct{} `json:"empty"`
	Str    string   `json:"str,omitempty"`
}

// umMedium is the 6-field struct of the benchmarks.
type umMedium struct {
	Path      string   `json:"path"`
	Line      int      `json:"line"`
	Recursive bool     `json:"recursive"`
	Limit     *int     `json:"limit,omitempty"`
	Tags      []string `json:"tags"`
	Ratio     float64  `json:"ratio"`
}

type umSmall struct {
	X string `json:"x"`
}

// umBig has enough fields for the map-based exact lookup.
type umBig struct {
	F00, F01, F02, F03, F04, F05, F06, F07, F08, F09 int
	F10, F11, F12, F13, F14, F15                     string
	Lower                                            int `json:"f00"`
}

var umFuzzTypes = []reflect.Type{
	reflect.TypeFor[umAll](),
	reflect.TypeFor[umInner](),
	reflect.TypeFor[umNode](),
	reflect.TypeFor[umMedium](),
	reflect.TypeFor[umSmall](),
	reflect.TypeFor[umBig](),
	reflect.TypeFor[*umAll](),
	reflect.TypeFor[[]int](),
	reflect.TypeFor[[]umInner](),
	reflect.TypeFor[map[string]string](),
	reflect.TypeFor[map[string]any](),
	reflect.TypeFor[map[string]umInner](),
	reflect.TypeFor[map[string]*umNode](),
	reflect.TypeFor[map[string][]int](),
	reflect.TypeFor[map[umString]any](),
	reflect.TypeFor[[]*umInner](),
	reflect.TypeFor[[][]any](),
	reflect.TypeFor[*umNode](),
	reflect.TypeFor[*int](),
	reflect.TypeFor[any](),
	reflect.TypeFor[string](),
	reflect.TypeFor[bool](),
	reflect.TypeFor[float32](),
	reflect.TypeFor[float64](),
	reflect.TypeFor[int8](),
	reflect.TypeFor[uint64](),
	reflect.TypeFor[int64](),
}

var umSeeds = []string{
	`{"x":"a"}`, `{"X":"a"}`, `{"x":"a","x":"b"}`, ` { "x" : "a" } `, `{"x":"a"}x`, `{"x":"a"} `,
	`{"x":null}`, `null`, ` null `, `nul`, `nulll`, ``, ` `, `{}`, `[]`, `{"x":1}`, `{"x":"\u0041\n\t\"\\\/\b\f\r"}`,
	`{"\u0078":"esc key"}`, `{"x":"\ud83d\ude00"}`, `{"x":"\ud800"}`, `{"x":"\udc00\ud800"}`, `{"x":"\ud800\u0041"}`,
	`{"x":"\ud800\ud800\udc00"}`, "{\"x\":\"\xff\xfe\"}", "{\"x\":\"caf\xc3\xa9\"}", "{\"x\":\"a\x01\"}", "{\"x\":\"\x7f\"}",
	"{\"\xff\":1}", `{"x":"\uZZZZ"}`, `{"x":"\q"}`, `{"x":"a`, `{"x":}`, `{"x" "a"}`, `{"x":"a",}`, `{,}`, `{"x":"a"]`,
	`{"path":"src/main.go","line":12,"recursive":true,"limit":5,"tags":["a","b"],"ratio":0.5}`,
	`{"PATH":"p","Line":1,"RECURSIVE":false,"limit":null,"tags":null,"ratio":-0}`,
	`{"path":"p","path":"q","tags":["a","b","c"],"tags":["d"],"tags":[]}`,
	`{"s":"x","bo":true,"I":-9223372036854775808,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807}`,
	`{"i8":128}`, `{"i8":-129}`, `{"u8":255}`, `{"u8":256}`, `{"u":-0}`, `{"i":-0}`, `{"I":1.0}`, `{"I":1e3}`, `{"I":1E+2}`,
	`{"u64":18446744073709551615}`, `{"u64":18446744073709551616}`, `{"I64":99999999999999999999999}`, `{"up":7}`,
	`{"f32":3.4028235e38}`, `{"f32":3.5e38}`, `{"f64":1e308}`, `{"f64":1e309}`, `{"f64":-1e400}`, `{"f64":1e-400}`,
	`{"f32":1e-50}`, `{"f64":-0.0}`, `{"f64":0.1}`, `{"f32":16777217}`, `{"f64":123456789012345678901234567890}`,
	`{"f64":01}`, `{"f64":-}`, `{"f64":1.}`, `{"f64":.5}`, `{"f64":+1}`, `{"f64":1e}`, `{"f64":0x10}`, `{"f64":NaN}`,
	`{"ps":"p","ppi":5}`, `{"ppi":null}`, `{"ps":null,"ps":"again"}`, `{"ppi":1,"ppi":null,"ppi":2}`,
	`{"ss":["a",null,"c"]}`, `{"ss":[1]}`, `{"ss":"a"}`, `{"ss":[]}`, `{"ss":null}`, `{"ss":["a",]}`, `{"ss":[,]}`,
	`{"si":[{"a":"x","b":1},{"c":[1,2]}],"si":[{"b":2},{"d":true}]}`, `{"si":[{"a":"1"},{"a":"2"}],"si":[{}],"si":[{},{}]}`,
	`{"sp":[{"a":"x"},null],"sp":[{"b":1}]}`, `{"sss":[["a"],[],null,["b","c"]]}`,
	`{"mi":{"a":1,"b":2,"a":3}}`, `{"mi":{"a":1},"mi":{"b":2}}`, `{"mi":{"a":1},"mi":null,"mi":{"c":3}}`, `{"mi":{"a":"x"}}`,
	`{"mi":{"\ud800":1,"\u00e9":2}}`, "{\"mi\":{\"\xff\":1}}", `{"mi":{1:2}}`, `{"mi":[]}`,
	`{"ma":{"a":[1,"x",true,null,{"b":{}}],"a":{}}}`, `{"ma":{"n":1e400}}`, `{"ma":{"n":-0}}`,
	`{"ms":{"a":[1,2],"a":[3]}}`, `{"ms":{"a":[1,2],"b":[3]}}`, `{"mp":{"a":{"a":"x"},"b":{"b":1}}}`,
	`{"mi":{"a":1,"b":null}}`, `{"a":{"a":"x","c":[1]},"b":{"b":1},"c":null}`, `{"a":[1,2],"b":[3],"c":null}`, `{"mp":{"a":{"a":"x"},"b":null}}`, `{"mn":{"k":"v"}}`,
	`{"any":{"a":[1,2,{"b":null}]}}`, `{"any":1,"any":"s","any":null,"any":[true]}`, `{"any":1e999}`,
	`{"pany":{"a":1}}`, `{"pany":null}`, `{"sany":[1,"a"],"sany":[{}]}`,
	`{"in":{"a":"x"},"in":{"b":1}}`, `{"in":null}`, `{"in":[]}`, `{"pin":{"a":"x"},"pin":{"b":1}}`, `{"pin":null}`,
	`{"node":{"v":1,"next":{"v":2,"next":{"v":3}},"kids":[{"v":4}],"M":{"a":{"v":5}}}}`,
	`{"k":1}`, `{"K":1}`, `{"\u212a":1}`, "{\"\u212a\":2}", `{"\u017fx":3}`, `{"\u017FX":3}`, `{"\u0130":1}`, `{"\u0131":1}`,
	`{"-":1}`, `{"Dash":1}`, `{"Skip":1}`, `{"hidden":1}`, `{"ab":1,"AB":2,"Ab":3,"aB":4}`, `{"aB":4}`, `{"Ab":5}`,
	`{"A.B_C-D":1}`, `{"named":"n"}`, `{"empty":{"a":1}}`, `{"empty":{}}`, `{"empty":null}`, `{"empty":1}`,
	`{"unknown":{"a":[1,2,{"b":"\u0000"}]},"x":"a"}`, `{"unknown":[1,2,}`, `{"unknown":"\x"}`, `{"unknown":tru}`,
	`{"unknown":"` + "\xff" + `"}`, `{"unknown":"\ud800"}`, `{"unknown":01}`, `{"unknown":{"a" 1}}`, `{"unknown":{1:1}}`,
	`[1,2,3]`, `[1,2,3,]`, `[1 2]`, `[-0]`, `[1.5]`, `[null]`, `[[1]]`, `[9223372036854775808]`,
	`{"a":"b"}`, `{"a":{"b":"c"}}`, `"str"`, `"\u00e9"`, `true`, `false`, `0`, `-0`, `1e3`, `-1.5E-7`, `1e400`,
	`127`, `-128`, `128`, `18446744073709551615`, `-1`, "\t\n\r {\"x\"\t:\n\"a\"\r}\t\n",
	`{"v":1,"next":null,"kids":[{"v":2,"kids":[]}],"M":{"a":null}}`, `{"M":{"a":{"M":{"b":{}}}}}`,
	`{"F00":1,"f00":2,"F15":"x","f15":"y","F16":1}`, `{"f01":1}`, `{"F0":1}`,
	strings.Repeat("[", 999) + strings.Repeat("]", 999),
	strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
	`{"node":` + strings.Repeat(`{"next":`, 300) + `null` + strings.Repeat("}", 300) + `}`,
	`{"unknown":` + strings.Repeat(`[`, 1200) + strings.Repeat(`]`, 1200) + `}`,
	"\ufeff{}", `{"x":"a"}{}`, `{"x":"a"}]`,
}

// umCheck decodes in with our decoder and, when it reports success,
// checks that encoding/json agrees exactly. It returns whether ours
// handled the input.
func umCheck(t testing.TB, u *Unmarshaler, in []byte) bool {
	typ := u.Type()
	ours := reflect.New(typ)
	if !u.Unmarshal(in, ours.UnsafePointer()) {
		return false
	}
	std := reflect.New(typ)
	if err := json.Unmarshal(in, std.Interface()); err != nil {
		t.Fatalf("%v: ours accepted %q but encoding/json fails: %v", typ, in, err)
	}
	if !reflect.DeepEqual(ours.Elem().Interface(), std.Elem().Interface()) {
		t.Fatalf("%v: %q decodes differently:\nours %#v\nstd  %#v", typ, in, ours.Elem().Interface(), std.Elem().Interface())
	}
	// Marshal tells apart what DeepEqual does not (-0 and 0).
	a, errA := json.Marshal(ours.Interface())
	b, errB := json.Marshal(std.Interface())
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("%v: %q re-encodes differently:\nours %s (%v)\nstd  %s (%v)", typ, in, a, errA, b, errB)
	}
	return true
}

func umDecoders(t testing.TB) []*Unmarshaler {
	var us []*Unmarshaler
	for _, typ := range umFuzzTypes {
		u := UnmarshalerFor(typ)
		if u == nil {
			t.Fatalf("UnmarshalerFor(%v) = nil", typ)
		}
		us = append(us, u)
	}
	return us
}

func FuzzUnmarshalMatchesStd(f *testing.F) {
	for _, s := range umSeeds {
		f.Add([]byte(s))
	}
	for _, s := range fuzzJSONSeeds {
		f.Add([]byte(s))
	}
	us := umDecoders(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		// The input as JSON text, and as a recipe for a document built
		// from the test types' keys and boundary values (random bytes are
		// rarely valid JSON, let alone JSON that fits the types).
		gen := umGen(in)
		for _, u := range us {
			umCheck(t, u, in)
			umCheck(t, u, gen)
		}
	})
}

// umKeys are object keys umGen uses: the test types' JSON names, case and
// Unicode folding variants, escaped forms and unknown keys.
var umKeys = []string{
	"s", "bo", "I", "i", "i8", "i16", "i32", "i64", "I64", "u", "u8", "u16", "u32", "u64", "up", "f32", "F32", "f64",
	"ps", "ppi", "ss", "si", "sp", "sss", "mi", "ma", "ms", "mp", "mn", "any", "pany", "sany", "in", "pin", "node",
	"k", "K", `\u212a`, "\u212A", "sx", "SX", `\u017fx`, "\u017FX", "-", "Dash", "Skip", "hidden", "ab", "AB", "Ab", "aB",
	"a.b_c-d", "A.B_C-D", "named", "empty", "str", "a", "A", "b", "c", "d", "v", "next", "kids", "M", "m",
	"x", "X", `\u0078`, "path", "line", "recursive", "limit", "tags", "ratio", "F00", "f00", "F15", "zz", "",
	`\u00e9`, `\ud800`, `\u0130`, `\u0131`, `\u212b`, `\u00c5`, `\u03a3`, `\u03c2`, `\u1e9e`, `\u00df`,
	"é", "ſ", "ß", "\xff", "a\xffb", `\"`, `\\`,
}

// umScalars are the scalar values umGen uses.
var umScalars = []string{
	"null", "true", "false", "0", "-0", "1", "-1", "7", "127", "128", "-128", "-129", "255", "256", "32767", "-32769",
	"65535", "65536", "2147483647", "-2147483649", "4294967295", "4294967296", "9223372036854775807",
	"9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
	"18446744073709551616", "1.5", "-0.0", "1e3", "1E+2", "1e-400", "1e400", "3.4028235e38", "3.5e38", "0.1",
	"16777217", "123456789012345678901234567890", "1.7976931348623157e308", "1.8e308", "4.9e-324",
	`""`, `"a"`, `"abc"`, `"\u00e9"`, `"\ud800"`, `"\udc00\ud800"`, `"\ud83d\ude00"`, "\"\xff\"", `"\n\t\\\""`,
	"\"caf\xc3\xa9\"", `"\u0000"`, `"x\/y"`,
}

// umGen turns fuzz bytes into a JSON document (almost always valid) made
// of umKeys and umScalars.
func umGen(in []byte) []byte {
	g := umGenState{in: in}
	g.value(0)
	return g.out
}

type umGenState struct {
	in  []byte
	out []byte
}

func (g *umGenState) next() int {
	if len(g.in) == 0 {
		return 0
	}
	c := g.in[0]
	g.in = g.in[1:]
	return int(c)
}

func (g *umGenState) space() {
	switch c := g.next(); {
	case c >= 250:
		g.out = append(g.out, " \t\n\r"[(c-250)&3])
	case c == 249:
		g.out = append(g.out, ",]}:x"[g.next()%5]) // occasional garbage
	}
}

func (g *umGenState) value(depth int) {
	g.space()
	c := g.next()
	switch {
	case depth < 8 && c%8 < 3: // object
		g.out = append(g.out, '{')
		n := g.next() % 5
		for k := 0; k < n; k++ {
			if k > 0 {
				g.out = append(g.out, ',')
			}
			g.space()
			g.out = append(g.out, '"')
			g.out = append(g.out, umKeys[g.next()%len(umKeys)]...)
			g.out = append(g.out, '"')
			g.space()
			g.out = append(g.out, ':')
			g.value(depth + 1)
		}
		g.space()
		g.out = append(g.out, '}')
	case depth < 8 && c%8 < 5: // array
		g.out = append(g.out, '[')
		n := g.next() % 4
		for k := 0; k < n; k++ {
			if k > 0 {
				g.out = append(g.out, ',')
			}
			g.value(depth + 1)
		}
		g.space()
		g.out = append(g.out, ']')
	default:
		g.out = append(g.out, umScalars[g.next()%len(umScalars)]...)
	}
	g.space()
}

// TestUnmarshal_Seeds runs the differential check over the seeds, so that a
// plain `go test` covers them for every type.
func TestUnmarshal_Seeds(t *testing.T) {
	us := umDecoders(t)
	handled := 0
	for _, s := range umSeeds {
		for _, u := range us {
			if umCheck(t, u, []byte(s)) {
				handled++
			}
		}
	}
	if handled < 100 {
		t.Fatalf("only %d seed/type pairs took the fast path", handled)
	}
}

// TestUnmarshal_FastPathTaken lists common inputs the decoder must handle
// (and handle exactly like encoding/json).
func TestUnmarshal_FastPathTaken(t *testing.T) {
	cases := []struct {
		typ reflect.Type
		in  string
	}{
		{reflect.TypeFor[umSmall](), `{"x":"a"}`},
		{reflect.TypeFor[umSmall](), ` {"X": "caf\u00e9 \ud83d\ude00\n"} `},
		{reflect.TypeFor[umSmall](), `{"x":"a","x":"b","other":[1,{"y":null}]}`},
		{reflect.TypeFor[umSmall](), `{"x":null}`},
		{reflect.TypeFor[umSmall](), `{"x":"\ud800 lone"}`},
		{reflect.TypeFor[umSmall](), "{\"x\":\"bad \xff utf8\"}"},
		{reflect.TypeFor[umSmall](), `{"\u212a":1,"é":2}`},
		{reflect.TypeFor[umSmall](), `{}`},
		{reflect.TypeFor[umSmall](), `null`},
		{reflect.TypeFor[umMedium](), `{"path":"src/main.go","line":12,"recursive":true,"limit":5,"tags":["a","b"],"ratio":0.25}`},
		{reflect.TypeFor[umMedium](), `{"PATH":"p","tags":[],"limit":null}`},
		{reflect.TypeFor[umAll](), `{"i8":-128,"u64":18446744073709551615,"f32":1.5,"f64":-0,"ps":"s","ppi":3}`},
		{reflect.TypeFor[umAll](), `{"ss":["a"],"si":[{"a":"x","c":[1]}],"mi":{"a":1,"a":2},"ma":{"k":[1,"s",null,true]}}`},
		{reflect.TypeFor[umAll](), `{"any":{"a":[1.5,{}]},"pany":"x","sany":[],"in":{"d":false},"pin":{}}`},
		{reflect.TypeFor[umAll](), `{"node":{"v":1,"next":{"v":2},"kids":[{"v":3}],"M":{"m":{"v":4}}}}`},
		{reflect.TypeFor[umAll](), `{"K":1,"\u212A":2,"\u017fX":3,"-":4,"aB":5,"AB":6,"A.B_C-D":7,"named":"n","empty":{}}`},
		{reflect.TypeFor[umBig](), `{"F00":1,"f00":2,"f15":"x","F07":7}`},
		{reflect.TypeFor[[]int](), `[1,2,3]`},
		{reflect.TypeFor[[]int](), `[]`},
		{reflect.TypeFor[map[string]string](), `{"a":"b","\u00e9":"c"}`},
		{reflect.TypeFor[*int](), `7`},
		{reflect.TypeFor[*int](), `null`},
		{reflect.TypeFor[any](), `{"a":[1,2,{"b":null}],"c":"d"}`},
		{reflect.TypeFor[any](), `-0`},
		{reflect.TypeFor[float64](), `1e-400`},
	}
	for _, c := range cases {
		u := UnmarshalerFor(c.typ)
		if u == nil {
			t.Fatalf("UnmarshalerFor(%v) = nil", c.typ)
		}
		if !umCheck(t, u, []byte(c.in)) {
			t.Errorf("%v: %s: not handled", c.typ, c.in)
		}
	}
}

// TestUnmarshal_NotHandled lists inputs the decoder must leave to
// encoding/json: invalid JSON, mismatches and overflow.
func TestUnmarshal_NotHandled(t *testing.T) {
	cases := []struct {
		typ reflect.Type
		in  string
	}{
		{reflect.TypeFor[umSmall](), ``},
		{reflect.TypeFor[umSmall](), `   `},
		{reflect.TypeFor[umSmall](), `{"x":1}`},
		{reflect.TypeFor[umSmall](), `{"x":"a"} x`},
		{reflect.TypeFor[umSmall](), `{"x":"a",}`},
		{reflect.TypeFor[umSmall](), `{"y":[1,2,]}`},
		{reflect.TypeFor[umSmall](), `{"y":"\x"}`},
		{reflect.TypeFor[umSmall](), "{\"y\":\"\x01\"}"},
		{reflect.TypeFor[umSmall](), `{"y":01}`},
		{reflect.TypeFor[umSmall](), `[]`},
		{reflect.TypeFor[umAll](), `{"i8":128}`},
		{reflect.TypeFor[umAll](), `{"I":1.5}`},
		{reflect.TypeFor[umAll](), `{"I":1e3}`},
		{reflect.TypeFor[umAll](), `{"u":-1}`},
		{reflect.TypeFor[umAll](), `{"u":-0}`},
		{reflect.TypeFor[umAll](), `{"u64":18446744073709551616}`},
		{reflect.TypeFor[umAll](), `{"f32":1e39}`},
		{reflect.TypeFor[umAll](), `{"f64":1e309}`},
		{reflect.TypeFor[umAll](), `{"any":1e309}`},
		{reflect.TypeFor[umAll](), `{"ss":"a"}`},
		{reflect.TypeFor[umAll](), `{"mi":[]}`},
		{reflect.TypeFor[umAll](), `{"bo":"true"}`},
		{reflect.TypeFor[[]int](), `[1 2]`},
		{reflect.TypeFor[any](), strings.Repeat("[", 1001) + strings.Repeat("]", 1001)},
		{reflect.TypeFor[umSmall](), `{"y":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`},
	}
	for _, c := range cases {
		u := UnmarshalerFor(c.typ)
		if u == nil {
			t.Fatalf("UnmarshalerFor(%v) = nil", c.typ)
		}
		if umCheck(t, u, []byte(c.in)) {
			t.Errorf("%v: %q: handled, want not handled", c.typ, c.in)
		}
	}
	if UnmarshalerFor(reflect.TypeFor[any]()).Unmarshal([]byte(`1`), nil) {
		t.Error("nil destination handled")
	}
	var nilU *Unmarshaler
	var x any
	if nilU.Unmarshal([]byte(`1`), unsafe.Pointer(&x)) {
		t.Error("nil Unmarshaler handled")
	}
}

type umTextKey string

func (k *umTextKey) UnmarshalText([]byte) error { return nil }

type umJSONValue struct{}

func (umJSONValue) UnmarshalJSON([]byte) error { return nil }

type umEmbedded struct{ umInner }

type umStringOpt struct {
	N int `json:"n,string"`
}

type umDupGo struct {
	A int
	B int `json:"A"`
}

type umBadTag struct {
	A int `json:"a b"`
}

type umNonASCII struct {
	Ñ int
}

type umNonASCIITag struct {
	A int `json:"é"`
}

type umStringer interface{ String() string }

type umRecursiveBad struct {
	Next *umRecursiveBad
	C    chan int
}

func TestUnmarshalerFor_Rejects(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[time.Time](),
		reflect.TypeFor[*time.Time](),
		reflect.TypeFor[json.RawMessage](),
		reflect.TypeFor[json.Number](),
		reflect.TypeFor[umJSONValue](),
		reflect.TypeFor[*umJSONValue](),
		reflect.TypeFor[umTextKey](),
		reflect.TypeFor[struct{ T time.Time }](),
		reflect.TypeFor[struct{ N json.Number }](),
		reflect.TypeFor[[]json.RawMessage](),
		reflect.TypeFor[umStringer](),
		reflect.TypeFor[error](),
		reflect.TypeFor[[2]int](),
		reflect.TypeFor[[]byte](),
		reflect.TypeFor[[]uint8](),
		reflect.TypeFor[complex128](),
		reflect.TypeFor[chan int](),
		reflect.TypeFor[func()](),
		reflect.TypeFor[unsafe.Pointer](),
		reflect.TypeFor[map[int]string](),
		reflect.TypeFor[map[umTextKey]string](),
		reflect.TypeFor[map[json.Number]string](),
		reflect.TypeFor[umEmbedded](),
		reflect.TypeFor[umStringOpt](),
		// Two fields tagged "a" (built at run time: vet rejects the literal).
		reflect.StructOf([]reflect.StructField{
			{Name: "A", Type: reflect.TypeFor[int](), Tag: `json:"a"`},
			{Name: "B", Type: reflect.TypeFor[int](), Tag: `json:"a"`},
		}),
		reflect.TypeFor[umDupGo](),
		reflect.TypeFor[umBadTag](),
		reflect.TypeFor[umNonASCII](),
		reflect.TypeFor[umNonASCIITag](),
		reflect.TypeFor[umRecursiveBad](),
		reflect.TypeFor[*umRecursiveBad](),
		reflect.TypeFor[map[string]umRecursiveBad](),
	} {
		if u := UnmarshalerFor(typ); u != nil {
			t.Errorf("UnmarshalerFor(%v) != nil", typ)
		}
	}
	if UnmarshalerFor(nil) != nil {
		t.Error("UnmarshalerFor(nil) != nil")
	}
}

// TestUnmarshal_FoldRunes checks the claim lookup relies on: U+212A and
// U+017F are the only non-ASCII runes that encoding/json's foldName maps to
// ASCII.
func TestUnmarshal_FoldRunes(t *testing.T) {
	var got []rune
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		f := r
		for {
			r2 := unicode.SimpleFold(f)
			if r2 <= f {
				f = r2
				break
			}
			f = r2
		}
		if f < utf8.RuneSelf {
			got = append(got, r)
		}
	}
	if want := []rune{'\u017F', '\u212A'}; !reflect.DeepEqual(got, want) {
		t.Fatalf("non-ASCII runes folding to ASCII: %U, want %U", got, want)
	}
}

// TestUnmarshal_SliceCapacity checks that slices grow exactly as
// encoding/json grows them (same capacity), element layout by layout.
func TestUnmarshal_SliceCapacity(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[[]string](), reflect.TypeFor[[]umString](), reflect.TypeFor[[]int](),
		reflect.TypeFor[[]int8](), reflect.TypeFor[[]int16](), reflect.TypeFor[[]uint32](),
		reflect.TypeFor[[]float32](), reflect.TypeFor[[]float64](), reflect.TypeFor[[]bool](),
		reflect.TypeFor[[]*int](), reflect.TypeFor[[]any](), reflect.TypeFor[[]map[string]int](),
		reflect.TypeFor[[][]int](), reflect.TypeFor[[]umInner](), reflect.TypeFor[[]struct{ A, B int8 }](),
	} {
		u := UnmarshalerFor(typ)
		for n := 0; n <= 40; n++ {
			elems := make([]string, n)
			for i := range elems {
				elems[i] = "null"
			}
			in := []byte("[" + strings.Join(elems, ",") + "]")
			ours, std := reflect.New(typ), reflect.New(typ)
			if !u.Unmarshal(in, ours.UnsafePointer()) {
				t.Fatalf("%v: %s not handled", typ, in)
			}
			if err := json.Unmarshal(in, std.Interface()); err != nil {
				t.Fatal(err)
			}
			if o, s := ours.Elem().Cap(), std.Elem().Cap(); o != s || ours.Elem().Len() != n {
				t.Fatalf("%v, %d elements: cap %d, encoding/json %d", typ, n, o, s)
			}
		}
	}
}

// TestUnmarshal_FastFloat compares ufastFloat with strconv.ParseFloat bit
// for bit on literals around its limits.
func TestUnmarshal_FastFloat(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.Intn(10))
		}
		return string(b)
	}
	fast := 0
	for k := 0; k < 200000; k++ {
		lit := ""
		if r.Intn(2) == 0 {
			lit = "-"
		}
		if ip := digits(r.Intn(18)); ip == "" || ip[0] == '0' {
			lit += "0"
		} else {
			lit += ip
		}
		if r.Intn(2) == 0 {
			lit += "." + digits(1+r.Intn(20))
		}
		if r.Intn(2) == 0 {
			lit += "eE"[r.Intn(2):][:1] + []string{"", "+", "-"}[r.Intn(3)] + strconv.Itoa(r.Intn(40))
		}
		want, err := strconv.ParseFloat(lit, 64)
		got, ok := ufastFloat([]byte(lit))
		if !ok {
			continue
		}
		fast++
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("ufastFloat(%s) = %v, ParseFloat = %v, %v", lit, got, want, err)
		}
	}
	if fast < 10000 {
		t.Fatalf("fast path taken only %d times", fast)
	}
}

func TestUnmarshal_Allocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	// One allocation, the string: the destination stays on the stack
	// (p does not escape). One-byte strings come from a static table.
	u := UnmarshalerFor(reflect.TypeFor[umSmall]())
	in := []byte(`{"x":"abc"}`)
	n := testing.AllocsPerRun(100, func() {
		var v umSmall
		if !u.Unmarshal(in, unsafe.Pointer(&v)) || v.X != "abc" {
			t.Fatal("not handled")
		}
	})
	if n != 1 {
		t.Errorf("allocs = %v, want 1", n)
	}
	// The path string and the tags backing array, grown twice as
	// encoding/json grows it ("a" and "b" are static).
	u = UnmarshalerFor(reflect.TypeFor[umMedium]())
	in = []byte(`{"path":"src/main.go","line":12,"recursive":true,"tags":["a","b"],"ratio":0.5}`)
	n = testing.AllocsPerRun(100, func() {
		var m umMedium
		if !u.Unmarshal(in, unsafe.Pointer(&m)) || len(m.Tags) != 2 {
			t.Fatal("not handled")
		}
	})
	if n != 3 {
		t.Errorf("allocs = %v, want 3", n)
	}
}

// TestUnmarshal_Concurrent decodes with one Unmarshaler from several
// goroutines (meaningful under -race).
func TestUnmarshal_Concurrent(t *testing.T) {
	u := UnmarshalerFor(reflect.TypeFor[umAll]())
	in := []byte(`{"s":"x","node":{"v":1,"next":{"v":2}},"ma":{"a":[1]},"ss":["a","b"]}`)
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			ok := true
			for k := 0; k < 200; k++ {
				var v umAll
				ok = ok && u.Unmarshal(in, unsafe.Pointer(&v)) && v.Node.Next.V == 2
			}
			done <- ok
		}()
	}
	for g := 0; g < 4; g++ {
		if !<-done {
			t.Error("concurrent decode failed")
		}
	}
}

func BenchmarkUnmarshalSmall(b *testing.B) {
	small := []byte(`{"x":"a"}`)
	medium := []byte(`{"path":"src/main.go","line":12,"recursive":true,"limit":5,"tags":["a","b"],"ratio":0.5}`)
	us := UnmarshalerFor(reflect.TypeFor[umSmall]())
	um := UnmarshalerFor(reflect.TypeFor[umMedium]())
	b.Run("small/jsonv", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v umSmall
			if !us.Unmarshal(small, unsafe.Pointer(&v)) {
				b.Fatal("not handled")
			}
		}
	})
	b.Run("small/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v umSmall
			if err := json.Unmarshal(small, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("medium/jsonv", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v umMedium
			if !um.Unmarshal(medium, unsafe.Pointer(&v)) {
				b.Fatal("not handled")
			}
		}
	})
	b.Run("medium/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v umMedium
			if err := json.Unmarshal(medium, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
