package load

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"
)

//go:embed examples/*.json
var examples embed.FS

//go:embed scenario.schema.json
var schema []byte

// Schema returns the JSON Schema of a scenario document.
func Schema() []byte { return append([]byte(nil), schema...) }

// Examples lists the names of the embedded example scenarios ("closed", "open").
func Examples() []string {
	ents, _ := examples.ReadDir("examples")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// Example returns the text of the embedded example scenario name.
func Example(name string) ([]byte, error) {
	b, err := examples.ReadFile(path.Join("examples", name+".json"))
	if err != nil {
		return nil, fmt.Errorf("load: no example scenario %q (have %v)", name, Examples())
	}
	return b, nil
}
