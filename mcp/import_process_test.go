package mcp_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// helperEnv makes the test binary, started by TestImport_ServerProcessKilled,
// run TestHelperStdioServer as an MCP server on its stdin and stdout.
const helperEnv = "TOOLSCOPE_MCP_IMPORT_HELPER"

// blockStarted is the line the server process writes to stderr when its
// "block" tool has the call.
const blockStarted = "helper: block started"

// TestHelperStdioServer is not a test: it is the MCP server process of
// TestImport_ServerProcessKilled (os/exec's helper-process pattern), and
// returns at once in a normal run.
func TestHelperStdioServer(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("the server process of TestImport_ServerProcessKilled")
	}
	server := newServer(nil)
	server.AddTool(&sdk.Tool{Name: "block", InputSchema: objectSchema},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			os.Stderr.WriteString(blockStarted + "\n")
			<-ctx.Done()
			return nil, ctx.Err()
		})
	textTool(server, "fine", "fine")
	// Runs until the client goes away or the process is killed; bounded
	// in case the parent died without killing it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = server.Run(ctx, &sdk.StdioTransport{})
	os.Exit(0)
}

// A server process killed in the middle of a call: the call is
// MCP_UNAVAILABLE, not a hang, and the import ends, its tools disposed
// (issue 25 item 10a).
func TestImport_ServerProcessKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStdioServer$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			if lines.Text() == blockStarted {
				started <- struct{}{}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cs, err := newClient().Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs)

	done := make(chan *runtime.Result, 1)
	go func() { done <- execute(t, reg.Global(), "block", `{}`) }()
	recv(t, started, "the server process to have the call")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if res := recv(t, done, "the call to end after the server was killed"); res.Code() != mcp.CodeUnavailable {
		t.Fatalf("code %q (%s), want MCP_UNAVAILABLE", res.Code(), res.ErrorMessage())
	}
	recv(t, im.Done(), "the import to end after its server died")
	requireGone(t, reg.Global(), im)
}
