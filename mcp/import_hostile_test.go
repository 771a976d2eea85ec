package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscope/toolscope/mcp"
)

// A tools/list whose nextCursor repeats stops at the repeat with a clear
// error, instead of fetching and accumulating until the ctx ends.
func TestImport_ListRepeatedCursorStops(t *testing.T) {
	var pages atomic.Int64
	cs := connectHostile(t, hostile{list: func(cursor string) string {
		n := pages.Add(1)
		return toolList("again", fmt.Sprintf(`{"name":"t%d","inputSchema":{"type":"object"}}`, n))
	}})
	reg := newRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, err := mcp.Import(ctx, reg.Global(), cs)
	if err == nil || !strings.Contains(err.Error(), `repeated nextCursor "again"`) {
		t.Fatalf("Import = %v, want the repeated cursor refused", err)
	}
	if n := pages.Load(); n != 2 {
		t.Fatalf("%d pages fetched, want 2 (the second repeats the first's cursor)", n)
	}
	if tools := reg.Global().Tools(); len(tools) != 0 {
		t.Fatalf("tools registered after a failed listing: %v", tools)
	}
}

// Distinct cursors forever stop at the page bound; a listing longer than
// the tool bound stops there too; both are options.
func TestImport_ListPagesAndToolsBounded(t *testing.T) {
	var pages atomic.Int64
	endless := hostile{list: func(cursor string) string {
		n := pages.Add(1)
		return toolList("c"+strconv.FormatInt(n, 10), fmt.Sprintf(`{"name":"t%d","inputSchema":{"type":"object"}}`, n))
	}}
	reg := newRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, err := mcp.Import(ctx, reg.Global(), connectHostile(t, endless))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d pages", mcp.DefaultMaxListPages)) {
		t.Fatalf("Import = %v, want the page bound", err)
	}
	if n := pages.Load(); n != mcp.DefaultMaxListPages {
		t.Fatalf("%d pages fetched, want %d", n, mcp.DefaultMaxListPages)
	}
	pages.Store(0)
	_, err = mcp.Import(ctx, reg.Global(), connectHostile(t, endless), mcp.WithListLimits(3, 100))
	if err == nil || !strings.Contains(err.Error(), "more than 3 pages") || pages.Load() != 3 {
		t.Fatalf("Import = %v after %d pages, want the bound of 3 pages", err, pages.Load())
	}

	many := make([]string, 0, 6)
	for i := range 6 {
		many = append(many, fmt.Sprintf(`{"name":"m%d","inputSchema":{"type":"object"}}`, i))
	}
	big := hostile{list: func(string) string { return toolList("", many...) }}
	_, err = mcp.Import(ctx, reg.Global(), connectHostile(t, big), mcp.WithListLimits(10, 5))
	if err == nil || !strings.Contains(err.Error(), "more than 5 tools") {
		t.Fatalf("Import = %v, want the tool bound", err)
	}
	im, err := mcp.Import(ctx, reg.Global(), connectHostile(t, big), mcp.WithListLimits(10, 6))
	if err != nil || len(im.Tools()) != 6 {
		t.Fatalf("Import within the bounds = %v, %v", err, im)
	}
	im.Close()
	for _, bad := range [][2]int{{0, 1}, {1, 0}, {-1, 5}} {
		if _, err := mcp.Import(ctx, reg.Global(), connectHostile(t, big), mcp.WithListLimits(bad[0], bad[1])); err == nil {
			t.Fatalf("WithListLimits(%d, %d) accepted", bad[0], bad[1])
		}
	}
}

var _ = json.RawMessage(nil)

// A server that never answers tools/list (or whose answer is a line the
// go-sdk drops) cannot hold Import forever, even with a ctx that never
// ends: its listing is bounded by WithSyncTimeout, as a re-sync's is.
func TestImport_SilentServerListingBounded(t *testing.T) {
	never := make(chan struct{})
	cs := connectHostile(t, hostile{list: func(string) string { <-never; return toolList("") }})
	t.Cleanup(func() { close(never) }) // before the server's cleanup waits for it
	reg := newRegistry(t)
	done := make(chan error, 1)
	go func() {
		_, err := mcp.Import(context.Background(), reg.Global(), cs, mcp.WithSyncTimeout(100*time.Millisecond))
		done <- err
	}()
	if err := recv(t, done, "Import against a silent server"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Import = %v, want the sync timeout", err)
	}
}
