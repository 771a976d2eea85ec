package jsonv

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// Schema text is bounded by size (runtime.WithMaxSchemaBytes, 1 MiB by
// default) because compiling it costs memory in proportion to its length.
// These shapes, each about 1 MiB of text, measure how much: alloc-B/in-B
// is what one CompileSchema allocates per byte of input, live-B/in-B what
// the compiled schema keeps (its tree and canonical text). Run:
//
//	go test ./internal/jsonv -run '^$' -bench CompileSchema_PerInputByte -benchtime 3x

// schemaShapes returns schema texts of about n bytes.
func schemaShapes(n int) map[string][]byte {
	// tree: objects of two properties sharing the level below, written out
	// (the shape of issue 20's 58 MB schema).
	tree := `{"type":"string"}`
	for len(tree)*2+40 < n {
		tree = `{"type":"object","properties":{"a":` + tree + `,"b":` + tree + `}}`
	}
	// wide: one object with many scalar properties, all required.
	var props, req []string
	for i := 0; len(props)*40 < n; i++ {
		props = append(props, fmt.Sprintf(`"p%07d":{"type":"integer"}`, i))
		req = append(req, fmt.Sprintf(`"p%07d"`, i))
	}
	wide := `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `]}`
	// enum: a string with a long list of allowed values.
	var vals []string
	for i := 0; len(vals)*12 < n; i++ {
		vals = append(vals, fmt.Sprintf(`"v%08d"`, i))
	}
	enum := `{"type":"string","enum":[` + strings.Join(vals, ",") + `]}`
	return map[string][]byte{"tree": []byte(tree), "wide": []byte(wide), "enum": []byte(enum)}
}

func BenchmarkCompileSchema_PerInputByte(b *testing.B) {
	shapes := schemaShapes(1 << 20)
	for _, name := range []string{"tree", "wide", "enum"} {
		text := shapes[name]
		b.Run(fmt.Sprintf("%s_%dKiB", name, len(text)>>10), func(b *testing.B) {
			raw := json.RawMessage(text)
			var keep *Schema
			var before, after runtime.MemStats
			var allocs, live uint64
			for b.Loop() {
				b.StopTimer()
				keep = nil
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				s, v := CompileSchema(raw)
				b.StopTimer()
				if len(v) > 0 {
					b.Fatal(v)
				}
				runtime.ReadMemStats(&after)
				allocs += after.TotalAlloc - before.TotalAlloc
				keep = s
				runtime.GC()
				runtime.ReadMemStats(&after)
				live += after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
				runtime.KeepAlive(keep)
				b.StartTimer()
			}
			b.ReportMetric(float64(allocs)/float64(b.N)/float64(len(text)), "alloc-B/in-B")
			b.ReportMetric(float64(live)/float64(b.N)/float64(len(text)), "live-B/in-B")
			b.SetBytes(int64(len(text)))
		})
	}
}
