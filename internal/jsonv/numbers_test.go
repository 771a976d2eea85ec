package jsonv

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// Number literals are held to R47 by the value they denote as a float64:
// a literal that is ±Inf or −0 as a float64 is as lossy as the float64
// itself (issue 11 §4).
var (
	lossyLiterals = []string{
		"1e999", "2e308", "-2e308", "1e309", "1E+400", "1e999999999999999999",
		"1.7976931348623159e308", // past the halfway point to the next power: +Inf
		"-1e-400", "-1e-324", "-2.4703282292062327e-324", "-0.2e-323",
		"-0." + strings.Repeat("0", 400) + "1", // no exponent, still −0
		"1" + strings.Repeat("0", 309),         // no exponent, still +Inf
		"-0", "-0.0", "-0e5",
	}
	finiteLiterals = []string{
		"0", "1e308", "1.7976931348623157e308", "-1.7976931348623157e308", "1e-400", "1E-999",
		"-3e-324", "-4.9e-324", "-1e-323", "0e999", "-0.001", "123456789012345678901234567890",
		"1" + strings.Repeat("0", 300), "0." + strings.Repeat("0", 290) + "1", "-1.5E-7",
	}
)

func TestEncode_R47_RejectsLiteralsNotFiniteAsFloat64(t *testing.T) {
	for _, lit := range lossyLiterals {
		forms := map[string]any{
			"raw":        json.RawMessage(lit),
			"raw nested": json.RawMessage(`{"a":[1,` + lit + `]}`),
			"number":     json.Number(lit),
			"in map":     map[string]any{"a": []any{json.Number(lit)}},
		}
		for name, v := range forms {
			if out, err := Encode(v); !errors.Is(err, ErrNotLossless) {
				t.Errorf("Encode(%s %s) = %s, %v; want not lossless", name, lit, out, err)
			}
			if out, err := EncodeTree(v); err == nil {
				t.Errorf("EncodeTree(%s %s) = %s", name, lit, out)
			}
		}
		if Valid([]byte(lit)) {
			t.Errorf("Valid(%s)", lit)
		}
		if out, err := AppendCanonical(nil, []byte(`[`+lit+`]`)); err == nil {
			t.Errorf("AppendCanonical(%s) = %s", lit, out)
		}
		if v, err := Decode([]byte(lit)); err == nil {
			t.Errorf("Decode(%s) = %v", lit, v)
		}
		if v, err := DecodeStd([]byte(`{"x":` + lit + `}`)); err == nil {
			t.Errorf("DecodeStd(%s) = %v", lit, v)
		}
	}
}

func TestEncode_R47_AcceptsLiteralsFiniteAsFloat64(t *testing.T) {
	for _, lit := range finiteLiterals {
		out, err := Encode(json.RawMessage(lit))
		if err != nil || string(out) != lit {
			t.Errorf("Encode(raw %s) = %s, %v", lit, out, err)
			continue
		}
		if out, err := Encode(json.Number(lit)); err != nil || string(out) != lit {
			t.Errorf("Encode(json.Number %s) = %s, %v", lit, out, err)
		}
		// What Encode accepts, encoding/json decodes, and never to −0.
		var f float64
		if err := json.Unmarshal(out, &f); err != nil {
			t.Errorf("encoding/json cannot decode accepted %s: %v", lit, err)
		} else if f == 0 && math.Signbit(f) {
			t.Errorf("accepted %s decodes to −0", lit)
		}
	}
}

// TestValidate_R102_LiteralsNotFiniteAsFloat64: Validate reports such a
// literal in non-canonical text where R102 puts a non-finite number.
func TestValidate_R102_LiteralsNotFiniteAsFloat64(t *testing.T) {
	num := mustCompile(t, `{"type":"number"}`)
	integer := mustCompile(t, `{"type":"integer"}`)
	open := mustCompile(t, `{"type":"object"}`)
	for _, lit := range []string{"2e308", "-1e-400", "-1e999"} {
		if got := num.Validate([]byte(lit), "value"); len(got) != 1 || got[0] != `"value" must be a finite JSON number` {
			t.Errorf("number %s: %q", lit, got)
		}
		if got := integer.Validate([]byte(lit), "value"); len(got) != 1 || got[0] != `"value" must be an integer` {
			t.Errorf("integer %s: %q", lit, got)
		}
		if got := open.Validate([]byte(`{"x":`+lit+`}`), "value"); len(got) != 1 || got[0] != `"value" must be a lossless JSON object` {
			t.Errorf("open object %s: %q", lit, got)
		}
		if got := (*Schema)(nil).Validate([]byte(lit), ""); len(got) != 1 || got[0] != `"arguments" must be a lossless JSON value` {
			t.Errorf("nil schema %s: %q", lit, got)
		}
		if _, viol := CompileSchema(json.RawMessage(`{"type":"number","enum":[1,` + lit + `]}`)); len(viol) != 1 {
			t.Errorf("enum with %s: %q", lit, viol)
		}
		if _, viol := CompileSchema(json.RawMessage(`{"default":` + lit + `}`)); len(viol) != 1 {
			t.Errorf("default %s: %q", lit, viol)
		}
	}
}

func TestNumRound(t *testing.T) {
	for _, lit := range append(append([]string{}, lossyLiterals...), finiteLiterals...) {
		f, err := parseFloatStd(lit)
		inf, nz := numRound(lit)
		if wantInf := math.IsInf(f, 0); inf != wantInf || (err != nil) != wantInf {
			t.Errorf("numRound(%s) inf = %v; ParseFloat = %v, %v", lit, inf, f, err)
		}
		if wantNZ := f == 0 && math.Signbit(f); nz != wantNZ {
			t.Errorf("numRound(%s) negZero = %v; ParseFloat = %v", lit, nz, f)
		}
	}
}

func parseFloatStd(s string) (float64, error) {
	var f float64
	err := json.Unmarshal([]byte(s), &f)
	if err != nil {
		// encoding/json reports overflow without the value.
		return math.Inf(1), err
	}
	return f, nil
}
