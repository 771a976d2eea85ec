package load

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// LogVersion is the version of the record format written by Record.
const LogVersion = 1

// MaxLogLine bounds one line of a log read by ReadLog: a call's largest
// output (MaxOutputBytes) and a result text as large, with room to spare.
const MaxLogLine = 2*MaxOutputBytes + 1<<20

// maxLogCalls bounds the calls a log may hold.
const maxLogCalls = 10_000_000

// LogHeader is the first line of a log: the scenario and how it ran.
type LogHeader struct {
	Kind     string          `json:"kind"` // "header"
	Version  int             `json:"version"`
	Virtual  bool            `json:"virtual"`
	Scenario json.RawMessage `json:"scenario"`
}

// LogOutput is what a tool body returned: its text, or its error (with the
// error's code and name when it has them).
type LogOutput struct {
	Text  string `json:"text,omitempty"`
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
	Name  string `json:"name,omitempty"`
}

// LogResult is the result the agent saw: SHA256 is the hex SHA-256 of its
// text, and Text the text itself when it differs from the output's (a
// failure's text, a timeout's), so a changed output cannot go unnoticed.
type LogResult struct {
	IsError bool    `json:"isError,omitempty"`
	Code    string  `json:"code,omitempty"`
	SHA256  string  `json:"sha256"`
	Text    *string `json:"text,omitempty"`
}

// LogCall is one call: where it ran (agent, turn, index in the turn), what
// it was (tool, arguments, classification), when (times in nanoseconds
// since the run's start, on the run's clock: entered the registry,
// admitted, dispatch done, finished), its place in the turn's commit
// order, what the body returned and what the agent saw. A call never
// dispatched has admitted and dispatchDone 0 and no output.
type LogCall struct {
	Kind         string          `json:"kind"` // "call"
	Agent        string          `json:"agent"`
	Turn         int             `json:"turn"`
	Call         int             `json:"call"`
	Tool         string          `json:"tool"`
	Arguments    json.RawMessage `json:"args"`
	Mode         string          `json:"mode,omitempty"`
	Entered      int64           `json:"entered"`
	Admitted     int64           `json:"admitted,omitempty"`
	DispatchDone int64           `json:"dispatchDone,omitempty"`
	Finished     int64           `json:"finished"`
	Commit       int             `json:"commit"`
	Output       *LogOutput      `json:"output,omitempty"`
	Result       LogResult       `json:"result"`
}

// LogTurn is one turn, written after its calls: when it was meant to start
// (the open loop's arrival; the closed loop's start) and the orders of its
// calls by index — admitted (by admission time, then index) and committed.
type LogTurn struct {
	Kind      string `json:"kind"` // "turn"
	Agent     string `json:"agent"`
	Turn      int    `json:"turn"`
	Intended  int64  `json:"intended"`
	Calls     int    `json:"calls"`
	Admission []int  `json:"admission"`
	Commit    []int  `json:"commit"`
}

// Log is a recorded run (ReadLog): the scenario and every call.
type Log struct {
	Header   LogHeader
	Scenario *Scenario
	Calls    []LogCall
	Turns    []LogTurn
}

// callID is the id the generator gives call i of agent's turn.
func callID(agent string, turn, call int) string {
	return agent + "/" + strconv.Itoa(turn) + "/" + strconv.Itoa(call)
}

// splitCallID inverts callID.
func splitCallID(id string) (agent string, turn, call int, ok bool) {
	j := strings.LastIndexByte(id, '/')
	if j < 0 {
		return "", 0, 0, false
	}
	i := strings.LastIndexByte(id[:j], '/')
	if i < 0 {
		return "", 0, 0, false
	}
	t, err1 := strconv.Atoi(id[i+1 : j])
	c, err2 := strconv.Atoi(id[j+1:])
	return id[:i], t, c, err1 == nil && err2 == nil
}

// recorder writes the log as the run goes: a call's line when the call is
// finished (turns commit in model order, docs/contract.md#r95), a turn's
// line once all its calls are written.
type recorder struct {
	mu      sync.Mutex
	w       *bufio.Writer
	err     error
	outputs map[string]*LogOutput // by call id, until the call's line is written
	turns   map[string]*recTurn   // by turn id
}

type recTurn struct {
	line  LogTurn
	calls []LogCall
}

func newRecorder(w io.Writer, sc *Scenario, virtual bool) *recorder {
	r := &recorder{w: bufio.NewWriterSize(w, 1<<16), outputs: map[string]*LogOutput{}, turns: map[string]*recTurn{}}
	doc, err := json.Marshal(sc)
	if err != nil {
		r.err = err
		return r
	}
	r.write(LogHeader{Kind: "header", Version: LogVersion, Virtual: virtual, Scenario: doc})
	return r
}

func (r *recorder) write(v any) {
	if r.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		b = append(b, '\n')
		_, err = r.w.Write(b)
	}
	r.err = err
}

func (r *recorder) turnStarted(agent, id string, intended time.Duration) {
	_, turn, _, _ := splitCallID(id + "/0")
	r.mu.Lock()
	r.turns[id] = &recTurn{line: LogTurn{Kind: "turn", Agent: agent, Turn: turn, Intended: int64(intended)}}
	r.mu.Unlock()
}

// bodyOutput keeps what a body returned until its call finishes.
func (r *recorder) bodyOutput(id, text string, err error) {
	o := &LogOutput{Text: text}
	if err != nil {
		o = outputOfError(err)
	}
	r.mu.Lock()
	r.outputs[id] = o
	r.mu.Unlock()
}

func outputOfError(err error) *LogOutput {
	o := &LogOutput{Error: err.Error()}
	var c runtime.Coded
	if errors.As(err, &c) {
		o.Code, o.Name = c.Code(), c.Name()
	}
	return o
}

// call is a finished call (Hooks.CallFinished).
func (r *recorder) call(ex runtime.Execution, d runtime.CallDone, start time.Time) {
	id := ex.CallID()
	agent, turn, idx, ok := splitCallID(id)
	if !ok {
		return // not a call of the generator's
	}
	args, _ := ex.Arguments()
	at := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return int64(t.Sub(start))
	}
	c := LogCall{Kind: "call", Agent: agent, Turn: turn, Call: idx, Tool: ex.Name(),
		Arguments: append(json.RawMessage(nil), args...), Entered: at(d.EnteredAt), Finished: at(d.Now())}
	if d.Classified {
		c.Mode = d.Mode.String()
	}
	if !d.DispatchDoneAt.IsZero() {
		c.Admitted, c.DispatchDone = at(d.StartedAt), at(d.DispatchDoneAt)
	}
	c.Result = resultOf(d.Result, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.outputs[id]; o != nil {
		c.Output = o
		delete(r.outputs, id)
		c.Result = resultOf(d.Result, o)
	}
	t := r.turns[agent+"/"+strconv.Itoa(turn)]
	if t == nil {
		return
	}
	c.Commit = len(t.calls)
	t.calls = append(t.calls, c)
	r.write(c)
}

// resultOf is what the agent saw; its text is left out when the body's
// output has the same.
func resultOf(res *runtime.Result, o *LogOutput) LogResult {
	text := res.Text()
	l := LogResult{IsError: res.IsError(), Code: string(res.Code()), SHA256: digest(text)}
	if o == nil || o.Error != "" || o.Text != text {
		l.Text = &text
	}
	return l
}

// turnEnded writes the turn's line (the collector's turn returned).
func (r *recorder) turnEnded(id string, calls int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.turns[id]
	if t == nil {
		return
	}
	delete(r.turns, id)
	t.line.Calls = calls
	adm := make([]LogCall, 0, len(t.calls))
	for _, c := range t.calls {
		t.line.Commit = append(t.line.Commit, c.Call)
		if c.DispatchDone != 0 || c.Admitted != 0 {
			adm = append(adm, c)
		}
	}
	sort.SliceStable(adm, func(i, j int) bool {
		if adm[i].Admitted != adm[j].Admitted {
			return adm[i].Admitted < adm[j].Admitted
		}
		return adm[i].Call < adm[j].Call
	})
	t.line.Admission = make([]int, len(adm))
	for i, c := range adm {
		t.line.Admission[i] = c.Call
	}
	r.write(t.line)
}

func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if r.err != nil {
		return fmt.Errorf("load: record: %w", r.err)
	}
	return nil
}

// LogError is a log ReadLog refuses: the line and why.
type LogError struct {
	Line   int
	Reason string
}

// Error names the log line and what is wrong with it.
func (e *LogError) Error() string { return fmt.Sprintf("load: log line %d: %s", e.Line, e.Reason) }

// ReadLog reads a log written by Options.Record. It is checked as hostile
// input: a line longer than MaxLogLine, an unknown kind or field, a
// scenario Parse refuses, a call whose place is out of range or given
// twice, a turn out of range or with more calls in its orders than it
// has, or more than ten million calls or turns are refused with the line
// and why.
func ReadLog(rd io.Reader) (*Log, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLogLine)
	l := &Log{}
	seen := map[string]bool{}
	n := 0
	bad := func(format string, args ...any) error { return &LogError{n, fmt.Sprintf(format, args...)} }
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var k struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &k); err != nil {
			return nil, bad("not a JSON object: %v", err)
		}
		if l.Scenario == nil && k.Kind != "header" {
			return nil, bad(`the first line must be the header (kind "header"), got kind %q`, k.Kind)
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		switch k.Kind {
		case "header":
			if l.Scenario != nil {
				return nil, bad("a second header")
			}
			if err := dec.Decode(&l.Header); err != nil {
				return nil, bad("header: %v", err)
			}
			if l.Header.Version != LogVersion {
				return nil, bad("version %d, this reader knows %d", l.Header.Version, LogVersion)
			}
			s, err := Parse(l.Header.Scenario)
			if err != nil {
				return nil, bad("the scenario: %v", err)
			}
			l.Scenario = s
		case "call":
			var c LogCall
			if err := dec.Decode(&c); err != nil {
				return nil, bad("call: %v", err)
			}
			switch {
			case c.Agent == "" || strings.ContainsRune(c.Agent, '/'):
				return nil, bad("call: agent %q is not an agent key", c.Agent)
			case c.Turn < 0 || c.Turn >= l.Scenario.Turns.PerAgent:
				return nil, bad("call: turn %d out of range [0, %d)", c.Turn, l.Scenario.Turns.PerAgent)
			case c.Call < 0 || c.Call >= MaxCallsPerTurn:
				return nil, bad("call: call %d out of range [0, %d)", c.Call, MaxCallsPerTurn)
			case len(l.Calls) >= maxLogCalls:
				return nil, bad("more than %d calls", maxLogCalls)
			}
			id := callID(c.Agent, c.Turn, c.Call)
			if seen[id] {
				return nil, bad("call %s given twice", id)
			}
			seen[id] = true
			l.Calls = append(l.Calls, c)
		case "turn":
			var t LogTurn
			if err := dec.Decode(&t); err != nil {
				return nil, bad("turn: %v", err)
			}
			switch {
			case t.Agent == "" || strings.ContainsRune(t.Agent, '/'):
				return nil, bad("turn: agent %q is not an agent key", t.Agent)
			case t.Turn < 0 || t.Turn >= l.Scenario.Turns.PerAgent:
				return nil, bad("turn: turn %d out of range [0, %d)", t.Turn, l.Scenario.Turns.PerAgent)
			case t.Calls < 0 || t.Calls > MaxCallsPerTurn:
				return nil, bad("turn: calls %d out of range [0, %d]", t.Calls, MaxCallsPerTurn)
			case len(t.Admission) > t.Calls || len(t.Commit) > t.Calls:
				return nil, bad("turn: %d admitted and %d committed of %d calls", len(t.Admission), len(t.Commit), t.Calls)
			case len(l.Turns) >= maxLogCalls:
				return nil, bad("more than %d turns", maxLogCalls)
			}
			for _, i := range append(append([]int(nil), t.Admission...), t.Commit...) {
				if i < 0 || i >= t.Calls {
					return nil, bad("turn: call %d out of range [0, %d)", i, t.Calls)
				}
			}
			l.Turns = append(l.Turns, t)
		default:
			return nil, bad("unknown kind %q", k.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &LogError{n + 1, fmt.Sprintf("longer than %d bytes", MaxLogLine)}
		}
		return nil, fmt.Errorf("load: log: %w", err)
	}
	if l.Scenario == nil {
		return nil, &LogError{0, "empty: no header"}
	}
	return l, nil
}

// Divergence is where a replayed run first differs from its log: the
// agent, turn and call (index in the turn), and what differs.
type Divergence struct {
	Agent  string `json:"agent"`
	Turn   int    `json:"turn"`
	Call   int    `json:"call"`
	Reason string `json:"reason"`
	at     int64  // the call's recorded finish time (orders divergences)
}

// String says where the replay first diverged (agent, turn, call) and how.
func (d Divergence) String() string {
	return fmt.Sprintf("agent %s, turn %d, call %d: %s", d.Agent, d.Turn, d.Call, d.Reason)
}

// ReplayReport says how a replay compared with its log.
type ReplayReport struct {
	// Calls is how many calls were compared; Divergences how many differed.
	Calls       int `json:"calls"`
	Divergences int `json:"divergences"`
	// First is the earliest divergence by the log's time (then agent, turn,
	// call); nil when the replay matched.
	First *Divergence `json:"first,omitempty"`
}

// replayer serves outputs from a log and compares what agents see with it.
type replayer struct {
	log   *Log
	byID  map[string]*LogCall
	mu    sync.Mutex
	next  map[string]int // per agent: the index in its sequence of the next call expected
	seq   map[string][]*LogCall
	seen  map[string]bool
	calls int
	ndivs int         // divergences seen
	first *Divergence // the earliest of them (Divergence.before); only it is kept
}

func newReplayer(l *Log) *replayer {
	p := &replayer{log: l, byID: map[string]*LogCall{}, next: map[string]int{}, seq: map[string][]*LogCall{}, seen: map[string]bool{}}
	for i := range l.Calls {
		c := &l.Calls[i]
		p.byID[callID(c.Agent, c.Turn, c.Call)] = c
		p.seq[c.Agent] = append(p.seq[c.Agent], c)
	}
	for _, s := range p.seq { // each agent's calls: by turn, then commit order
		sort.SliceStable(s, func(i, j int) bool {
			if s[i].Turn != s[j].Turn {
				return s[i].Turn < s[j].Turn
			}
			return s[i].Commit < s[j].Commit
		})
	}
	return p
}

// output is the recorded output of call id.
func (p *replayer) output(id string) (string, error) {
	c := p.byID[id]
	if c == nil || c.Output == nil {
		return "", runtime.NewError("ReplayMissing", "LOAD_REPLAY_MISSING", "replay: no recorded output for call "+id)
	}
	o := c.Output
	if o.Error == "" && o.Code == "" {
		return o.Text, nil
	}
	if o.Code != "" {
		return "", runtime.NewError(o.Name, runtime.Code(o.Code), o.Error)
	}
	return "", errors.New(o.Error)
}

// diverge counts a divergence and keeps it if it is the earliest so far:
// a replay where every call differs holds one, not one per call (with its
// quoted texts), and formats the reason of those it keeps only.
func (p *replayer) diverge(agent string, turn, call int, at int64, format string, args ...any) {
	p.ndivs++
	d := Divergence{Agent: agent, Turn: turn, Call: call, at: at}
	if p.first == nil || d.before(*p.first) {
		d.Reason = fmt.Sprintf(format, args...)
		p.first = &d
	}
}

// before orders divergences: by the log's time, then agent, turn, call.
func (d Divergence) before(e Divergence) bool {
	if d.at != e.at {
		return d.at < e.at
	}
	if d.Agent != e.Agent {
		return d.Agent < e.Agent
	}
	if d.Turn != e.Turn {
		return d.Turn < e.Turn
	}
	return d.Call < e.Call
}

// call compares a finished call with the log.
func (p *replayer) call(ex runtime.Execution, d runtime.CallDone) {
	agent, turn, idx, ok := splitCallID(ex.CallID())
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	id := ex.CallID()
	p.seen[id] = true
	rec := p.byID[id]
	if rec == nil {
		p.diverge(agent, turn, idx, 1<<62, "a call the log does not have (%s)", ex.Name())
		return
	}
	if s, k := p.seq[agent], p.next[agent]; k < len(s) && s[k] != rec {
		p.diverge(agent, turn, idx, rec.Finished, "seen out of order: the log's next result for this agent is turn %d call %d", s[k].Turn, s[k].Call)
	}
	p.next[agent]++
	args, _ := ex.Arguments()
	switch {
	case ex.Name() != rec.Tool:
		p.diverge(agent, turn, idx, rec.Finished, "tool %q, the log has %q", ex.Name(), rec.Tool)
		return
	case !sameJSON(args, rec.Arguments):
		p.diverge(agent, turn, idx, rec.Finished, "arguments %s, the log has %s", args, rec.Arguments)
		return
	}
	want := rec.Result
	res := d.Result
	switch {
	case res.IsError() != want.IsError || string(res.Code()) != want.Code:
		p.diverge(agent, turn, idx, rec.Finished, "result error=%v code %q, the log has error=%v code %q", res.IsError(), res.Code(), want.IsError, want.Code)
	case digest(res.Text()) != want.SHA256:
		logged := "a text of SHA-256 " + want.SHA256
		if want.Text != nil {
			logged = quoteShort(*want.Text)
		}
		p.diverge(agent, turn, idx, rec.Finished, "result text %s, the log has %s", quoteShort(res.Text()), logged)
	}
}

// sameJSON: a and b are the same JSON text up to insignificant space.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func quoteShort(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

// result closes the comparison: logged calls never made diverge too.
func (p *replayer) result() *ReplayReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.byID {
		if !p.seen[id] {
			p.diverge(c.Agent, c.Turn, c.Call, c.Finished, "the log has this call (%s); the replay did not make it", c.Tool)
		}
	}
	r := &ReplayReport{Calls: p.calls, Divergences: p.ndivs}
	if p.first != nil {
		first := *p.first
		r.First = &first
	}
	return r
}

// callFinished is the recorder's and replayer's hook.
func (e *runEnv) callFinished(ex runtime.Execution, d runtime.CallDone) {
	if e.rec != nil {
		e.rec.call(ex, d, e.startedAt)
	}
	if e.replay != nil {
		e.replay.call(ex, d)
	}
}
