package blocks_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/blocks"
)

// TestReplyLimit_BoundsTheBody: a body of exactly the bound reads whole; one
// byte more fails with agent.ErrReplyTooLarge, and Err reports it whatever
// error the reader passed on.
func TestReplyLimit_BoundsTheBody(t *testing.T) {
	cases := []struct {
		name    string
		body    int
		max     int64
		tripped bool
	}{
		{"empty", 0, 8, false},
		{"under", 7, 8, false},
		{"exactly the bound", 8, 8, false},
		{"one byte over", 9, 8, true},
		{"far over", 1 << 16, 8, true},
		{"default bound", 1 << 10, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := blocks.NewReplyLimit(tc.max)
			if tc.max <= 0 && l.Max() != agent.DefaultMaxReplyBytes {
				t.Fatalf("Max() = %d, want the default %d", l.Max(), agent.DefaultMaxReplyBytes)
			}
			resp := l.Wrap(&http.Response{Body: io.NopCloser(strings.NewReader(strings.Repeat("x", tc.body)))})
			got, err := io.ReadAll(resp.Body)
			if tc.tripped {
				if !errors.Is(err, agent.ErrReplyTooLarge) || !errors.Is(l.Err(errors.New("sdk")), agent.ErrReplyTooLarge) {
					t.Fatalf("read err %v, Err %v: want ErrReplyTooLarge", err, l.Err(errors.New("sdk")))
				}
				if int64(len(got)) != tc.max {
					t.Fatalf("read %d bytes before failing, want the bound %d", len(got), tc.max)
				}
				return
			}
			if err != nil || len(got) != tc.body {
				t.Fatalf("read %d bytes, err %v; want %d, nil", len(got), err, tc.body)
			}
			sdk := errors.New("sdk")
			if e := l.Err(sdk); e != sdk {
				t.Fatalf("Err(sdk) = %v, want sdk as it is", e)
			}
		})
	}
	if blocks.NewReplyLimit(1).Wrap(nil) != nil {
		t.Fatal("Wrap(nil) is not nil")
	}
}
