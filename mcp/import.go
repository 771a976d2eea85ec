package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/runtime"
)

// The codes of an imported tool's failures that come from the MCP session
// rather than from the tool (runtime.Result.Code returns them).
const (
	// CodeUnavailable: the server is gone. The session was closed (by
	// either side), its transport broke, or the server crashed while the
	// call was in flight. Once a call has seen the session closed, every
	// later call of the same import fails with this code at once, without
	// touching the session.
	CodeUnavailable runtime.Code = "MCP_UNAVAILABLE"
	// CodeError: the server answered tools/call with a JSON-RPC error (an
	// unknown tool, invalid params, an internal error of the server), or
	// its answer could not be read (for instance a content block of a kind
	// the go-sdk does not know, which fails the SDK's decoding of the whole
	// result).
	CodeError runtime.Code = "MCP_ERROR"
)

// The error names paired with CodeUnavailable and CodeError.
const (
	NameUnavailable = "MCPUnavailableError"
	NameError       = "MCPError"
)

// DefaultSyncTimeout bounds Import's listing and one re-sync of the tool
// list (all of its tools/list pages) when WithSyncTimeout is not given.
const DefaultSyncTimeout = 30 * time.Second

// The bounds of one listing (Import's, Sync's, a re-sync's) when
// WithListLimits is not given: a server that pages past them, or lists
// more tools, is refused.
const (
	DefaultMaxListPages = 1000
	DefaultMaxListTools = 10000
)

// ImportOption configures Import. The options are WithPrefix, WithAllow,
// WithCallTimeout, WithReadOnlyParallel, WithClassifier, WithSyncTimeout,
// WithSyncErrorHandler, WithListLimits, WithAllowShadowing, WithEndHandler,
// WithReconnect and WithUnreachableAfter.
type ImportOption interface{ applyImport(*importConfig) }

type importOptionFunc func(*importConfig)

func (f importOptionFunc) applyImport(c *importConfig) { f(c) }

type importConfig struct {
	prefix       string
	allow        map[string]bool // nil: every tool
	callTimeout  time.Duration
	timeoutSet   bool // WithCallTimeout was given
	classifier   func(tool *sdk.Tool, args json.RawMessage) bool
	syncTimeout  time.Duration
	onError      func(error)
	maxPages     int // tools/list pages of one listing
	maxTools     int // tools of one listing
	shadowing    bool
	onEnd        func(error)
	reconnect    func(ctx context.Context) (*sdk.ClientSession, error)
	backoff      Backoff
	reconnectSet bool
	unreachable  int // WithUnreachableAfter
}

// WithPrefix puts prefix in front of every server tool name: the server's
// "read" becomes the scope's prefix+"read". The server is still called by
// its own name.
func WithPrefix(prefix string) ImportOption {
	return importOptionFunc(func(c *importConfig) { c.prefix = prefix })
}

// WithAllow imports only the server tools with these names (the server's
// names, before any prefix). A name the server does not list is not an
// error: it is imported if the server lists it later. Without WithAllow
// every tool is imported; WithAllow() with no names imports none.
func WithAllow(serverNames ...string) ImportOption {
	return importOptionFunc(func(c *importConfig) {
		c.allow = make(map[string]bool, len(serverNames))
		for _, n := range serverNames {
			c.allow[n] = true
		}
	})
}

// WithCallTimeout bounds each tools/call request: when d passes first, the
// call fails with runtime.CodeToolTimeout ("tool call timed out after
// <ms>ms") and the server is sent notifications/cancelled. The tools also
// declare d as their Definition.Timeout, which a registry enforces by
// default from the call's dispatch (unless made with runtime.WithoutTimeouts).
// d must be positive; Import refuses anything else.
func WithCallTimeout(d time.Duration) ImportOption {
	return importOptionFunc(func(c *importConfig) { c.callTimeout, c.timeoutSet = d, true })
}

// WithReadOnlyParallel classifies the tools whose MCP annotations say
// readOnlyHint: true as parallel (runtime.Parallel), so a turn may overlap
// them. Without it (and without WithClassifier) every imported tool is
// exclusive: annotations are hints from the server, and toolscope fails
// closed. It replaces an earlier WithClassifier.
func WithReadOnlyParallel() ImportOption {
	return WithClassifier(func(tool *sdk.Tool, _ json.RawMessage) bool {
		return tool.Annotations != nil && tool.Annotations.ReadOnlyHint
	})
}

// WithClassifier sets the classifier of every imported tool: a call is
// parallel when f returns true for the tool (as the server listed it) and
// the call's arguments. f must not change tool. A panic in f counts as
// false (exclusive). It replaces an earlier WithReadOnlyParallel.
func WithClassifier(f func(tool *sdk.Tool, args json.RawMessage) bool) ImportOption {
	return importOptionFunc(func(c *importConfig) { c.classifier = f })
}

// WithSyncTimeout bounds Import's listing and each re-sync after
// notifications/tools/list_changed (the tools/list requests, every page),
// from when it begins (a re-sync waits for the one under way first,
// bounded by Close), so a server that never answers cannot hold Import
// even with a ctx that never ends; the default is DefaultSyncTimeout. d
// must be positive.
func WithSyncTimeout(d time.Duration) ImportOption {
	return importOptionFunc(func(c *importConfig) { c.syncTimeout = d })
}

// WithSyncErrorHandler receives the failures of the re-syncs that run on
// their own after notifications/tools/list_changed (a failed tools/list, a
// registration a change subscriber refused, a re-sync after WithReconnect
// made a new session). Without it they are dropped; the tools imported so
// far stay as they were. h is called on a re-sync's goroutine, possibly on
// two at once, after that goroutine has left the import's own: h may call
// Close, which does not wait for a call of h in progress. A Sync called
// by the program returns its error instead.
func WithSyncErrorHandler(h func(error)) ImportOption {
	return importOptionFunc(func(c *importConfig) { c.onError = h })
}

// WithListLimits bounds every listing of the server's tools (Import's,
// Sync's and each re-sync's): at most maxPages tools/list pages and
// maxTools tools in all (before WithAllow picks). A listing that goes past
// either fails — Import registers nothing, a re-sync changes nothing — as
// does one whose nextCursor repeats a cursor it already sent (a server
// that would otherwise be listed forever). The defaults are
// DefaultMaxListPages and DefaultMaxListTools; both must be positive.
func WithListLimits(maxPages, maxTools int) ImportOption {
	return importOptionFunc(func(c *importConfig) { c.maxPages, c.maxTools = maxPages, maxTools })
}

// WithAllowShadowing lets an imported tool take a name that a parent
// scope gives a tool of its own: every agent viewing through the import's
// scope then calls the server's tool by that name instead of the parent's.
// Without it such a tool is skipped and reported in Imported.Skipped, so a
// server cannot silently replace a trusted tool.
func WithAllowShadowing() ImportOption {
	return importOptionFunc(func(c *importConfig) { c.shadowing = true })
}

// Skipped is a server tool that Import (or a re-sync) did not register,
// and why.
type Skipped struct {
	// Tool is the server's name for the tool.
	Tool string
	// Reason says why, e.g. `tool name "run_code" is reserved`.
	Reason string
}

// Imported is the handle of one Import: the tools it registered and the
// re-syncs that keep them in step with the server. Its methods are safe
// for concurrent use.
type Imported struct {
	link  atomic.Pointer[link] // the session calls go to now
	group *runtime.Scope       // the owner group every tool is registered through
	cfg   importConfig

	// sem serializes syncs (Import's own, Sync, the re-syncs a
	// notification starts) and Close's teardown: whoever holds it is the
	// only one changing the registrations. A Sync made with a change
	// subscriber's ctx does not wait for it (see Sync), and Close does not
	// wait for a sync that is announcing one of its changes (see
	// waitQuiet), so neither waits for the sync it may be called from.
	sem chan struct{}

	// closeCtx ends when Close begins: a re-sync in flight stops at its next
	// step and a waiting one leaves.
	closeCtx context.Context
	cancel   context.CancelFunc

	mu     sync.Mutex
	closed bool
	// announcing is set while the sync holding sem registers or disposes a
	// tool, which runs the change subscribers on its goroutine; announced
	// is closed (and replaced) each time it is set.
	announcing bool
	announced  chan struct{}
	pending    bool // a re-sync is started and has not begun listing yet
	tools      map[string]*importedTool
	refused    map[string]string // server name → the listing whose calls the server refuses (-32601)
	order      []string          // server names in the order the server listed them
	skipped    []Skipped
	wg         sync.WaitGroup // the re-sync and recovery goroutines
	losing     bool           // a recovery (reconnect or end) is under way
	spent      int            // reconnect attempts spent since a session whose server answered its listing
	ending     bool           // the import is ending because its server is gone
	disposing  bool           // the teardown is disposing the tools
	endErr     error          // why the import ended (Err)
	done       chan struct{}  // closed when the import has ended

	served servedContent // the server's content of structured calls in flight
}

// importedTool is one registered server tool.
type importedTool struct {
	server  string // the server's name
	name    string // the scope's name: prefix + server
	print   string // the tool as listed, as JSON: a change replaces it
	dispose func()
}

// Import registers every tool the MCP server of session lists (all
// tools/list pages) into scope, as tools whose calls run through
// toolscope's pipeline and then tools/call on the session. It returns once
// they are registered, each with its own disposer, through an owner group
// of scope (runtime.Scope.Group): Imported.Close disposes them all, and so
// does disposing scope.
//
// What a tool gets from the server:
//
//   - Name: the server's name, after WithPrefix's prefix. A name toolscope
//     cannot register is skipped, not fatal: empty, "run_code" (reserved,
//     contract R107), listed twice, or already taken in scope's layer.
//     So is a name scope sees from a parent scope, unless
//     WithAllowShadowing: the server's tool would shadow the parent's for
//     every agent under scope (contract R12), so a server could replace a
//     trusted tool. The check is made whenever the tool is registered (at
//     import, and when a re-sync registers it anew); it reads scope's view,
//     so a parent's tool that scope's restrictions hide does not count.
//     Imported.Skipped lists them with the reason.
//   - Description: the server's description.
//   - Parameters: the server's inputSchema, as it is (not validated at
//     registration, contract R33; not validated before the call either:
//     the server validates its own arguments).
//   - Output: with an outputSchema, the value of a success is the result's
//     structuredContent, validated against that schema; the schema is the
//     tool's Output.Schema when it fits toolscope's schema subset (contract
//     R100), and is otherwise checked in the body by a full JSON Schema
//     (2020-12) validator with the same INVALID_TOOL_OUTPUT code. Such a
//     schema comes from an untrusted server, so its validation is bounded:
//     at import, a schema with more than 10,000 subschemas, subschemas
//     nested deeper than 64 levels, a $ref that leaves the schema (or a
//     $dynamicRef, or a nested $id), a cycle of $ref or in-place
//     applicators (allOf, anyOf, oneOf, not, if/then/else,
//     dependentSchemas) that does not descend into the value, or an
//     in-place expansion of more than 1,000 subschemas at one location
//     (a DAG of allOf pairs, say) makes the tool skipped (Skipped says
//     why); at each call, a value whose validation would visit more than
//     100,000 (subschema, location) pairs, recurse deeper than 256 levels
//     or build more than 32 MiB of error text is invalid output
//     ("structuredContent is refused: …"), never handed to the validator.
//     The content is the server's content blocks (as ContentBlocks maps
//     them: an image stays an image, a text its text; the value's JSON
//     text when the server sent no content): structuredContent is the
//     value, the content blocks are the content, and the pipeline's
//     renderer gives them, so post-execute hooks see the content the
//     model gets. (A value rendered again without its call — a wrapper's
//     result, contract R65 — or two calls in flight with equal arguments
//     and value but different content are rendered as the value's JSON
//     text.) When the server's content is one text block of JSON equal to
//     the structuredContent (what MCP asks servers to send beside it),
//     that text is also the value's JSON, so its key order and number
//     literals survive the SDK's decoding. Without an outputSchema, the
//     value is the result's content blocks as a JSON array of MCP content
//     objects and the content is those blocks (see ContentBlocks); a
//     structuredContent the server sends anyway is not kept.
//   - Mode: exclusive unless WithReadOnlyParallel or WithClassifier says
//     otherwise.
//   - Tasks: a tool whose execution.taskSupport is "required" can only be
//     called as a task, which the go-sdk client cannot send; the go-sdk's
//     Tool type drops "execution", so the listing cannot show it. The
//     server answers every call of such a tool with JSON-RPC -32601
//     (method not found): the first such answer fails that call
//     (CodeError) and starts a re-sync that disposes the tool and reports
//     it in Skipped; it stays skipped while the server lists it unchanged.
//   - Timeout: WithCallTimeout's, if given.
//
// A call sends the argument snapshot unchanged as the tools/call arguments
// (a JSON null, which MCP does not allow, is sent as {}) with the body's
// ctx, whose end the SDK sends to the server as notifications/cancelled.
// An isError result becomes a failure whose message is the text of its
// content (contract R69's wording for non-text blocks; a leading "Error: ",
// toolscope's own failure prefix, is dropped, so the failure's content
// reads as the server's), plain unless its _meta carries a toolscope code
// under "toolscope/code" (as NewServer sends it), which becomes the
// failure's code, named NameToolError — kept apart from the registry's
// own codes: a code the registry gives itself (runtime's codes such as
// ABORTED_BEFORE_DISPATCH, which promises the call never started, and
// CodeUnavailable, CodeError) is namespaced with RemotePrefix
// ("REMOTE_ABORTED_BEFORE_DISPATCH"), any other code (a tool's own,
// "QUOTA") passes as it is, and one that is not a code (over 64 bytes, or
// a byte other than a letter, digit, '_', '.', ':' or '-') is dropped. A
// server that
// is gone gives CodeUnavailable, a JSON-RPC error CodeError, the caller's
// cancellation runtime.CodeAborted and WithCallTimeout's deadline
// runtime.CodeToolTimeout — failures, never a hang beyond what the
// transport itself takes to notice a dead peer.
//
// Re-syncs: when the server sends notifications/tools/list_changed, the
// tools are listed again and the differences applied through the
// registry's ordinary operations, so OnChange subscribers hear each one:
// new tools are registered, removed ones disposed, changed ones (anything
// in the listing: description, schemas, annotations, title, _meta) disposed
// and registered again (a call made in that instant finds no tool:
// runtime.CodeUnknownTool). For the notification to reach Import, the
// client must be created with ToolListChangedHandler in its
// sdk.ClientOptions (the go-sdk takes handlers only when the client is
// made, and subscribes to the notification only when one is set):
//
//	client := sdk.NewClient(impl, &sdk.ClientOptions{ToolListChangedHandler: mcp.ToolListChangedHandler})
//
// The notification also needs the server to declare the tools capability
// with listChanged when the session starts (a go-sdk server does when it
// has a tool at that moment, or with ServerOptions.HasTools); for a
// server that does not, call Imported.Sync.
//
// Re-syncs run one at a time, on their own goroutine, each bounded by
// WithSyncTimeout and ended by Close; notifications arriving meanwhile
// are folded into one more re-sync. Imported.Sync re-syncs on demand.
//
// Import fails, registering nothing, when ctx ends or the listing fails
// (a listing past WithListLimits' bounds, or whose nextCursor repeats a
// cursor already sent, fails too), when an option is invalid, when scope is disposed, or when a change
// subscriber refuses one of the registrations (contract R16; a re-sync
// reports that refusal and goes on). The session stays the caller's:
// Close does not close it. When the session ends, by either side, the
// import ends too (Done, Err, WithEndHandler): its tools are disposed, a
// call in flight is answered CodeUnavailable and later ones find no tool
// (runtime.CodeUnknownTool) — unless WithReconnect makes a new session.
// A transport error that does not end the session (an HTTP request
// refused: a streamable HTTP session stays open on the client's side)
// fails its call with CodeUnavailable; WithUnreachableAfter's count of
// them in a row (3 by default) counts as the session's end. The import
// watches the session with a goroutine that ends with the session.
func Import(ctx context.Context, scope *runtime.Scope, session *sdk.ClientSession, opts ...ImportOption) (*Imported, error) {
	if ctx == nil {
		return nil, errors.New("mcp: Import needs a ctx")
	}
	if scope == nil || session == nil {
		return nil, errors.New("mcp: Import needs a scope and a session")
	}
	cfg := importConfig{syncTimeout: DefaultSyncTimeout, maxPages: DefaultMaxListPages, maxTools: DefaultMaxListTools,
		unreachable: DefaultUnreachableAfter}
	for _, o := range opts {
		if o != nil {
			o.applyImport(&cfg)
		}
	}
	if cfg.timeoutSet && cfg.callTimeout <= 0 {
		return nil, fmt.Errorf("mcp: WithCallTimeout(%v): the timeout must be positive", cfg.callTimeout)
	}
	if cfg.syncTimeout <= 0 {
		return nil, fmt.Errorf("mcp: WithSyncTimeout(%v): the timeout must be positive", cfg.syncTimeout)
	}
	if cfg.maxPages <= 0 || cfg.maxTools <= 0 {
		return nil, fmt.Errorf("mcp: WithListLimits(%d, %d): the bounds must be positive", cfg.maxPages, cfg.maxTools)
	}
	if cfg.reconnectSet {
		if cfg.reconnect == nil {
			return nil, errors.New("mcp: WithReconnect: connect is nil")
		}
		if err := cfg.backoff.validate(); err != nil {
			return nil, err
		}
	}
	group, err := scope.Group()
	if err != nil {
		return nil, fmt.Errorf("mcp: Import: %w", err)
	}
	im := &Imported{
		group:     group,
		done:      make(chan struct{}),
		cfg:       cfg,
		sem:       make(chan struct{}, 1),
		announced: make(chan struct{}),
		tools:     make(map[string]*importedTool),
	}
	first := &link{cs: session}
	im.link.Store(first)
	im.closeCtx, im.cancel = context.WithCancel(context.Background())
	// Watch before the first listing: a change the server announces while
	// it is under way starts a re-sync after it.
	watch(im, session)
	if err := im.sync(ctx, cfg.syncTimeout, false); err != nil {
		im.Close()
		return nil, fmt.Errorf("mcp: Import: %w", err)
	}
	im.follow(first)
	return im, nil
}

// Tools returns the scope's names of the imported tools, in the order the
// server listed them.
func (im *Imported) Tools() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	out := make([]string, 0, len(im.order))
	for _, s := range im.order {
		out = append(out, im.tools[s].name)
	}
	return out
}

// Skipped returns the server tools the last sync did not register, in the
// order the server listed them.
func (im *Imported) Skipped() []Skipped {
	im.mu.Lock()
	defer im.mu.Unlock()
	return append([]Skipped(nil), im.skipped...)
}

// Sync lists the server's tools now and applies the differences, as a
// re-sync after notifications/tools/list_changed does. It waits for a
// re-sync already under way (or for ctx), and returns the listing's error,
// or the first registration error, if any. After Close it returns
// ErrImportClosed, or, after the import ended because its server went
// away, Err's error (wrapping ErrServerGone).
//
// A change subscriber may be hearing one of a sync's own changes, on that
// sync's goroutine, so a Sync made with a subscriber's ctx (or one derived
// from it; see runtime.IsCallbackContext) does not wait: while another sync
// is under way it fails at once, as a call made with that ctx does when it
// cannot be admitted at once (R86). A Sync made from a subscriber with an
// unrelated ctx waits like any other, until that ctx ends if the sync under
// way is the one announcing the change.
func (im *Imported) Sync(ctx context.Context) error {
	if ctx == nil {
		return errors.New("mcp: Sync needs a ctx")
	}
	return im.sync(ctx, 0, runtime.IsCallbackContext(ctx))
}

// ErrImportClosed is returned by Sync after Close.
var ErrImportClosed = errors.New("mcp: import closed")

// Close stops the re-syncs and disposes every tool the import registered,
// each through its own disposer (OnChange subscribers hear each removal).
// It waits for a re-sync under way to stop — the listing is cancelled at
// once, a registration in progress finishes, a reconnect attempt is
// cancelled — so no change of the import happens after Close returns;
// Done is closed and Err is ErrImportClosed (or, if the import had ended
// because its server went away, stays that reason). A session the import
// made (WithReconnect) is closed, in the background: a graceful close
// waits for the calls in flight. Close is idempotent. Calls already running
// finish; later calls of the names find no tool (runtime.CodeUnknownTool).
// A change subscriber hearing one of a sync's own changes may call Close:
// Close does not wait for a sync while it announces a change (the sync may
// be the caller); it disposes the tools at once, and the sync stops at its
// next step. Disposing the import's owner group is what keeps the promise
// then: a registration the sync has made is removed with the group, and
// one it tries afterwards is refused. The announcement under way may still
// be delivered to the other subscribers when Close returns.
func (im *Imported) Close() {
	im.mu.Lock()
	if im.closed {
		ending := im.ending
		im.mu.Unlock()
		if ending {
			im.waitEnded()
		}
		return
	}
	im.closed, im.endErr = true, ErrImportClosed
	im.mu.Unlock()
	if held := im.teardown(); !held {
		return
	}
	im.wg.Wait()
}

// teardown stops the re-syncs, disposes the tools and marks the import
// done. It reports whether it took sem (no sync was announcing a change):
// only then may Close wait for the import's goroutines.
func (im *Imported) teardown() (held bool) {
	im.cancel()
	l := im.link.Load()
	unwatch(im, l.cs)
	held = im.waitQuiet()
	im.mu.Lock()
	im.disposing = true
	im.mu.Unlock()
	im.group.Dispose()
	im.mu.Lock()
	im.disposing = false
	im.mu.Unlock()
	im.forgetAll()
	if l.own {
		go l.cs.Close() // graceful: it waits for the calls in flight
	}
	close(im.done)
	if held {
		<-im.sem
	}
	return held
}

// waitEnded waits until an import ending because its server is gone is
// done, unless its teardown is disposing the tools (the caller may be a
// change subscriber hearing a removal, on the teardown's goroutine).
func (im *Imported) waitEnded() {
	im.mu.Lock()
	disposing := im.disposing
	im.mu.Unlock()
	if !disposing {
		<-im.done
	}
}

// waitQuiet waits until no sync holds sem, and takes it (true), or until
// the sync holding it announces a change (false): Close does not wait for
// an announcement, which runs change subscribers that may call it. The
// wait is bounded: the sync's listing ends with Close, and each of its
// other steps ends or announces.
func (im *Imported) waitQuiet() bool {
	for {
		im.mu.Lock()
		if im.announcing {
			im.mu.Unlock()
			return false
		}
		announced := im.announced
		im.mu.Unlock()
		select {
		case im.sem <- struct{}{}:
			return true
		case <-announced:
		}
	}
}

// announce runs change, a registration or a disposal of the sync that holds
// sem, whose change subscribers run on this goroutine, marked as an
// announcement for Close.
func (im *Imported) announce(change func()) {
	im.mu.Lock()
	im.announcing = true
	close(im.announced)
	im.announced = make(chan struct{})
	im.mu.Unlock()
	defer func() {
		im.mu.Lock()
		im.announcing = false
		im.mu.Unlock()
	}()
	change()
}

// forgetAll empties the import's record of its tools (they are disposed).
func (im *Imported) forgetAll() {
	im.mu.Lock()
	defer im.mu.Unlock()
	clear(im.tools)
	im.order = nil
	im.served.clear()
}

// resyncSoon starts a re-sync on its own goroutine unless one is already
// waiting to begin (it will see the latest list).
func (im *Imported) resyncSoon() {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.closed || im.pending {
		return
	}
	im.pending = true
	im.wg.Add(1)
	go func() {
		// Waiting for a sync under way is bounded by Close only (giving up
		// could miss the change this re-sync is for); the re-sync's own
		// work by WithSyncTimeout.
		err := im.sync(im.closeCtx, im.cfg.syncTimeout, false)
		im.wg.Done()
		// The handler runs outside wg, so it may call Close (which waits
		// for wg); Close does not wait for a handler call in progress.
		if err != nil && !errors.Is(err, ErrImportClosed) && !errors.Is(err, ErrServerGone) && im.cfg.onError != nil {
			im.cfg.onError(fmt.Errorf("mcp: re-sync of the tool list: %w", err))
		}
	}()
}

// sync lists the tools and applies the differences, one sync at a time.
// ctx bounds the wait for the sync under way and the work; timeout, if
// positive, bounds the work once it begins. With noWait it does not wait
// for a sync under way but fails (Sync made with a subscriber's ctx).
func (im *Imported) sync(ctx context.Context, timeout time.Duration, noWait bool) error {
	if noWait {
		select {
		case im.sem <- struct{}{}:
		default:
			if im.closeCtx.Err() != nil {
				return im.closedErr()
			}
			return errSyncFromCallback
		}
	} else {
		select {
		case im.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-im.closeCtx.Done():
			return im.closedErr()
		}
	}
	defer func() { <-im.sem }()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	im.mu.Lock()
	im.pending = false
	closed := im.closed
	im.mu.Unlock()
	if closed {
		return im.closedErr()
	}
	l := im.link.Load()
	if l.gone.Load() {
		return unavailable("the session is closed")
	}
	// The listing ends with ctx or with Close.
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	unhook := context.AfterFunc(im.closeCtx, stop)
	defer unhook()
	listed, err := im.list(lctx, l.cs)
	if err == nil {
		l.failures.Store(0)
	}
	if err != nil {
		if im.closeCtx.Err() != nil {
			return im.closedErr()
		}
		if !noTools(l.cs, err) {
			switch {
			case closedForGood(err):
				im.lost(l, err)
			case isGone(err):
				im.unreachable(l, err)
			}
			return fmt.Errorf("listing tools: %w", err)
		}
		listed = nil
	}
	if err := im.apply(listed); err != nil {
		if im.closeCtx.Err() != nil {
			// Close ran meanwhile (say from a subscriber): the group is
			// disposed, so a registration was refused with
			// runtime.ErrScopeDisposed (runtime.ErrClosed once the
			// registry is closed).
			return im.closedErr()
		}
		return err
	}
	return nil
}

// closedErr is a closed import's error for Sync: ErrImportClosed, or
// why it ended if its server went away.
func (im *Imported) closedErr() error {
	im.mu.Lock()
	defer im.mu.Unlock()
	if errors.Is(im.endErr, ErrServerGone) {
		return im.endErr
	}
	return ErrImportClosed
}

// errSyncFromCallback is Sync's failure when it is made with a change
// subscriber's ctx while another sync is under way.
var errSyncFromCallback = errors.New("mcp: Sync was made with a change subscriber's ctx while a sync is under way: " +
	"the subscriber may be hearing that sync's own change, on its goroutine, so Sync does not wait for it (R86)")

// list fetches every tools/list page, within WithListLimits' bounds and
// refusing a nextCursor it has already sent.
func (im *Imported) list(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var listed []*sdk.Tool
	sent := make(map[string]bool)
	params := &sdk.ListToolsParams{}
	for page := 1; ; page++ {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, fmt.Errorf("page %d: tools/list returned no result", page)
		}
		if len(res.Tools) > im.cfg.maxTools-len(listed) {
			return nil, fmt.Errorf("the server lists more than %d tools (WithListLimits)", im.cfg.maxTools)
		}
		listed = append(listed, res.Tools...)
		next := res.NextCursor
		if next == "" {
			return listed, nil
		}
		if sent[next] {
			return nil, fmt.Errorf("page %d: the server repeated nextCursor %q (a listing that would never end)", page, trimText(next))
		}
		if page >= im.cfg.maxPages {
			return nil, fmt.Errorf("the server lists more than %d pages of tools (WithListLimits)", im.cfg.maxPages)
		}
		sent[next] = true
		params = &sdk.ListToolsParams{Cursor: next}
	}
}

// apply makes the registrations match listed: removals first, then
// replacements and additions in the server's order. It runs under sem.
func (im *Imported) apply(listed []*sdk.Tool) error {
	type want struct {
		tool  *sdk.Tool
		name  string
		print string
	}
	var wants []want
	var skipped []Skipped
	seen := make(map[string]bool, len(listed))
	for _, t := range listed {
		if t == nil {
			continue
		}
		if im.cfg.allow != nil && !im.cfg.allow[t.Name] {
			continue
		}
		if seen[t.Name] {
			skipped = append(skipped, Skipped{Tool: t.Name, Reason: fmt.Sprintf("the server lists tool %q more than once", t.Name)})
			continue
		}
		seen[t.Name] = true
		if reason := invalidName(t.Name, im.cfg.prefix+t.Name); reason != "" {
			skipped = append(skipped, Skipped{Tool: t.Name, Reason: reason})
			continue
		}
		b, err := json.Marshal(t)
		if err != nil {
			skipped = append(skipped, Skipped{Tool: t.Name, Reason: "the tool cannot be encoded as JSON: " + err.Error()})
			continue
		}
		if im.refusedListing(t.Name, string(b)) {
			skipped = append(skipped, Skipped{Tool: t.Name, Reason: taskRequiredReason})
			continue
		}
		wants = append(wants, want{tool: t, name: im.cfg.prefix + t.Name, print: string(b)})
	}

	// Removals: the tools no longer listed (or no longer importable).
	im.mu.Lock()
	current := make(map[string]*importedTool, len(im.tools))
	for k, v := range im.tools {
		current[k] = v
	}
	im.mu.Unlock()
	listedNames := make(map[string]bool, len(wants))
	for _, w := range wants {
		listedNames[w.tool.Name] = true
	}
	for _, server := range im.snapshotOrder() {
		if listedNames[server] {
			continue
		}
		if im.isClosed() {
			return ErrImportClosed
		}
		im.forget(server)
		im.announce(current[server].dispose)
	}

	// Additions and replacements, in the server's order. A changed tool's
	// old version is disposed right before its new one is registered, so
	// the name is missing for as short a time as the registry allows.
	var firstErr error
	for _, w := range wants {
		old, had := current[w.tool.Name]
		if had && old.print == w.print {
			continue
		}
		if im.isClosed() {
			return ErrImportClosed
		}
		def, err := im.definition(w.tool, w.name)
		if had {
			im.forget(w.tool.Name)
			im.announce(old.dispose)
		}
		if err != nil {
			skipped = append(skipped, Skipped{Tool: w.tool.Name, Reason: err.Error()})
			continue
		}
		if !im.cfg.shadowing {
			if _, visible := im.group.Get(w.name); visible {
				// Taken in the scope's own layer (Register would refuse it)
				// or given by a parent scope (Register would shadow it).
				skipped = append(skipped, Skipped{Tool: w.tool.Name, Reason: fmt.Sprintf(
					"tool %q is already registered in this scope or in a parent scope, whose tool an import does not shadow without WithAllowShadowing", w.name)})
				continue
			}
		}
		var dispose func()
		im.announce(func() { dispose, err = im.group.Register(def) })
		if err != nil {
			if errors.Is(err, runtime.ErrScopeDisposed) || errors.Is(err, runtime.ErrClosed) {
				return err // the group was disposed, or the registry closed
			}
			skipped = append(skipped, Skipped{Tool: w.tool.Name, Reason: err.Error()})
			if !errors.Is(err, runtime.ErrDuplicate) && !errors.Is(err, runtime.ErrInvalidDefinition) && runtimeCode(err) != runtime.CodeUnsupportedSchema && firstErr == nil {
				firstErr = err // a change subscriber's failure, say (R16)
			}
			continue
		}
		im.mu.Lock()
		if !im.closed { // else a subscriber closed the import while hearing this one
			im.tools[w.tool.Name] = &importedTool{server: w.tool.Name, name: w.name, print: w.print, dispose: dispose}
		}
		im.mu.Unlock()
	}

	// The order of the listing, for Tools.
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		return ErrImportClosed
	}
	im.order = im.order[:0]
	for _, w := range wants {
		if _, ok := im.tools[w.tool.Name]; ok {
			im.order = append(im.order, w.tool.Name)
		}
	}
	im.skipped = skipped
	im.mu.Unlock()
	return firstErr
}

// taskRequiredReason is why a tool whose calls the server refuses is
// skipped.
const taskRequiredReason = "the server refuses tools/call of it (JSON-RPC -32601, method not found): " +
	`it requires task augmentation (execution.taskSupport "required"), which Import cannot send`

// refuseCalls records that the server refuses every tools/call of server
// (as it does for a tool whose execution.taskSupport is "required") and
// starts a re-sync, which disposes the tool and reports it in Skipped. It
// stays skipped while the server lists it as it does now.
func (im *Imported) refuseCalls(server string) {
	im.mu.Lock()
	t, ok := im.tools[server]
	if ok {
		if im.refused == nil {
			im.refused = make(map[string]string)
		}
		im.refused[server] = t.print
	}
	im.mu.Unlock()
	if ok {
		im.resyncSoon()
	}
}

// refusedListing reports whether the server refuses the calls of the tool
// listed as print.
func (im *Imported) refusedListing(server, print string) bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	p, ok := im.refused[server]
	if ok && p != print {
		delete(im.refused, server) // listed anew: worth a try
		return false
	}
	return ok
}

func (im *Imported) isClosed() bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.closed
}

func (im *Imported) snapshotOrder() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	out := make([]string, 0, len(im.tools))
	out = append(out, im.order...)
	return out
}

func (im *Imported) forget(server string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	delete(im.tools, server)
	for i, s := range im.order {
		if s == server {
			im.order = append(im.order[:i], im.order[i+1:]...)
			break
		}
	}
}

// invalidName says why a tool cannot be registered under name, or "".
func invalidName(server, name string) string {
	switch {
	case server == "":
		return "the server tool has an empty name"
	case name == "run_code":
		return `tool name "run_code" is reserved`
	}
	return ""
}

// runtimeCode is the code of a coded error, or "".
func runtimeCode(err error) runtime.Code {
	var c runtime.Coded
	if errors.As(err, &c) {
		return runtime.Code(c.Code())
	}
	return ""
}

// ToolListChangedHandler is the handler to put in sdk.ClientOptions'
// ToolListChangedHandler field of a client whose sessions are imported:
// on notifications/tools/list_changed it starts a re-sync of every live
// Import of the notifying session (and returns at once; the re-sync runs
// on its own goroutine). A client that has its own handler calls this one
// from it.
func ToolListChangedHandler(_ context.Context, req *sdk.ToolListChangedRequest) {
	if req == nil {
		return
	}
	cs, ok := req.GetSession().(*sdk.ClientSession)
	if !ok || cs == nil {
		return
	}
	for _, im := range watching(cs) {
		im.resyncSoon()
	}
}

// watchers maps each session to its live imports.
var watchers = struct {
	mu sync.Mutex
	m  map[*sdk.ClientSession][]*Imported
}{m: make(map[*sdk.ClientSession][]*Imported)}

func watch(im *Imported, cs *sdk.ClientSession) {
	watchers.mu.Lock()
	defer watchers.mu.Unlock()
	watchers.m[cs] = append(watchers.m[cs], im)
}

func unwatch(im *Imported, cs *sdk.ClientSession) {
	watchers.mu.Lock()
	defer watchers.mu.Unlock()
	list := watchers.m[cs]
	for i, x := range list {
		if x == im {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(watchers.m, cs)
		return
	}
	watchers.m[cs] = list
}

func watching(cs *sdk.ClientSession) []*Imported {
	watchers.mu.Lock()
	defer watchers.mu.Unlock()
	return append([]*Imported(nil), watchers.m[cs]...)
}

// trimText shortens s for a message.
func trimText(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}
