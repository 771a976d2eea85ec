package lossless_test

import (
	"fmt"

	"github.com/toolscope/toolscope/lossless"
)

// Two spellings of one value have one canonical text.
func ExampleCanonical() {
	a, _ := lossless.Canonical([]byte(`{ "b": 1.50, "a": "\u0041" }`))
	b, _ := lossless.Canonical([]byte(`{"b":1.50,"a":"A"}`))
	fmt.Println(string(a), string(a) == string(b))
	_, err := lossless.Canonical([]byte(`-0`))
	fmt.Println(err != nil)
	// Output:
	// {"b":1.50,"a":"A"} true
	// true
}

// An ordered tree keeps the document's key order and number literals
// through an edit.
func ExampleDecode() {
	tree, err := lossless.Decode([]byte(`{"type":"object","properties":{"n":{"type":"number","maximum":1e3}}}`))
	if err != nil {
		panic(err)
	}
	o := tree.(*lossless.Object)
	o.Keys = append(o.Keys, "additionalProperties")
	o.Values = append(o.Values, false)
	out, err := lossless.Encode(o)
	fmt.Println(string(out), err)
	// Output:
	// {"type":"object","properties":{"n":{"type":"number","maximum":1e3}},"additionalProperties":false} <nil>
}
