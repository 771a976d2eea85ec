package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// Example is the README's quick start.
func Example() {
	reg, err := runtime.New(runtime.WithMaxParallel(10))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())

	read, err := runtime.NewTool("read", "Read a file",
		func(ctx context.Context, in struct {
			Path string `json:"path"`
		}, rc *runtime.RunContext) (string, error) {
			return "contents of " + in.Path, nil
		}, runtime.WithParallel(), runtime.WithTimeout(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := reg.Global().Register(read); err != nil {
		log.Fatal(err)
	}

	planner, err := reg.NewScope("planner")
	if err != nil {
		log.Fatal(err)
	}
	worker, err := planner.NewScope("worker")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := worker.Restrict(runtime.Restriction{Allow: []string{"read"}}); err != nil {
		log.Fatal(err)
	}

	res := worker.Execute(context.Background(), runtime.Call{
		ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)})
	fmt.Println(res.Text())

	res = worker.Execute(context.Background(), runtime.Call{ID: "c2", Name: "write"})
	if res.Code() == runtime.CodeUnknownTool {
		fmt.Println(res.ErrorMessage())
	}
	// Output:
	// contents of a.txt
	// unknown tool "write"
}

// ExampleRegistry_View reads a key's view without holding its scope handle.
func ExampleRegistry_View() {
	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	if _, err := reg.Global().Register(exampleTool("search")); err != nil {
		log.Fatal(err)
	}
	agent, err := reg.NewScope("agent")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := agent.Register(exampleTool("notes")); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reg.View("agent").Tools(), reg.View("").Tools())
	_, ok := reg.View("").Get("notes")
	fmt.Println("global sees notes:", ok)
	// Output:
	// [search notes] [search]
	// global sees notes: false
}

// ExampleExecutionFromContext: a tool body calls another tool with the ctx
// it was given; the nested call knows its parent.
func ExampleExecutionFromContext() {
	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	g := reg.Global()
	leaf, err := runtime.NewTool("leaf", "a leaf", func(ctx context.Context, _ struct{}, rc *runtime.RunContext) (string, error) {
		self, ok := runtime.ExecutionFromContext(ctx)
		return fmt.Sprintf("%s: ctx carries it: %v, nested: %v", rc.Execution().CallID(),
			ok && self.Token() == rc.Token(), !rc.Execution().Parent().IsZero()), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	composite, err := runtime.NewTool("composite", "calls leaf", func(ctx context.Context, _ struct{}, rc *runtime.RunContext) (string, error) {
		res := g.Execute(ctx, runtime.Call{ID: "leaf-1", Name: "leaf", Arguments: json.RawMessage(`{}`)})
		return res.Text(), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range []runtime.Definition{leaf, composite} {
		if _, err := g.Register(d); err != nil {
			log.Fatal(err)
		}
	}
	res := g.Execute(context.Background(), runtime.Call{ID: "c", Name: "composite", Arguments: json.RawMessage(`{}`)})
	fmt.Println(res.Text())
	// Output: leaf-1: ctx carries it: true, nested: true
}

func exampleTool(name string) runtime.Definition {
	d, err := runtime.NewTool(name, "the "+name+" tool",
		func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
			return name + " ran", nil
		})
	if err != nil {
		log.Fatal(err)
	}
	return d
}

func ExampleScope_Restrict() {
	reg, _ := runtime.New()
	defer reg.Close(context.Background())
	for _, name := range []string{"read", "write", "bash"} {
		reg.Global().Register(exampleTool(name))
	}

	agent, _ := reg.NewScope("agent")
	sub, _ := agent.NewScope("sub")

	// Deny bash to the agent and everything below it.
	lift, _ := agent.Restrict(runtime.Restriction{Deny: []string{"bash"}})
	fmt.Println("agent:", agent.Tools())

	// A child's allow-list narrows further, and also hides tools registered later.
	sub.Restrict(runtime.Restriction{Allow: []string{"read"}})
	reg.Global().Register(exampleTool("grep"))
	fmt.Println("sub:", sub.Tools())

	// Names are checked when you restrict.
	_, err := agent.Restrict(runtime.Restriction{Deny: []string{"rm"}})
	fmt.Println(err)

	lift()
	fmt.Println("agent after lift:", agent.Tools())
	fmt.Println("global:", reg.Global().Tools())
	// Output:
	// agent: [read write]
	// sub: [read]
	// runtime: invalid restriction: unknown global tool "rm"; known global tools: bash, grep, read, write
	// agent after lift: [read write bash grep]
	// global: [read write bash grep]
}

func ExampleScope_Execute() {
	reg, _ := runtime.New()
	defer reg.Close(context.Background())

	greet, _ := runtime.NewTool("greet", "Greet someone",
		func(ctx context.Context, in struct {
			Name string `json:"name"`
		}, rc *runtime.RunContext) (string, error) {
			return "hello, " + in.Name, nil
		})
	reg.Global().Register(greet)
	agent, _ := reg.NewScope("agent")

	// A guard is a deny-only check.
	agent.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
		args, _ := e.Arguments()
		var in struct{ Name string }
		json.Unmarshal(args, &in)
		return "no greeting for " + in.Name, in.Name == "mallory"
	})

	ctx := context.Background()
	for _, call := range []runtime.Call{
		{ID: "1", Name: "greet", Arguments: json.RawMessage(`{"name":"ada"}`)},
		{ID: "2", Name: "greet", Arguments: json.RawMessage(`{"name":42}`)},
		{ID: "3", Name: "greet", Arguments: json.RawMessage(`{"name":"mallory"}`)},
		{ID: "4", Name: "shout"},
	} {
		res := agent.Execute(ctx, call)
		fmt.Printf("%s: error=%v code=%q %s\n", call.ID, res.IsError(), res.Code(), res.Text())
	}
	// Output:
	// 1: error=false code="" hello, ada
	// 2: error=true code="INVALID_ARGS" Error: invalid arguments: "name" must be a string
	// 3: error=true code="" Error: no greeting for mallory
	// 4: error=true code="UNKNOWN_TOOL" Error: unknown tool "shout"
}

// ExampleRegistry_Subscribe watches calls through the typed event API.
func ExampleRegistry_Subscribe() {
	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	if _, err := reg.Global().Register(exampleTool("search")); err != nil {
		log.Fatal(err)
	}
	finished := make(chan runtime.Event, 1)
	sub, err := reg.Subscribe(func(e runtime.Event) {
		if e.Kind == runtime.ExecutionFinished {
			finished <- e
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	reg.Global().Execute(context.Background(), runtime.Call{ID: "c1", Name: "search", Arguments: json.RawMessage(`{}`)})
	e := <-finished
	fmt.Println(e.Kind, e.CallID, e.Tool, e.Outcome == runtime.OutcomeOK, e.Mode)
	// Output: execution-finished c1 search true exclusive
}
