package load

import (
	"embed"
	"fmt"
	"io"
	"os"
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

// ReadScenario returns the text of the scenario a load command's -scenario
// names: "example:NAME" for an embedded example (Example), otherwise a file
// of at most MaxScenarioBytes (a larger one is refused, not truncated).
func ReadScenario(arg string) ([]byte, error) {
	if name, ok := strings.CutPrefix(arg, "example:"); ok {
		return Example(name)
	}
	return ReadFileBounded(arg, MaxScenarioBytes)
}

// ReadFileBounded reads a file of at most limit bytes; a larger one is an
// error naming it.
func ReadFileBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes", path, limit)
	}
	return b, nil
}
