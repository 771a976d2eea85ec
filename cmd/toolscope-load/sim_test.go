package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The simulation builder's two commands: record the embedded simulation on
// virtual time, replay it (no divergence, status 0); a log whose output was
// changed replays with status 4 naming the agent, turn and call.
func TestCmd_VirtualRecordReplay(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "run.jsonl")
	code, out := runCmd(t, context.Background(), nil, "-virtual", "-scenario", "example:simulation", "-record", log, "-out", "", "-progress", "0")
	if code != 0 || !strings.Contains(out, "virtual time: ") || !strings.Contains(out, "log: "+log) {
		t.Fatalf("record: status %d\n%s", code, out)
	}
	code, out = runCmd(t, context.Background(), nil, "-replay", log, "-out", "", "-progress", "0")
	if code != 0 || !strings.Contains(out, "every agent saw the logged results in the logged order") {
		t.Fatalf("replay: status %d\n%s", code, out)
	}

	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	where := ""
	for i, line := range lines {
		var c map[string]any
		if json.Unmarshal([]byte(line), &c) != nil || c["kind"] != "call" {
			continue
		}
		o, _ := c["output"].(map[string]any)
		if o == nil || o["text"] == nil {
			continue
		}
		o["text"] = "changed"
		nb, _ := json.Marshal(c)
		lines[i] = string(nb)
		where = "agent " + c["agent"].(string)
		break
	}
	bad := filepath.Join(dir, "changed.jsonl")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runCmd(t, context.Background(), nil, "-replay", bad, "-out", "", "-progress", "0")
	if code != 4 || !strings.Contains(out, "1 divergences; the first: "+where) || !strings.Contains(out, `result text "changed"`) {
		t.Fatalf("changed log: status %d\n%s", code, out)
	}

	code, _ = runCmd(t, context.Background(), nil, "-replay", filepath.Join(dir, "missing.jsonl"))
	if code != 2 {
		t.Fatalf("a missing log: status %d, want 2", code)
	}
}
