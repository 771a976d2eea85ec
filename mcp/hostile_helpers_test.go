package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostile is a hand-written MCP server that answers with whatever JSON it
// is given: the tool lists, schemas and results of a server toolscope
// does not trust. Each func returns the JSON text of a result; a nil func
// answers "method not found".
type hostile struct {
	// list answers tools/list for cursor ("" for the first page).
	list func(cursor string) string
	// call answers tools/call of tool name; an answer that begins with
	// "!" is the JSON of a JSON-RPC error object instead of a result.
	call func(name string, args json.RawMessage) string
}

// connectHostile connects a go-sdk client (with mcp.ToolListChangedHandler)
// to h over a net.Pipe, speaking protocol 2025-11-25. The server stops
// when the test ends.
func connectHostile(t testing.TB, h hostile) *sdk.ClientSession {
	t.Helper()
	serverEnd, clientEnd := net.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.serve(serverEnd)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cs, err := newClient().Connect(ctx, &sdk.IOTransport{Reader: clientEnd, Writer: clientEnd}, nil)
	if err != nil {
		_ = serverEnd.Close()
		wg.Wait()
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = serverEnd.Close()
		wg.Wait()
	})
	return cs
}

// serve answers requests read from conn until it closes. A request is
// answered on its own goroutine, so a slow answer holds up no other.
func (h hostile) serve(conn net.Conn) {
	var wmu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	write := func(b []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = conn.Write(append(b, '\n'))
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor    string          `json:"cursor"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || len(msg.ID) == 0 || msg.Method == "" {
			continue // a notification or a response
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var result string
			switch {
			case msg.Method == "initialize":
				result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"hostile","version":"0"}}`
			case msg.Method == "ping":
				result = `{}`
			case msg.Method == "tools/list" && h.list != nil:
				result = h.list(msg.Params.Cursor)
			case msg.Method == "tools/call" && h.call != nil:
				result = h.call(msg.Params.Name, msg.Params.Arguments)
			default:
				write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32601,"message":"method not found"}}`))
				return
			}
			if len(result) > 0 && result[0] == '!' {
				write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":` + result[1:] + `}`))
				return
			}
			write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + `}`))
		}()
	}
}

// toolList is the JSON of a tools/list result.
func toolList(next string, tools ...string) string {
	s := `{"tools":[`
	for i, t := range tools {
		if i > 0 {
			s += ","
		}
		s += t
	}
	s += `]`
	if next != "" {
		b, _ := json.Marshal(next)
		s += `,"nextCursor":` + string(b)
	}
	return s + `}`
}
