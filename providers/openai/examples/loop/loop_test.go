package main

import (
	"bytes"
	"context"
	"os"
	"runtime/pprof"
	"testing"
	"time"
)

// want is the transcript the example prints. Nothing in it depends on
// timing: the three parallel reads wait for each other, so every start of
// the group is recorded before its first result, and results, contexts and
// tool messages follow model order (R95, R96).
const want = `system: You keep the notes folder tidy.
user: Index my notes, drop a.md, and check example.com.
assistant calls 7 tools:
  call_1 read_file {"path":"notes/a.md"}
  call_2 read_file {"path":"notes/b.md"}
  call_3 read_file {"path":"notes/c.md"}
  call_4 write_file {"path":"notes/index.md","text":"a b c"}
  call_5 read_file {"path":"notes/index.md"}
  call_6 delete_file {"path":"notes/a.md"}
  call_7 fetch_url {"url":"https://example.com"}
tool call_1: alpha
tool call_2: bravo
tool call_3: charlie
tool call_4: wrote 5 bytes to notes/index.md
tool call_5: a b c
tool call_6: Error: deleting notes/a.md needs a human
tool call_7: Error: no network in this example (wanted https://example.com)
system: notes/index.md changed; re-read it before quoting it.
assistant: Done: 5 calls succeeded (call_1 call_2 call_3 call_4 call_5); 2 failed (call_6 call_7).

turn 1 record: call:call_1 call:call_2 call:call_3 result:call_1 result:call_2 result:call_3 call:call_4 result:call_4 call:call_5 result:call_5 call:call_6 result:call_6 call:call_7 result:call_7

stopped: answered after 2 model requests (finish_reason "stop")
`

func TestRun_PrintsTheTranscript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want {
		t.Errorf("transcript\n got:\n%s\nwant:\n%s", got, want)
	}
	if t.Failed() {
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
	}
}
