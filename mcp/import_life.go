package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrServerGone is wrapped by the error an import ends with when its
// server went away (Imported.Err, the WithEndHandler call): the session
// ended, and WithReconnect, if given, could not make a new one.
var ErrServerGone = errors.New("mcp: the MCP server is gone")

// Backoff is WithReconnect's policy: up to Attempts connections, the first
// after Initial, each later one after twice the wait before it, at most
// Max.
type Backoff struct {
	// Attempts is how many connections are tried before the import ends
	// (at least 1).
	Attempts int
	// Initial is the wait before the first attempt (at least 0).
	Initial time.Duration
	// Max caps every wait (at least Initial).
	Max time.Duration
}

// DefaultBackoff is a policy for WithReconnect: five attempts over about
// three seconds.
var DefaultBackoff = Backoff{Attempts: 5, Initial: 100 * time.Millisecond, Max: 2 * time.Second}

func (b Backoff) validate() error {
	if b.Attempts < 1 || b.Initial < 0 || b.Max < b.Initial {
		return fmt.Errorf("mcp: WithReconnect: invalid Backoff %+v: want Attempts ≥ 1 and 0 ≤ Initial ≤ Max", b)
	}
	return nil
}

// wait is the wait before attempt n (from 1).
func (b Backoff) wait(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// WithReconnect makes an import outlive its session: when the session ends
// (the server closed it, its process died, its transport broke), the
// imported tools stay registered and answer CodeUnavailable at once while
// connect is asked for a new session, as policy says; once it gives one,
// the tools are listed anew on it and the differences applied through the
// same path as a re-sync (OnChange subscribers hear each change), and
// calls go to the new session (until its tools are listed, they answer
// CodeUnavailable: the new server may not have them). If every attempt
// fails, the import ends as it does without this option (see
// WithEndHandler), with the last attempt's error. A new session counts as
// recovered once its server answered the listing of its tools: one lost
// before that leaves the next recovery the attempts (and waits) that are
// left, so a server that accepts connections and dies at once ends the
// import after Attempts connections rather than flapping forever. Each
// attempt is bounded by WithSyncTimeout and ended by Close: connect is
// given a ctx that ends then, and one that ignores it is not waited for
// (Close returns; a session it returns late is closed).
// connect must return a session of a client made with
// ToolListChangedHandler, as for Import; the sessions it returns are the
// import's: it closes them when it replaces or ends them. (The session
// given to Import stays the caller's.) A session that ends because the
// program closed it is reconnected too: Close the import first.
func WithReconnect(connect func(ctx context.Context) (*sdk.ClientSession, error), policy Backoff) ImportOption {
	return importOptionFunc(func(c *importConfig) {
		c.reconnect, c.backoff, c.reconnectSet = connect, policy, true
	})
}

// WithEndHandler is called once, with the reason, when the import ends
// because its server went away: the session ended (or a call found it
// closed for good) and WithReconnect, if given, gave up. By then the
// import's tools are disposed (OnChange subscribers heard each removal),
// Imported.Done is closed and Imported.Err returns the same error, which
// wraps ErrServerGone. It is not called for Close. h runs on a goroutine of
// the import's own and may call any method of the import (Close returns at
// once).
func WithEndHandler(h func(err error)) ImportOption {
	return importOptionFunc(func(c *importConfig) { c.onEnd = h })
}

// DefaultUnreachableAfter is how many requests in a row that cannot reach
// the server make its session count as ended, when WithUnreachableAfter
// is not given.
const DefaultUnreachableAfter = 3

// WithUnreachableAfter makes a session count as ended, as if the server
// had closed it, once n requests in a row (calls, listings) failed to
// reach the server with a transport error that does not end the session
// itself — what a streamable HTTP session gives when its server is gone
// (connection refused, reset): the session stays open on the client's
// side, so without this every call would fail with CodeUnavailable
// forever. Any answer from the server resets the count. The default is
// DefaultUnreachableAfter; n ≤ 0 turns it off.
func WithUnreachableAfter(n int) ImportOption {
	return importOptionFunc(func(c *importConfig) { c.unreachable = n })
}

// link is one session of an import, and whether it was seen closed.
type link struct {
	cs       *sdk.ClientSession
	own      bool // made by WithReconnect's connect: the import closes it
	gone     atomic.Bool
	listing  atomic.Bool  // a reconnected session whose tools are not listed yet: calls answer CodeUnavailable
	failures atomic.Int32 // requests in a row that could not reach the server
}

// unreachable records a request of l that could not reach the server;
// the limit's worth in a row count as the session's end.
func (im *Imported) unreachable(l *link, err error) {
	if n := l.failures.Add(1); im.cfg.unreachable > 0 && int(n) >= im.cfg.unreachable {
		im.lost(l, fmt.Errorf("%d requests in a row could not reach the server: %w", n, err))
	}
}

// Done is closed when the import has ended: by Close, or because its
// server went away (see WithEndHandler). Its tools are disposed by then.
func (im *Imported) Done() <-chan struct{} { return im.done }

// Err is nil while the import is live; after Close it is ErrImportClosed;
// after its server went away, an error wrapping ErrServerGone that says
// why.
func (im *Imported) Err() error {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.endErr
}

// Session is the session the import's calls go to now: the one given to
// Import, or the last one WithReconnect made.
func (im *Imported) Session() *sdk.ClientSession { return im.link.Load().cs }

// follow watches l's session: when it ends, the import hears of it.
// The goroutine ends with the session (the caller's session may outlive
// the import: the goroutine then waits for the caller to close it).
func (im *Imported) follow(l *link) {
	go func() {
		err := l.cs.Wait()
		if err == nil {
			err = errors.New("the session ended")
		}
		im.lost(l, err)
	}()
}

// lost records that l's session is gone: its calls answer CodeUnavailable
// at once from now on; if l is the import's current session, the import
// reconnects (WithReconnect) or ends, on a goroutine of its own. It never
// blocks: a call's body and the session's watcher call it.
func (im *Imported) lost(l *link, cause error) {
	l.gone.Store(true)
	im.mu.Lock()
	if im.closed || im.losing || im.link.Load() != l {
		im.mu.Unlock()
		return
	}
	im.losing = true
	im.wg.Add(1)
	im.mu.Unlock()
	go func() {
		end := im.recover(l, cause)
		im.wg.Done()
		if end != nil && im.cfg.onEnd != nil {
			im.cfg.onEnd(end) // outside wg: the handler may call Close
		}
	}()
}

// recover reconnects (WithReconnect) or ends the import; it returns the
// error the import ended with, or nil (reconnected, or closed meanwhile).
func (im *Imported) recover(l *link, cause error) error {
	if im.cfg.reconnect != nil {
		// A recovery whose session was lost before its tools were listed
		// on it did not recover: the next one goes on with its attempts
		// (and waits), so a server that accepts and dies at once ends
		// the import after Attempts connections instead of flapping
		// forever.
		im.mu.Lock()
		spent := im.spent
		im.mu.Unlock()
		for n := spent + 1; n <= im.cfg.backoff.Attempts; n++ {
			t := time.NewTimer(im.cfg.backoff.wait(n))
			select {
			case <-t.C:
			case <-im.closeCtx.Done():
				t.Stop()
				return nil
			}
			next, err := im.connect()
			if err != nil {
				if im.closeCtx.Err() != nil {
					return nil
				}
				cause = fmt.Errorf("reconnect attempt %d of %d: %w", n, im.cfg.backoff.Attempts, err)
				continue
			}
			if !im.swap(l, next, n) {
				return nil // closed meanwhile
			}
			if l.own {
				go l.cs.Close() // gone already; graceful, so never waited for here
			}
			// The tools are listed anew on the new session. If it ends
			// meanwhile, its own loss starts the next recovery.
			err = im.sync(im.closeCtx, im.cfg.syncTimeout, false)
			next.listing.Store(false)
			if err == nil || (!next.gone.Load() && !isGone(err)) {
				// The server answered the listing (even one the import
				// refuses): recovered, a later loss has every attempt again.
				im.mu.Lock()
				if im.link.Load() == next {
					im.spent = 0
				}
				im.mu.Unlock()
			}
			if err != nil && !errors.Is(err, ErrImportClosed) && !next.gone.Load() && im.cfg.onError != nil {
				// Reconnected; the tools stay as they were listed before.
				go im.cfg.onError(fmt.Errorf("mcp: re-sync after reconnecting: %w", err))
			}
			return nil
		}
	}
	return im.end(fmt.Errorf("%w: %v", ErrServerGone, cause))
}

// connect asks WithReconnect's connect for a new session, bounded by
// WithSyncTimeout and by Close. A connect that ignores its ctx is not
// waited for past it: it runs on, and a session it returns late is closed.
func (im *Imported) connect() (*link, error) {
	ctx, cancel := context.WithTimeout(im.closeCtx, im.cfg.syncTimeout)
	defer cancel()
	type made struct {
		cs  *sdk.ClientSession
		err error
	}
	got := make(chan made) // unbuffered: once abandoned, the session is closed, not left in a buffer
	abandoned := make(chan struct{})
	go func() {
		cs, err := im.cfg.reconnect(ctx)
		select {
		case got <- made{cs, err}:
		case <-abandoned:
			if cs != nil {
				_ = cs.Close()
			}
		}
	}()
	var m made
	select {
	case m = <-got:
	case <-ctx.Done():
		select {
		case m = <-got: // it answered as its ctx ended
		default:
			close(abandoned)
			return nil, fmt.Errorf("connect did not return when its ctx ended: %w", ctx.Err())
		}
	}
	if m.err != nil {
		if m.cs != nil {
			_ = m.cs.Close()
		}
		return nil, m.err
	}
	if m.cs == nil {
		return nil, errors.New("connect returned no session")
	}
	l := &link{cs: m.cs, own: true}
	l.listing.Store(true)
	return l, nil
}

// swap makes next, made by attempt n, the import's session in place of
// old, unless the import was closed (it then closes next).
func (im *Imported) swap(old, next *link, n int) bool {
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		_ = next.cs.Close()
		return false
	}
	unwatch(im, old.cs)
	im.link.Store(next)
	im.losing, im.spent = false, n
	watch(im, next.cs)
	im.mu.Unlock()
	im.follow(next)
	return true
}

// end ends the import because its server is gone: as Close does, but with
// err as the reason, and without waiting for itself.
func (im *Imported) end(err error) error {
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		return nil
	}
	im.closed, im.ending, im.endErr = true, true, err
	im.mu.Unlock()
	im.teardown()
	return err
}
