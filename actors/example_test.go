package actors_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// A user's own actor system hosts toolscope; a scope is then driven by
// protobuf messages only: reads, a turn, and a call a guard denies.
func Example() {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	defer sys.Shutdown()

	host, err := actors.Start(sys)
	if err != nil {
		panic(err)
	}
	defer func() { _ = host.Close(context.Background()) }()

	// The host's owner sets the scope up in Go, once.
	reg := host.Registry()
	agent, _ := reg.NewScope("agent")
	weather, _ := runtime.NewTool("weather", "Today's weather in a city.",
		func(_ context.Context, in struct{ City string }, _ *runtime.RunContext) (string, error) {
			return "sunny in " + in.City, nil
		}, runtime.WithParallel())
	_, _ = agent.Register(weather)
	rm, _ := runtime.NewTool("rm", "Removes a file.",
		func(_ context.Context, in struct{ Path string }, _ *runtime.RunContext) (string, error) {
			return "removed " + in.Path, nil
		})
	_, _ = agent.Register(rm)
	_, _ = agent.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
		return "rm is not allowed here", e.Name() == "rm"
	})

	// Any actor of the system talks to the scope by message.
	pid := host.PID(agent)
	ask := func(msg any) any {
		v, err := sys.Root.RequestFuture(pid, msg, 5*time.Second).Result()
		if err != nil {
			panic(err)
		}
		return v
	}

	schemas := ask(&messages.SchemasRequest{}).(*messages.SchemasReply)
	for _, t := range schemas.GetTools() {
		fmt.Println("tool:", t.GetName())
	}
	get := ask(&messages.GetRequest{Name: "weather"}).(*messages.GetReply)
	fmt.Println("weather:", get.GetTool().GetDescription())

	turn := ask(&messages.TurnRequest{TurnId: "t1", Calls: []*messages.TurnCall{
		{CallId: "1", Name: "weather", ArgumentsText: `{"City":"Oslo"}`},
		{CallId: "2", Name: "weather", ArgumentsText: `{"City":"Lima"}`},
	}}).(*messages.TurnReply)
	for _, r := range turn.GetResults() {
		fmt.Println("turn:", string(r.GetValueJson()))
	}

	denied := ask(&messages.ExecuteRequest{Call: &messages.Call{CallId: "3", Name: "rm", ArgumentsJson: []byte(`{}`)}}).(*messages.ExecuteReply)
	fmt.Println("rm:", denied.GetResult().GetIsError(), denied.GetResult().GetError().GetMessage())
	// Output:
	// tool: weather
	// tool: rm
	// weather: Today's weather in a city.
	// turn: "sunny in Oslo"
	// turn: "sunny in Lima"
	// rm: true rm is not allowed here
}
