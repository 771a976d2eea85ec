package codemode

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// describe renders a Starlark value with its types, so that 1 and 1.0, or
// a list and a tuple, differ.
func describeValue(v starlark.Value) string {
	switch x := v.(type) {
	case *starlark.List:
		parts := make([]string, x.Len())
		for i := range parts {
			parts[i] = describeValue(x.Index(i))
		}
		return "list[" + strings.Join(parts, ",") + "]"
	case *starlark.Dict:
		var parts []string
		for _, kv := range x.Items() {
			parts = append(parts, describeValue(kv[0])+":"+describeValue(kv[1]))
		}
		return "dict{" + strings.Join(parts, ",") + "}"
	}
	return v.Type() + "(" + v.String() + ")"
}

// randomJSON builds a random JSON value as text, in compact form unless
// spaced, with the awkward cases: escapes, non-ASCII and invalid UTF-8,
// big and negative numbers, exponents, -0, empty containers, repeated
// keys.
func randomJSON(rng *rand.Rand, depth int, spaced bool) string {
	sep := ""
	if spaced {
		sep = " "
	}
	k := rng.Intn(10)
	if depth > 3 && k >= 8 {
		k = rng.Intn(8)
	}
	switch k {
	case 0:
		return []string{"null", "true", "false"}[rng.Intn(3)]
	case 1:
		return []string{"0", "-0", "7", "-12", "3.5", "-0.25", "1e3", "2E-2", "123456789012345678901234567890", "-9223372036854775808", "9223372036854775808", "1.5e308"}[rng.Intn(12)]
	case 2, 3:
		return []string{`""`, `"a"`, `"héllo"`, `"tab\tx"`, `"quote\"x"`, `"\u00e9\ud83d\ude00"`, "\"bad\xff\"", `"slash\/"`, `"plain text"`}[rng.Intn(9)]
	case 4, 5:
		return `"k` + fmt.Sprint(rng.Intn(5)) + `"`
	case 6, 7:
		n := rng.Intn(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randomJSON(rng, depth+1, spaced)
		}
		return "[" + strings.Join(parts, ","+sep) + "]"
	default:
		n := rng.Intn(4)
		parts := make([]string, n)
		for i := range parts {
			key := []string{`"a"`, `"b"`, `"a"`, `"é"`, `"x\ny"`}[rng.Intn(5)]
			parts[i] = key + ":" + sep + randomJSON(rng, depth+1, spaced)
		}
		return "{" + sep + strings.Join(parts, ","+sep) + "}"
	}
}

// TestFromJSON_CompactFastPathMatchesDecoder: fromJSON's fast path for
// compact JSON gives exactly the decoder's values (types, key order,
// escapes, invalid UTF-8, big numbers), and leaves to the decoder what it
// does not read.
func TestFromJSON_CompactFastPathMatchesDecoder(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	fast := 0
	for i := range 5000 {
		text := randomJSON(rng, 0, i%5 == 4)
		want, wantErr := decodeJSON([]byte(text))
		got, err := fromJSON([]byte(text))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: fromJSON error %v, decoder error %v", text, err, wantErr)
		}
		if err != nil {
			continue
		}
		if g, w := describeValue(got), describeValue(want); g != w {
			t.Fatalf("%s:\nfromJSON %s\ndecoder  %s", text, g, w)
		}
		if v, rest, ok := compactValue([]byte(text), 0); ok && len(rest) == 0 {
			fast++
			if g, w := describeValue(v), describeValue(want); g != w {
				t.Fatalf("%s: fast path %s, decoder %s", text, g, w)
			}
		}
	}
	if fast < 1000 {
		t.Fatalf("the fast path read only %d of 5000 values", fast)
	}
	// What it leaves to the decoder.
	for _, text := range []string{`{"a":1,}`, `[1,]`, `{"a" :1}`, `"x\"y"`, "\"\xff\"", `01`, `1.`, `-`, `tru`, `{"a":1}x`, strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)} {
		if v, rest, ok := compactValue([]byte(text), 0); ok && len(rest) == 0 {
			t.Errorf("%s: the fast path read it as %s", text, describeValue(v))
		}
	}
	// A value from a real result reads the same either way.
	b, _ := json.Marshal(map[string]any{"path": "a.txt", "size": 12, "tags": []string{"x", "y"}, "ok": true, "ratio": 0.5})
	v, err := fromJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := describeValue(v); got != `dict{string("ok"):bool(True),string("path"):string("a.txt"),string("ratio"):float(0.5),string("size"):int(12),string("tags"):list[string("x"),string("y")]}` {
		t.Fatal(got)
	}
}

var benchObject = []byte(`{"entries":[{"name":"a.txt","size":12},{"name":"b.txt","size":40}],"path":"/src","total":2}`)

// BenchmarkFromJSON_Object: a tool's structured value into a program
// (the fast path); BenchmarkFromJSON_ObjectDecoder: the same with the
// decoder alone.
func BenchmarkFromJSON_Object(b *testing.B) {
	for b.Loop() {
		if _, err := fromJSON(benchObject); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFromJSON_ObjectDecoder(b *testing.B) {
	for b.Loop() {
		if _, err := decodeJSON(benchObject); err != nil {
			b.Fatal(err)
		}
	}
}
