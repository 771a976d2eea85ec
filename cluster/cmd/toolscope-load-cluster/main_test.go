package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlags_RefusedBeforeAnythingStarts: bad flags, the in-process-only
// modes (-virtual, -record, -replay) and a bad scenario exit 2 with a
// message naming what was wrong; no cluster is started (none of these
// tests needs one).
func TestFlags_RefusedBeforeAnythingStarts(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"name":"x","agents":{"count":0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-virtual"}, "-virtual, -record and -replay are for toolscope-load's in-process runs"},
		{[]string{"-record", "run.jsonl"}, "wall clock"},
		{[]string{"-replay", "run.jsonl"}, "wall clock"},
		{[]string{"-members", "0"}, "-members must be 1 to 9"},
		{[]string{"-members", "10"}, "-members must be 1 to 9"},
		{[]string{"-members", "2", "-peers", "127.0.0.1:1"}, "give one of the two"},
		{[]string{"-lease", "1ms"}, "-lease must be at least"},
		{[]string{"-call-timeout", "0s"}, "-call-timeout must be positive"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-scenario", "example:nope"}, "nope"},
		{[]string{"-scenario", bad}, "$.agents.count"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), c.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// TestAttack_Peers_SpacesAfterCommas: "-peers 'h1:1, h2:2'" (a list as
// people write it) split into " h2:2", which net.SplitHostPort accepts
// (host " h2"), so the command never reached that member and waited out
// joinWait. Each endpoint is now trimmed, and one that is empty or has a
// space inside is refused before anything starts.
func TestAttack_Peers_SpacesAfterCommas(t *testing.T) {
	got, err := peerList("127.0.0.1:7001, 127.0.0.1:7002 ,\t127.0.0.1:7003")
	if err != nil || strings.Join(got, "|") != "127.0.0.1:7001|127.0.0.1:7002|127.0.0.1:7003" {
		t.Fatalf("peerList = %q, %v", got, err)
	}
	for _, bad := range []string{"127.0.0.1:7001,,127.0.0.1:7002", "127.0.0.1:7001,", "my host:7001", "127.0.0.1"} {
		if _, err := peerList(bad); err == nil || !strings.Contains(err.Error(), "-peers") {
			t.Errorf("peerList(%q): err %v, want one naming -peers", bad, err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-peers", "127.0.0.1:7001,,127.0.0.1:7002"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-peers") {
		t.Fatalf("exit %d, stderr %q; want 2 before anything starts", code, stderr.String())
	}
}
