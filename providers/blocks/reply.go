package blocks

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/toolscope/toolscope/agent"
)

// ReplyLimit bounds the bytes of one model reply's response body, streamed
// or not (the adapters' WithMaxReplyBytes): past the bound, reading the body
// fails with agent.ErrReplyTooLarge and the limit remembers it, so Err
// reports it whatever the provider's SDK made of the read error. Use one
// per request.
type ReplyLimit struct {
	max     int64
	tripped atomic.Bool
}

// NewReplyLimit returns a limit of n bytes; n ≤ 0 means
// agent.DefaultMaxReplyBytes.
func NewReplyLimit(n int64) *ReplyLimit {
	if n <= 0 {
		n = agent.DefaultMaxReplyBytes
	}
	return &ReplyLimit{max: n}
}

// Max returns the bound in bytes.
func (l *ReplyLimit) Max() int64 { return l.max }

// Wrap bounds resp's body (a nil resp or body is left alone) and returns
// resp: the form an SDK's response middleware wants.
func (l *ReplyLimit) Wrap(resp *http.Response) *http.Response {
	if resp != nil && resp.Body != nil {
		resp.Body = &limitedBody{rc: resp.Body, left: l.max, limit: l}
	}
	return resp
}

// Err turns a request's error into the reply's: one wrapping
// agent.ErrReplyTooLarge when the bound was passed (whatever the SDK made
// of it), else err.
func (l *ReplyLimit) Err(err error) error {
	if l.tripped.Load() {
		return fmt.Errorf("%w: over %d bytes", agent.ErrReplyTooLarge, l.max)
	}
	return err
}

type limitedBody struct {
	rc    io.ReadCloser
	left  int64
	limit *ReplyLimit
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the bound: one byte more means too large; the end is fine.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n == 0 {
			return 0, err // the end, an error, or (0, nil): nothing read, nothing over
		}
		b.limit.tripped.Store(true)
		return 0, agent.ErrReplyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
