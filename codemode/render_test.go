package codemode

import (
	"encoding/json"
	"testing"
)

// render's fast path reads run_code's value as the full decode does, and
// declines every other form.
func TestRender_FastPathAgreesWithDecode(t *testing.T) {
	for _, b := range []string{
		`{"calls":0,"output":"","value":null}`,
		`{"calls":16,"output":"a\nb \"q\" \\ \u00e9","value":[1,2,{"k":"}"}]}`,
		`{"calls":3,"output":"x","value":"a\"}"}`,
		`{"calls":1,"output":"x","value":{"a":1}}`,
	} {
		o, v, ok := splitOutput([]byte(b))
		if !ok {
			t.Fatalf("%s: fast path declined", b)
		}
		var want struct {
			Value  json.RawMessage `json:"value"`
			Output string          `json:"output"`
		}
		if err := json.Unmarshal([]byte(b), &want); err != nil {
			t.Fatal(err)
		}
		if o != want.Output || string(v) != string(want.Value) {
			t.Errorf("%s: fast path read (%q, %s), decode (%q, %s)", b, o, v, want.Output, want.Value)
		}
	}
	for _, b := range []string{
		`{"value":1,"output":"","calls":0}`,
		`{"calls":1,"output":"x","value":1,"extra":2}`,
		`{"calls":1,"output":"x}`,
		`{"calls":1,"output":x,"value":1}`,
		`{"calls":1,"output":"x","value":}`,
	} {
		if _, _, ok := splitOutput([]byte(b)); ok {
			t.Errorf("%s: fast path accepted", b)
		}
	}
}

// run_code's argument fast path reads the program as the full decode does.
func TestCodeArg_FastPathAgreesWithDecode(t *testing.T) {
	for _, b := range []string{
		`{"code":"x = 1"}`,
		`{"code":"a\n\"b\"\\ \u00e9"}`,
		`{"code":""}`,
		`{"code":"a","code":"b"}`,
		`{"code": "spaced"}`,
		`{"code":"a\"}"}`,
		"{\"code\":\"\xff\"}",
	} {
		got, ok := codeArg([]byte(b))
		var want struct {
			Code *string `json:"code"`
		}
		err := json.Unmarshal([]byte(b), &want)
		if ok != (err == nil && want.Code != nil) || ok && got != *want.Code {
			t.Errorf("%s: fast path (%q, %v), decode %v %v", b, got, ok, want.Code, err)
		}
	}
	if _, ok := codeArg([]byte(`{"nope":1}`)); ok {
		t.Error("no code accepted")
	}
}
