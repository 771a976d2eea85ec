package lossless_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/lossless"
)

// R47: Canonical is a fixed point, agrees with Encode of the decoded tree,
// and refuses what the lossless set leaves out, with ErrNotLossless.
func TestLossless_R47_CanonicalDecodeEncode(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: ` {"z":1,"a":[true,null,"x"]} `, want: `{"z":1,"a":[true,null,"x"]}`},
		{in: `{"a":1,"a":2,"b":3}`, want: `{"a":2,"b":3}`}, // JSON.parse: first position, last value
		{in: `"<&>"`, want: `"<&>"`},                       // no HTML escaping
		{in: `1e-400`, want: `1e-400`},
		{in: `-0`, bad: true},
		{in: `1e999`, bad: true},
		{in: `{"a":}`, bad: true},
		{in: ``, bad: true},
		{in: strings.Repeat("[", 60000) + strings.Repeat("]", 60000), bad: true},
	} {
		got, err := lossless.Canonical([]byte(tc.in))
		if tc.bad {
			if !errors.Is(err, lossless.ErrNotLossless) {
				t.Errorf("Canonical(%.20q) = %s, %v; want ErrNotLossless", tc.in, got, err)
			}
			if _, err := lossless.Decode([]byte(tc.in)); !errors.Is(err, lossless.ErrNotLossless) {
				t.Errorf("Decode(%.20q): %v; want ErrNotLossless", tc.in, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
			continue
		}
		again, err := lossless.Canonical(got)
		if err != nil || string(again) != string(got) {
			t.Errorf("Canonical is not a fixed point on %s: %s, %v", got, again, err)
		}
		tree, err := lossless.Decode([]byte(tc.in))
		if err != nil {
			t.Errorf("Decode(%q): %v", tc.in, err)
			continue
		}
		enc, err := lossless.Encode(tree)
		if err != nil || string(enc) != tc.want {
			t.Errorf("Encode(Decode(%q)) = %s, %v; want %s", tc.in, enc, err, tc.want)
		}
	}
}

// Encode refuses what is not a tree of the lossless set, and an object
// that names a key twice.
func TestLossless_R47_EncodeRefuses(t *testing.T) {
	for name, v := range map[string]any{
		"struct":        struct{}{},
		"typed slice":   []string{"a"},
		"duplicate key": &lossless.Object{Keys: []string{"a", "a"}, Values: []any{1, 2}},
	} {
		if out, err := lossless.Encode(v); !errors.Is(err, lossless.ErrNotLossless) {
			t.Errorf("%s: Encode = %s, %v; want ErrNotLossless", name, out, err)
		}
	}
	out, err := lossless.Encode(map[string]any{"b": json.Number("1.0"), "a": 2})
	if err != nil || string(out) != `{"a":2,"b":1.0}` {
		t.Fatalf("Encode(map) = %s, %v", out, err)
	}
}
