package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/runtime"
)

// Example installs run_code, puts an agent in code mode and runs a
// program that loops over one tool's results and calls another for each.
func Example() {
	reg, err := runtime.New(codemode.Option(codemode.Config{}))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())

	type dirIn struct {
		Dir string `json:"dir"`
	}
	type sizeIn struct {
		Path string `json:"path"`
	}
	list, _ := runtime.NewTool("list_files", "List the files of a directory",
		func(ctx context.Context, in dirIn, rc *runtime.RunContext) ([]string, error) {
			return []string{in.Dir + "/a.go", in.Dir + "/b.go", in.Dir + "/README.md"}, nil
		})
	size, _ := runtime.NewTool("size", "A file's size in bytes",
		func(ctx context.Context, in sizeIn, rc *runtime.RunContext) (int, error) {
			return len(in.Path) * 100, nil
		}, runtime.WithParallel())
	for _, d := range []runtime.Definition{list, size} {
		if _, err := reg.Global().Register(d); err != nil {
			log.Fatal(err)
		}
	}
	agent, err := reg.NewScope("agent")
	if err != nil {
		log.Fatal(err)
	}
	if err := agent.SetPresentation(runtime.PresentationCode); err != nil {
		log.Fatal(err)
	}
	fmt.Println(agent.Tools())

	// The model calls size directly: refused, with a hint.
	res := agent.Execute(context.Background(), runtime.Call{ID: "c1", Name: "size", Arguments: map[string]any{"path": "x"}})
	fmt.Println(res.ErrorMessage())

	program := `
go_files = [f for f in list_files(dir="src") if f.endswith(".go")]
sizes = parallel([("size", {"path": f}) for f in go_files])
print(len(go_files), "Go files")
{f: r.value for f, r in zip(go_files, sizes)}
`
	args, _ := json.Marshal(map[string]string{"code": program})
	res = agent.Execute(context.Background(), runtime.Call{ID: "c2", Name: "run_code", Arguments: json.RawMessage(args)})
	fmt.Println(res.Text())

	sc, _ := agent.Schemas()
	desc := sc[len(sc)-1].Description
	fmt.Println(strings.Contains(desc, "def size(path: str): A file's size in bytes"))
	// Output:
	// [list_files size run_code]
	// unknown tool "size": only run_code can be called directly here; call size from inside a run_code program
	// 2 Go files
	// {"src/a.go":800,"src/b.go":800}
	// true
}
