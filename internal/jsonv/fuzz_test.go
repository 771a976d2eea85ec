package jsonv

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

var fuzzJSONSeeds = []string{
	`{"path":"x"}`,
	` { "b" : [ 1 , 2.50 , "x\u0041\n" ] , "a" : { "z" : 1 , "a" : 2 } } `,
	`{"a":1,"b":2,"a":3}`,
	`{"a":1,"\u0061":{"x":1,"x":2}}`,
	`-0`, `[-0.0e1]`, `1e400`, `0`, `-1.5E-7`, `true`, `null`, `"\ud800"`, "\"\xff\xfe\"",
	`"\ud83d\ude00"`, `[[[[[]]]]]`, `{"":{"":[]}}`, `[1,]`, `{"a"}`, `"\u00"`, ``,
	// Literals that are ±Inf or −0 as a float64, and their finite neighbours.
	`1e999`, `2e308`, `[-1e-400]`, `{"n":1e-400}`, `1.7976931348623159e308`, `1.7976931348623157e308`,
	`-2e-324`, `-4.9e-324`, `{"a":[0.5,-1E-330]}`,
}

func FuzzEncode(f *testing.F) {
	for _, s := range fuzzJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Encode(json.RawMessage(in))
		if valid := Valid(in); valid != (err == nil) {
			t.Fatalf("Valid = %v but Encode err = %v for %q", valid, err, in)
		}
		tree, derr := Decode(in)
		if (derr == nil) != (err == nil) {
			t.Fatalf("Decode err = %v but Encode err = %v", derr, err)
		}
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output is not valid JSON: %q -> %q", in, out)
		}
		again, err := Encode(json.RawMessage(out))
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q -> %q -> %q (%v)", in, out, again, err)
		}
		if viaTree, err := EncodeTree(tree); err != nil || !bytes.Equal(viaTree, out) {
			t.Fatalf("EncodeTree(Decode(in)) = %q, %v; Encode = %q", viaTree, err, out)
		}
		// Same meaning as encoding/json (UseNumber, last duplicate wins).
		var std any
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		if err := dec.Decode(&std); err != nil {
			t.Fatalf("encoding/json rejects accepted input %q: %v", in, err)
		}
		ours, err := DecodeStd(out)
		if err != nil || !reflect.DeepEqual(ours, std) {
			t.Fatalf("meaning changed: %q -> %q (%v)", in, out, err)
		}
		// R47 by value: what is accepted decodes with plain encoding/json
		// (float64 numbers) to finite numbers that are not −0.
		var plain any
		if err := json.Unmarshal(out, &plain); err != nil {
			t.Fatalf("encoding/json cannot decode accepted %q: %v", out, err)
		}
		if hasNegZero(plain) {
			t.Fatalf("accepted %q decodes to −0", out)
		}
	})
}

var fuzzSchemaSeeds = []string{
	`{}`,
	`{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer","enum":[1,2]}},"required":["path"],"additionalProperties":false}`,
	`{"oneOf":[{"type":"string"},{"type":"number","const":1.5}]}`,
	`{"type":"array","items":{"type":"object","properties":{"host":{"type":"string"}}}}`,
	`{"type":["string"],"oneOf":1,"zzz":2,"default":-0}`,
	`{"type":"object","required":["a",1],"additionalProperties":{}}`,
	`{"type":"string","enum":[],"const":1}`,
	`[]`,
}

func FuzzCompileSchema(f *testing.F) {
	for _, s := range fuzzSchemaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, viol := CompileSchema(json.RawMessage(in))
		if (s == nil) == (viol == nil) {
			t.Fatalf("schema %v with violations %q", s, viol)
		}
		if s == nil {
			return
		}
		again, viol := CompileSchema(json.RawMessage(s.JSON()))
		if viol != nil || !bytes.Equal(again.JSON(), s.JSON()) {
			t.Fatalf("recompiling %q: %q", s.JSON(), viol)
		}
		if d, err := Decode(s.JSON()); err != nil {
			t.Fatal(err)
		} else if _, viol := CompileSchema(d); viol != nil {
			t.Fatalf("tree form rejected: %q", viol)
		}
	})
}

func FuzzValidate(f *testing.F) {
	for i, s := range fuzzSchemaSeeds {
		f.Add([]byte(s), []byte(fuzzJSONSeeds[i%len(fuzzJSONSeeds)]), i%2 == 0)
	}
	f.Add([]byte(fuzzSchemaSeeds[1]), []byte(`{"path":1,"n":3,"x":[-0]}`), true)
	f.Fuzz(func(t *testing.T, schema, value []byte, args bool) {
		s, _ := CompileSchema(json.RawMessage(schema)) // nil schema is fine too
		label := "value"
		if args {
			label = ""
		}
		got := s.Validate(value, label)
		if got != nil && len(got) == 0 {
			t.Fatal("empty non-nil violation list")
		}
		canon, err := Encode(json.RawMessage(value))
		if err != nil {
			return
		}
		onCanon := s.Validate(canon, label)
		if !reflect.DeepEqual(onCanon, got) {
			t.Fatalf("canonicalization changed the verdict: %q vs %q", got, onCanon)
		}
		tree, err := Decode(canon)
		if err != nil {
			t.Fatal(err)
		}
		if alt := s.ValidateValue(tree, label); !reflect.DeepEqual(alt, onCanon) {
			t.Fatalf("ValidateValue %q vs Validate %q", alt, onCanon)
		}
	})
}

// hasNegZero reports a float64 −0 anywhere in an encoding/json tree.
func hasNegZero(v any) bool {
	switch x := v.(type) {
	case float64:
		return x == 0 && math.Signbit(x)
	case []any:
		for _, e := range x {
			if hasNegZero(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasNegZero(e) {
				return true
			}
		}
	}
	return false
}
