package jsonv

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

type ftInner struct {
	Host string `json:"host" jsonschema:"the host name"`
	Port int    `json:"port,omitempty" description:"the port"`
}

type ftEmbedded struct {
	Shared string `json:"shared"`
	Depth  int
}

type ftOther struct {
	Depth int // conflicts with ftEmbedded.Depth at the same depth: dropped
}

type ftArgs struct {
	Path    string            `json:"path"`
	Count   int64             `json:"count,omitzero"`
	Ratio   float32           `json:"ratio,omitempty"`
	Flag    bool              `json:"flag"`
	Tags    []string          `json:"tags"`
	Blob    []byte            `json:"blob"`
	Fixed   [2]uint8          `json:"fixed"`
	Inner   *ftInner          `json:"inner,omitempty"`
	Labels  map[string]string `json:"labels"`
	ByID    map[int]bool      `json:"by_id"`
	Any     any               `json:"any"`
	Raw     json.RawMessage   `json:"raw"`
	Num     json.Number       `json:"num"`
	When    time.Time         `json:"when"`
	Addr    netip.Addr        `json:"addr"` // TextMarshaler
	Quoted  int               `json:"quoted,string"`
	Skipped string            `json:"-"`
	//lint:ignore SA5008 encoding/json names this field "-": the case under test
	Dash     string `json:"-,"` // named "-"
	Untagged uint
	hidden   int //lint:ignore U1000 an unexported field the derivation must skip
	ftEmbedded
	*ftOther
}

type ftMarshaler struct{ x int } //lint:ignore U1000 a type with a field, for the marshaler case

func (ftMarshaler) MarshalJSON() ([]byte, error) { return []byte(`1`), nil }

type ftSelf struct {
	Next *ftSelf `json:"next"`
}

type ftSelfSlice struct {
	Kids []ftSelfSlice `json:"kids"`
}

type ftSelfMap struct {
	Name string               `json:"name"`
	Kids map[string]ftSelfMap `json:"kids"`
}

type ftIndirect struct {
	A ftIndirectB `json:"a"`
}
type ftIndirectB struct {
	Back []*ftIndirect `json:"back"`
}

func TestForType_Struct(t *testing.T) {
	got, err := ForType(reflect.TypeFor[ftArgs](), false)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"path":{"type":"string"},` +
		`"count":{"type":"integer"},` +
		`"ratio":{"type":"number"},` +
		`"flag":{"type":"boolean"},` +
		`"tags":{"type":"array","items":{"type":"string"}},` +
		`"blob":{"type":"string"},` +
		`"fixed":{"type":"array","items":{"type":"integer"}},` +
		`"inner":{"type":"object","properties":{"host":{"type":"string","description":"the host name"},"port":{"type":"integer","description":"the port"}},"required":["host"],"additionalProperties":false},` +
		`"labels":{"type":"object"},` +
		`"by_id":{"type":"object"},` +
		`"any":{},` +
		`"raw":{},` +
		`"num":{"type":"number"},` +
		`"when":{"type":"string"},` +
		`"addr":{"type":"string"},` +
		`"quoted":{"type":"string"},` +
		`"-":{"type":"string"},` +
		`"Untagged":{"type":"integer"},` +
		`"shared":{"type":"string"}},` +
		`"required":["path","flag","tags","blob","fixed","labels","by_id","any","raw","num","when","addr","quoted","-","Untagged","shared"],` +
		`"additionalProperties":false}`
	if string(got) != want {
		t.Fatalf("ForType\n got: %s\nwant: %s", got, want)
	}
	if _, viol := CompileSchema(json.RawMessage(got)); viol != nil {
		t.Fatalf("derived schema outside the subset: %q", viol)
	}
}

func TestForType_R103_Root(t *testing.T) {
	type empty struct{}
	type optional struct {
		A string `json:"a,omitempty"`
	}
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"empty struct", reflect.TypeFor[empty](), `{"type":"object","properties":{}}`},
		{"pointer to struct", reflect.TypeFor[*ftInner](), `{"type":"object","properties":{"host":{"type":"string","description":"the host name"},"port":{"type":"integer","description":"the port"}},"required":["host"]}`},
		{"required omitted when empty", reflect.TypeFor[optional](), `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{"map", reflect.TypeFor[map[string]any](), `{"type":"object","properties":{}}`},
		{"any", reflect.TypeFor[any](), `{"type":"object","properties":{}}`},
		{"raw", reflect.TypeFor[json.RawMessage](), `{"type":"object","properties":{}}`},
		{"nested structs stay closed", reflect.TypeFor[struct {
			I ftInner `json:"i"`
		}](), `{"type":"object","properties":{"i":{"type":"object","properties":{"host":{"type":"string","description":"the host name"},"port":{"type":"integer","description":"the port"}},"required":["host"],"additionalProperties":false}},"required":["i"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ForType(tc.typ, true)
			if err != nil || string(got) != tc.want {
				t.Fatalf("ForType = %s, %v\nwant %s", got, err, tc.want)
			}
			if _, viol := CompileSchema(json.RawMessage(got)); viol != nil {
				t.Fatalf("outside the subset: %q", viol)
			}
		})
	}
	for _, bad := range []reflect.Type{reflect.TypeFor[int](), reflect.TypeFor[[]string](), reflect.TypeFor[time.Time](), reflect.TypeFor[string]()} {
		if _, err := ForType(bad, true); err == nil {
			t.Errorf("ForType(%v, root) accepted", bad)
		}
	}
}

func TestForType_Types(t *testing.T) {
	type named string
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[string](), `{"type":"string"}`},
		{reflect.TypeFor[named](), `{"type":"string"}`},
		{reflect.TypeFor[bool](), `{"type":"boolean"}`},
		{reflect.TypeFor[uint16](), `{"type":"integer"}`},
		{reflect.TypeFor[uintptr](), `{"type":"integer"}`},
		{reflect.TypeFor[float64](), `{"type":"number"}`},
		{reflect.TypeFor[*int](), `{"type":"integer"}`},
		{reflect.TypeFor[**string](), `{"type":"string"}`},
		{reflect.TypeFor[[]byte](), `{"type":"string"}`},
		{reflect.TypeFor[[][]int](), `{"type":"array","items":{"type":"array","items":{"type":"integer"}}}`},
		{reflect.TypeFor[[]any](), `{"type":"array","items":{}}`},
		{reflect.TypeFor[map[string][]int](), `{"type":"object"}`},
		{reflect.TypeFor[map[netip.Addr]int](), `{"type":"object"}`},
		{reflect.TypeFor[error](), `{}`},
		{reflect.TypeFor[ftMarshaler](), `{}`},
		{reflect.TypeFor[*ftMarshaler](), `{}`},
		{reflect.TypeFor[time.Time](), `{"type":"string"}`},
		{reflect.TypeFor[*time.Time](), `{"type":"string"}`},
		{reflect.TypeFor[time.Duration](), `{"type":"integer"}`},
		{reflect.TypeFor[ftSelfMap](), `{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"object"}},"required":["name","kids"],"additionalProperties":false}`},
	} {
		got, err := ForType(tc.typ, false)
		if err != nil || string(got) != tc.want {
			t.Errorf("ForType(%v) = %s, %v; want %s", tc.typ, got, err, tc.want)
		}
	}
}

func TestForType_Errors(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[chan int](),
		reflect.TypeFor[func()](),
		reflect.TypeFor[complex128](),
		reflect.TypeFor[unsafe.Pointer](),
		reflect.TypeFor[struct{ C chan int }](),
		reflect.TypeFor[[]func()](),
		reflect.TypeFor[map[string]chan int](),
		reflect.TypeFor[map[[2]int]string](),
		reflect.TypeFor[ftSelf](),
		reflect.TypeFor[ftSelfSlice](),
		reflect.TypeFor[ftIndirect](),
		nil,
	} {
		if got, err := ForType(typ, false); err == nil {
			t.Errorf("ForType(%v) = %s, want an error", typ, got)
		}
	}
	if _, err := ForType(reflect.TypeFor[ftSelf](), true); err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Errorf("recursive root: %v", err)
	}
}

func TestForType_EncodedValuesValidate(t *testing.T) {
	// What encoding/json writes for a value satisfies the schema derived
	// from its type.
	b, _ := ForType(reflect.TypeFor[ftArgs](), false)
	s := mustCompile(t, string(b))
	addr := netip.MustParseAddr("10.0.0.1")
	v := ftArgs{
		Path: "p", Tags: []string{"a"}, Blob: []byte("x"), Inner: &ftInner{Host: "h"},
		Labels: map[string]string{"k": "v"}, ByID: map[int]bool{1: true}, Any: []any{1},
		Raw: json.RawMessage(`{"x":1}`), Num: "1.5", When: time.Unix(0, 0).UTC(), Addr: addr, Quoted: 5,
		ftEmbedded: ftEmbedded{Shared: "s"},
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := Encode(json.RawMessage(js))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Validate(canon, ""); got != nil {
		t.Fatalf("%s: %q", canon, got)
	}
	// nil pointer without omitempty: null is rejected, as documented.
	type withPtr struct {
		P *int `json:"p"`
	}
	b, _ = ForType(reflect.TypeFor[withPtr](), false)
	js, _ = json.Marshal(withPtr{})
	if got := mustCompile(t, string(b)).Validate(js, ""); len(got) != 1 {
		t.Fatalf("nil pointer: %q", got)
	}
}
