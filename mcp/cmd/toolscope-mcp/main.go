// Command toolscope-mcp serves the toolscope demo's tools (read, search,
// fetch, write, shell, git, lint, with the demo's guard, approval and
// redaction policies) as an MCP server, so any MCP client can try the
// pipeline in one line:
//
//	go run ./mcp/cmd/toolscope-mcp                  # stdio (what desktop clients and IDEs launch)
//	go run ./mcp/cmd/toolscope-mcp -http 127.0.0.1:0 # streamable HTTP on loopback; the URL is printed on stderr
//
// Each client session gets its own agent scope. Calls that the demo's
// policy asks approval for ("shell" with "rm ...", "git push") are put to
// the user through MCP elicitation when the client supports it, and denied
// otherwise.
//
// Flags:
//
//	-http ADDR   serve streamable HTTP at http://ADDR/mcp instead of stdio.
//	             A bare port ("8080") means loopback (127.0.0.1:8080); any
//	             address reachable from other machines (":8080",
//	             "0.0.0.0:8080", a public IP) is served with a warning
//	-token T     require "Authorization: Bearer T" on every HTTP request
//	             (default: $TOOLSCOPE_MCP_TOKEN; none when both are empty)
//	-allowed-hosts H1,H2
//	             refuse HTTP requests whose Host header names none of these
//	             (the DNS-rebinding check, on every interface)
//	-installer   add the tool "install_tool" to every session: it registers
//	             a tool of the given name, answering the given text, in the
//	             calling session's scope, so the client hears
//	             notifications/tools/list_changed (the TypeScript-client test
//	             uses it)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/examples/demotools"
	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "toolscope-mcp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("toolscope-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("http", "", "serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:0)")
	installer := fs.Bool("installer", false, `give every session the tool "install_tool", which registers a tool in that session's scope`)
	token := fs.String("token", os.Getenv(tokenEnv), "require this bearer token on every HTTP request (default $"+tokenEnv+")")
	hosts := fs.String("allowed-hosts", "", "comma-separated Host names HTTP requests may name (checked on every interface)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	reg, err := runtime.New(runtime.WithMaxParallel(4))
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = reg.Close(cctx)
	}()
	if err := demotools.RegisterGlobal(reg, demotools.Stats{}); err != nil {
		return err
	}
	var opts []mcp.ServerOption
	opts = append(opts, mcp.WithImplementation(&sdk.Implementation{Name: "toolscope-mcp", Version: "0"}))
	if *installer {
		opts = append(opts, mcp.WithSessionScope(func(ctx context.Context, sc *runtime.Scope, _ mcp.SessionInfo) error {
			d, err := installTool(sc)
			if err != nil {
				return err
			}
			_, err = sc.Register(d)
			return err
		}))
	}
	srv, err := mcp.NewServer(reg.Global(), opts...)
	if err != nil {
		return err
	}
	defer srv.Close()

	if *addr == "" {
		return srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	}
	listen := listenAddr(*addr)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if !isLoopback(listen) {
		auth := "with bearer-token authentication"
		if *token == "" {
			auth = "WITHOUT authentication: anyone who can reach it can run the tools (set -token or $" + tokenEnv + ")"
		}
		fmt.Fprintf(stderr, "toolscope-mcp: warning: %s is reachable from other machines; serving %s\n", listen, auth)
	}
	var hopts []mcp.HTTPOption
	if *token != "" {
		hopts = append(hopts, mcp.WithBearerToken(*token))
	}
	if *hosts != "" {
		hopts = append(hopts, mcp.WithAllowedHosts(strings.Split(*hosts, ",")...))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.StreamableHTTPHandler(&sdk.StreamableHTTPOptions{SessionTimeout: 10 * time.Minute}, hopts...))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "toolscope-mcp: serving MCP (streamable HTTP) at http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return ctx.Err()
	}
}

// tokenEnv is the environment variable -token defaults to.
const tokenEnv = "TOOLSCOPE_MCP_TOKEN"

// listenAddr is the address -http names: a bare port means loopback.
func listenAddr(addr string) string {
	if _, err := strconv.ParseUint(addr, 10, 16); err == nil {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	return addr
}

// isLoopback reports whether addr (host:port) listens on loopback only:
// an empty host (every interface), 0.0.0.0, :: or any other address is
// not.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// installTool registers, in the calling session's scope sc, a tool that
// answers a fixed text.
func installTool(sc *runtime.Scope) (runtime.Definition, error) {
	type in struct {
		Name string `json:"name"`
		Text string `json:"text"`
	}
	return runtime.NewTool("install_tool", "Register a tool that answers a fixed text, in this session only",
		func(ctx context.Context, a in, rc *runtime.RunContext) (string, error) {
			text := a.Text
			d, err := runtime.NewTool(a.Name, "Answers "+fmt.Sprintf("%q", text),
				func(context.Context, struct{}, *runtime.RunContext) (string, error) { return text, nil },
				runtime.WithParallel())
			if err != nil {
				return "", err
			}
			if _, err := sc.Register(d); err != nil {
				return "", err
			}
			return "installed " + a.Name, nil
		})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
