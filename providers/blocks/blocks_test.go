package blocks

import (
	"encoding/json"
	"testing"
)

// The media type's three spellings, in their order of precedence.
func TestImageData_TypeSpellings(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"media_type":"a","mimeType":"b","mime_type":"c"}`, "a"},
		{`{"mimeType":"b","mime_type":"c"}`, "b"},
		{`{"mime_type":"c"}`, "c"},
		{`{"url":"https://x"}`, ""},
	} {
		var d ImageData
		if err := json.Unmarshal([]byte(tc.data), &d); err != nil {
			t.Fatal(err)
		}
		if got := d.Type(); got != tc.want {
			t.Errorf("%s: Type() = %q, want %q", tc.data, got, tc.want)
		}
	}
}
