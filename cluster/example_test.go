package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/runtime"
)

// greeter is a catalog tool factory: config {"name": ..., "greeting": ...}.
func greeter(config json.RawMessage) (runtime.Definition, error) {
	var c struct{ Name, Greeting string }
	if err := json.Unmarshal(config, &c); err != nil {
		return runtime.Definition{}, err
	}
	if c.Name == "" {
		return runtime.Definition{}, errors.New(`"name" is required`)
	}
	return runtime.NewTool(c.Name, "greets", func(ctx context.Context, in struct {
		Who string `json:"who"`
	}, _ *runtime.RunContext) (string, error) {
		return c.Greeting + ", " + in.Who, nil
	})
}

// A catalog is code: every member builds the same one. A mount names an
// entry and carries its config; bad config is refused naming the entry.
func ExampleCatalog() {
	cat := cluster.NewCatalog()
	if err := cat.AddTool("greeter", greeter); err != nil {
		panic(err)
	}
	def, err := cat.Tool("greeter", json.RawMessage(`{"name":"hello","greeting":"Hi"}`))
	fmt.Println(def.Name, err)
	_, err = cat.Tool("greeter", json.RawMessage(`{"greeting":"Hi"}`))
	fmt.Println(err)
	// Output:
	// hello <nil>
	// cluster: catalog: tool entry "greeter" refused its config: "name" is required
}

// A tree's state is data; any member with the same catalog rebuilds it.
func ExampleRebuild() {
	cat := cluster.NewCatalog()
	_ = cat.AddTool("greeter", greeter)
	st := cluster.NewTreeState("agent-7")
	st.Scopes[0].Mutations = []cluster.MutationState{
		{ID: "m1", Kind: cluster.KindMount, Entry: "greeter", Config: json.RawMessage(`{"name":"hello","greeting":"Hello"}`)},
	}
	b, _ := st.Encode()
	back, err := cluster.DecodeTreeState(b)
	if err != nil {
		panic(err)
	}
	reg, _ := runtime.New()
	defer reg.Close(context.Background())
	built, err := cluster.Rebuild(reg, cat, back)
	if err != nil {
		panic(err)
	}
	r := built.Scopes["agent-7"].Execute(context.Background(), runtime.Call{Name: "hello", Arguments: json.RawMessage(`{"who":"Ada"}`)})
	fmt.Println(r.Text())
	// Output:
	// Hello, Ada
}

// A member adds the tree kind beside its own kinds; any member (or a
// client-only member) reaches trees through a Client.
func ExampleKind() {
	var store cluster.Store // the JetStream store, shared by every member
	cat := cluster.NewCatalog()
	_ = cat.AddTool("greeter", greeter)
	kind, err := cluster.Kind(cluster.Config{
		Store:       store,
		Catalog:     cat,
		NewRegistry: func() (*runtime.Registry, error) { return runtime.New() },
		LeaseTTL:    10 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	sys := actor.NewActorSystem()
	provider, _, err := cluster.AutoManaged(sys, "127.0.0.1:6330", time.Second, "127.0.0.1:6330", "127.0.0.1:6331")
	if err != nil {
		panic(err)
	}
	c := protocluster.New(sys, protocluster.Configure("agents", provider, disthash.New(),
		remote.Configure("127.0.0.1", 8090), protocluster.WithKinds(kind)))
	c.StartMember()
	defer c.Shutdown(true)

	ctx := context.Background()
	agent := cluster.NewClient(c).Tree("agent-7")
	mountID, err := agent.Mount(ctx, "greeter", json.RawMessage(`{"name":"hello","greeting":"Hi"}`))
	if err != nil {
		panic(err)
	}
	r := agent.Execute(ctx, runtime.Call{ID: "call-1", Name: "hello", Arguments: json.RawMessage(`{"who":"Ada"}`)})
	fmt.Println(r.Text())
	_ = agent.Unmount(ctx, mountID)
}
