package jsonv

import (
	"encoding/json"
	"testing"
)

func BenchmarkEncode_RawSmall(b *testing.B) {
	var raw any = json.RawMessage(`{"path":"x"}`) // boxed once, outside the loop
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode_RawPretty(b *testing.B) {
	var raw any = json.RawMessage(`{ "path": "src/main.go", "line": 12, "opts": { "recursive": true, "tags": ["a", "b"] } }`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode_MapSmall(b *testing.B) {
	m := map[string]any{"path": "x", "line": 12, "recursive": true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValid_Small(b *testing.B) {
	raw := []byte(`{"path":"src/main.go","line":12,"opts":{"recursive":true,"tags":["a","b"]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if !Valid(raw) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkValidate_Small(b *testing.B) {
	s := mustCompile(b, `{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"}},"required":["path"],"additionalProperties":false}`)
	v := []byte(`{"path":"x","line":3}`)
	b.ReportAllocs()
	for b.Loop() {
		if s.Validate(v, "") != nil {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkValidate_SmallInvalid(b *testing.B) {
	s := mustCompile(b, `{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"}},"required":["path"],"additionalProperties":false}`)
	v := []byte(`{"path":1,"extra":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if s.Validate(v, "") == nil {
			b.Fatal("valid")
		}
	}
}

func BenchmarkDecodeStd_Small(b *testing.B) {
	raw := []byte(`{"path":"src/main.go","line":12,"opts":{"recursive":true,"tags":["a","b"]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeStd(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompileSchema_Small(b *testing.B) {
	raw := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"}},"required":["path"],"additionalProperties":false}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, viol := CompileSchema(raw); viol != nil {
			b.Fatal(viol)
		}
	}
}
