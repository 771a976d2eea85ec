package blocks_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/blocks"
)

// zeroThenEOF yields its text, then one (0, nil) read — io.Reader allows
// it: "nothing happened" — then io.EOF.
type zeroThenEOF struct {
	r     io.Reader
	zeros int
}

func (z *zeroThenEOF) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	if err == io.EOF && z.zeros > 0 {
		z.zeros--
		return n, nil
	}
	return n, err
}

// TestAttack_ReplyLimit_ZeroReadAtTheBound: a reply of exactly the bound
// whose body, once at the bound, returns (0, nil) — allowed by io.Reader,
// and what a decompressing or chunked reader may do at a boundary — was
// taken for one byte too many and failed with ErrReplyTooLarge. A (0, nil)
// read at the bound is passed on as it is; only a byte beyond it trips.
func TestAttack_ReplyLimit_ZeroReadAtTheBound(t *testing.T) {
	l := blocks.NewReplyLimit(8)
	resp := l.Wrap(&http.Response{Body: io.NopCloser(&zeroThenEOF{r: strings.NewReader("12345678"), zeros: 2})})
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != "12345678" {
		t.Fatalf("read %q, err %v; want the 8 bytes and no error", got, err)
	}
	if e := l.Err(nil); e != nil {
		t.Fatalf("Err = %v after a reply within the bound", e)
	}
}

// TestAttack_ReplyLimit_HostileReplies: through a real HTTP transport, a
// reply is bounded whatever its framing: chunked, gzip-encoded (the
// transport inflates it: the bound counts the bytes the SDK reads, so a
// small gzip bomb cannot grow past it), exactly at the bound, one byte
// over.
func TestAttack_ReplyLimit_HostileReplies(t *testing.T) {
	const max = 1 << 12
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte{'x'}, 1<<20)) // ~1 KiB on the wire
	zw.Close()
	cases := []struct {
		name    string
		serve   func(w http.ResponseWriter)
		tripped bool
	}{
		{"chunked, exactly the bound", func(w http.ResponseWriter) {
			for i := 0; i < max/64; i++ {
				w.Write(bytes.Repeat([]byte{'a'}, 64))
				w.(http.Flusher).Flush()
			}
		}, false},
		{"chunked, one byte over", func(w http.ResponseWriter) {
			for i := 0; i < max/64; i++ {
				w.Write(bytes.Repeat([]byte{'a'}, 64))
				w.(http.Flusher).Flush()
			}
			w.Write([]byte{'!'})
		}, true},
		{"gzip bomb", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		}, true},
		{"length exactly the bound", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "4096")
			w.Write(bytes.Repeat([]byte{'a'}, max))
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.serve(w) }))
			defer srv.Close()
			l := blocks.NewReplyLimit(max)
			c := &http.Client{Transport: wrapping{l}}
			resp, err := c.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.tripped {
				if !errors.Is(err, agent.ErrReplyTooLarge) || len(got) > max {
					t.Fatalf("read %d bytes, err %v; want at most %d and ErrReplyTooLarge", len(got), err, max)
				}
				return
			}
			if err != nil || len(got) != max {
				t.Fatalf("read %d bytes, err %v; want %d, nil", len(got), err, max)
			}
		})
	}
}

// wrapping is the transport an adapter builds: every response bounded.
type wrapping struct{ l *blocks.ReplyLimit }

func (w wrapping) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	return w.l.Wrap(resp), err
}
