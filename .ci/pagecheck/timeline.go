package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

//go:embed timeline.js
var timelineJS string

// tlState is what the timeline page says it draws (window.timeline.state()).
type tlState struct {
	D0, D1, End                float64 // µs: the shown range and the run's end
	Drawn, Markers, Lanes      int     // calls drawn, failure markers, lanes shown
	Calls, Failures, TableRows int
	TableFirst                 int // the first row shown (a page of the table)
	FailuresOnly               bool
	Collapsed                  []string
	Pinned                     string
	DrawMs                     float64
}

type tlCounts struct {
	Bars, FailureBars, Lanes, TableRows int
	Tip                                 string
}

type tlPoint struct {
	X, Y                     float64
	Hit                      bool
	Left, Right, Top, Bottom float64
	Text                     string
}

type tlMarkers struct {
	Problems []string
	Count    int
}

// tlDriver drives one timeline page with real input (the DevTools Input
// domain) and reads what it drew.
type tlDriver struct {
	b *Browser
	s string
}

func (d tlDriver) eval(expr string, v any) error {
	raw, err := evaluate(d.b, d.s, expr, false)
	if err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %v: %s", expr, err, raw)
	}
	return nil
}

// frame waits for the next animation frame, so what the input changed is
// laid out.
func (d tlDriver) frame() error {
	_, err := evaluate(d.b, d.s, `new Promise(r => requestAnimationFrame(() => r(1)))`, true)
	return err
}

func (d tlDriver) mouse(typ string, x, y float64, pressed bool) error {
	p := map[string]any{"type": typ, "x": x, "y": y, "button": "none", "buttons": 0}
	if typ != "mouseMoved" {
		p["button"], p["clickCount"] = "left", 1
	}
	if pressed {
		p["buttons"] = 1
	}
	_, err := d.b.Call(d.s, "Input.dispatchMouseEvent", p, 10*time.Second)
	return err
}

func (d tlDriver) click(x, y float64) error {
	for _, st := range []struct {
		typ     string
		pressed bool
	}{{"mouseMoved", false}, {"mousePressed", true}, {"mouseReleased", false}} {
		if err := d.mouse(st.typ, x, y, st.pressed); err != nil {
			return err
		}
	}
	return d.frame()
}

// drag presses at x1, moves in steps to x2 and releases there, at height y.
func (d tlDriver) drag(x1, x2, y float64) error {
	if err := d.mouse("mouseMoved", x1, y, false); err != nil {
		return err
	}
	if err := d.mouse("mousePressed", x1, y, true); err != nil {
		return err
	}
	for i := 1; i <= 6; i++ {
		if err := d.mouse("mouseMoved", x1+(x2-x1)*float64(i)/6, y, true); err != nil {
			return err
		}
	}
	if err := d.mouse("mouseReleased", x2, y, false); err != nil {
		return err
	}
	return d.frame()
}

func (d tlDriver) key(key string, code int) error {
	for _, typ := range []string{"keyDown", "keyUp"} {
		if _, err := d.b.Call(d.s, "Input.dispatchKeyEvent", map[string]any{"type": typ, "key": key, "code": key, "windowsVirtualKeyCode": code}, 10*time.Second); err != nil {
			return err
		}
	}
	return d.frame()
}

func (d tlDriver) state() (tlState, error) {
	var st tlState
	return st, d.eval(`window.timeline.state()`, &st)
}

func (d tlDriver) counts() (tlCounts, error) {
	var c tlCounts
	return c, d.eval(`window.__pc.counts()`, &c)
}

// at finds sel's first visible element (scrolled into view if scroll) and
// a point that hits it.
func (d tlDriver) at(sel string, scroll bool) (*tlPoint, error) {
	var p *tlPoint
	b, _ := json.Marshal(sel)
	if err := d.eval(fmt.Sprintf(`window.__pc.at(%s, %v)`, b, scroll), &p); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("no visible %s", sel)
	}
	if !p.Hit {
		return nil, fmt.Errorf("%s (%q) cannot be hit: something covers it", sel, p.Text)
	}
	return p, nil
}

func (d tlDriver) clickOn(sel string) error {
	p, err := d.at(sel, true)
	if err != nil {
		return err
	}
	return d.click(p.X, p.Y)
}

// checkTimeline drives a page that exposes window.timeline (the demo's
// timeline.html) with real mouse and keyboard input and checks that:
//   - the whole run is shown at first: every call drawn once, every failure
//     with a marker of at least 10×10 px whose fill tells its kind apart
//     (from the other kinds and from the bars of calls that succeeded),
//     every turn frame inside its plot;
//   - a drag across the chart zooms to that range (fewer calls drawn,
//     markers still 10×10 px, labels still fit), and the reset shows the
//     whole run again;
//   - a lane's toggle folds it and its sub-agents into a strip that still
//     draws their calls and failure markers, and unfolds it; "Collapse all"
//     leaves the top-level lanes only, "Expand all" all of them;
//   - "failures only" draws the failures and nothing else;
//   - hovering a marker shows the call's card, a click pins it, Escape
//     lets go;
//   - the table lists every call, and fits the window.
//
// measure runs measure.js again in a state (labels fit, nothing cut off);
// snap writes a screenshot of a state next to the page's.
// It returns the problems found, and the time the page's first draw took.
func checkTimeline(b *Browser, s string, measure func(label string) ([]string, error), snap func(name string) error) (problems []string, drawMs float64, err error) {
	d := tlDriver{b, s}
	if err := d.eval(timelineJS, nil); err != nil {
		return nil, 0, err
	}
	measureAll := measure
	measure = func(label string) ([]string, error) {
		if err := d.eval(`(window.__pc.flush(), true)`, nil); err != nil {
			return nil, err
		}
		return measureAll(label)
	}
	t0 := time.Now()
	step := func(what string) {
		if os.Getenv("PAGECHECK_TRACE") != "" {
			fmt.Fprintf(os.Stderr, "      %6s %s\n", time.Since(t0).Round(time.Millisecond), what)
		}
	}
	add := func(format string, args ...any) {
		problems = append(problems, "timeline: "+fmt.Sprintf(format, args...))
	}
	addAll := func(label string, ps []string) {
		for _, p := range ps {
			add("%s: %s", label, p)
		}
	}
	checkMarkers := func(label string, want int) error {
		var m tlMarkers
		if err := d.eval(`window.__pc.markers()`, &m); err != nil {
			return err
		}
		addAll(label, m.Problems)
		if m.Count != want {
			add("%s: %d failure markers drawn, want %d", label, m.Count, want)
		}
		return nil
	}

	// Lanes far from the window are drawn when they come near it: scroll
	// the last lane into view and it is drawn.
	var lastDrawn bool
	if err := d.eval(`([...document.querySelectorAll('section.lane')].filter(s => !s.hidden).pop().scrollIntoView(), true)`, nil); err != nil {
		return nil, 0, err
	}
	// Up to 3 s: the observer reports in a task after a frame.
	raw, err := evaluate(b, s, `new Promise(r => { const t0 = performance.now(); const poll = () => {
		const s = [...document.querySelectorAll('section.lane')].filter(s => !s.hidden).pop();
		if (s && s.querySelector('svg').childElementCount > 0) r(true); else if (performance.now() - t0 > 3000) r(false); else setTimeout(poll, 20);
	}; poll(); })`, true)
	if err != nil {
		return nil, 0, err
	}
	if err := json.Unmarshal(raw, &lastDrawn); err != nil {
		return nil, 0, err
	}
	if !lastDrawn {
		add("the last lane, scrolled into view, is still empty")
	}

	// The whole run.
	st, err := d.state()
	if err != nil {
		return nil, 0, err
	}
	drawMs = st.DrawMs
	c, err := d.counts()
	if err != nil {
		return nil, 0, err
	}
	if st.D0 != 0 || st.D1 != st.End || st.End <= 0 {
		add("at first the page shows %.0f–%.0f µs, want the whole run 0–%.0f", st.D0, st.D1, st.End)
	}
	if st.Drawn != st.Calls || c.Bars != st.Calls {
		add("at first %d calls drawn (%d bars in the page), want all %d", st.Drawn, c.Bars, st.Calls)
	}
	if st.Failures == 0 {
		add("the run has no failure to mark")
	}
	if err := checkMarkers("whole run", st.Failures); err != nil {
		return nil, 0, err
	}
	var frames []string
	if err := d.eval(`window.__pc.frames()`, &frames); err != nil {
		return nil, 0, err
	}
	addAll("whole run", frames)

	step("whole run checked")
	// Zoom: drag from 30% to 55% of the plot's width over the first lane.
	if err := d.eval(`(scrollTo(0, 0), true)`, nil); err != nil {
		return nil, 0, err
	}
	ax, err := d.at(`#axis`, false)
	if err != nil {
		return nil, 0, err
	}
	lane, err := d.at(`section.lane svg.plot`, false)
	if err != nil {
		return nil, 0, err
	}
	w := ax.Right - ax.Left
	if err := d.drag(ax.Left+0.30*w, ax.Left+0.55*w, lane.Y); err != nil {
		return nil, 0, err
	}
	z, err := d.state()
	if err != nil {
		return nil, 0, err
	}
	c, err = d.counts()
	if err != nil {
		return nil, 0, err
	}
	if f := (z.D1 - z.D0) / st.End; !(z.D0 > 0 && z.D1 < st.End && f > 0.18 && f < 0.32) {
		add("dragging across 30%%–55%% of the plot shows %.0f–%.0f µs of %.0f, want about a quarter of the run", z.D0, z.D1, st.End)
	} else {
		if z.Drawn >= st.Calls || c.Bars != z.Drawn {
			add("zoomed to %.0f–%.0f µs: %d calls drawn (%d bars), want fewer than all %d", z.D0, z.D1, z.Drawn, c.Bars, st.Calls)
		}
		if err := checkMarkers("zoomed", z.Markers); err != nil {
			return nil, 0, err
		}
		ps, err := measure("zoomed")
		if err != nil {
			return nil, 0, err
		}
		addAll("zoomed", ps)
		if err := snap("zoomed"); err != nil {
			return nil, 0, err
		}
	}
	step("zoom checked")
	if err := d.clickOn(`#zoom-reset`); err != nil {
		return nil, 0, err
	}
	if r, err := d.state(); err != nil {
		return nil, 0, err
	} else if r.D0 != 0 || r.D1 != st.End || r.Drawn != st.Calls {
		add("after Reset zoom: %.0f–%.0f µs with %d calls drawn, want 0–%.0f with %d", r.D0, r.D1, r.Drawn, st.End, st.Calls)
	}

	step("reset")
	// Collapse the first lane with sub-agents, then unfold it.
	var parent struct {
		Lane, Name string
		Kids       int
	}
	if err := d.eval(`(() => { const s = document.querySelector('section.lane[data-kids]'); return s ? {lane: s.dataset.lane, name: s.getAttribute('aria-label').replace(/^lane /, ''), kids: +s.dataset.kids} : null })()`, &parent); err != nil {
		return nil, 0, err
	}
	if parent.Lane == "" {
		add("no lane with sub-agents to collapse")
	} else {
		tog := fmt.Sprintf(`section.lane[data-lane="%s"] button.tog`, parent.Lane)
		kidsShown := fmt.Sprintf(`[...document.querySelectorAll('section.lane[data-parent="%s"]')].filter(s => !s.hidden).length`, parent.Lane)
		if err := d.clickOn(tog); err != nil {
			return nil, 0, err
		}
		cs, err := d.state()
		if err != nil {
			return nil, 0, err
		}
		var shown int
		if err := d.eval(kidsShown, &shown); err != nil {
			return nil, 0, err
		}
		if !slices.Contains(cs.Collapsed, parent.Name) || shown != 0 {
			add("after a click on %s's toggle: collapsed %q, %d of its %d sub-agent lanes shown, want it collapsed and none", parent.Name, cs.Collapsed, shown, parent.Kids)
		}
		if cs.Drawn != st.Calls {
			add("with %s collapsed %d calls drawn, want all %d (its sub-agents' in its strip)", parent.Name, cs.Drawn, st.Calls)
		}
		if err := checkMarkers("collapsed "+parent.Name, st.Failures); err != nil {
			return nil, 0, err
		}
		if err := d.clickOn(tog); err != nil {
			return nil, 0, err
		}
		cs, err = d.state()
		if err != nil {
			return nil, 0, err
		}
		if err := d.eval(kidsShown, &shown); err != nil {
			return nil, 0, err
		}
		if len(cs.Collapsed) != 0 || shown != parent.Kids {
			add("after a second click on %s's toggle: collapsed %q, %d of %d sub-agent lanes shown, want none collapsed and all", parent.Name, cs.Collapsed, shown, parent.Kids)
		}
	}
	step("lane toggled")
	var topLevel, allLanes int
	if err := d.eval(`document.querySelectorAll('section.lane:not([data-parent])').length`, &topLevel); err != nil {
		return nil, 0, err
	}
	if err := d.eval(`document.querySelectorAll('section.lane').length`, &allLanes); err != nil {
		return nil, 0, err
	}
	if err := d.clickOn(`#collapse-all`); err != nil {
		return nil, 0, err
	}
	if cs, err := d.state(); err != nil {
		return nil, 0, err
	} else if cs.Lanes != topLevel || cs.Drawn != st.Calls || cs.Markers != st.Failures {
		add("after Collapse all: %d lanes, %d calls and %d markers drawn, want %d top-level lanes, %d and %d", cs.Lanes, cs.Drawn, cs.Markers, topLevel, st.Calls, st.Failures)
	}
	ps, err := measure("collapsed")
	if err != nil {
		return nil, 0, err
	}
	addAll("collapsed", ps)
	if err := d.eval(`(scrollTo(0, 0), true)`, nil); err != nil {
		return nil, 0, err
	}
	if err := snap("collapsed"); err != nil {
		return nil, 0, err
	}
	if err := d.clickOn(`#expand-all`); err != nil {
		return nil, 0, err
	}
	if cs, err := d.state(); err != nil {
		return nil, 0, err
	} else if cs.Lanes != allLanes || len(cs.Collapsed) != 0 {
		add("after Expand all: %d of %d lanes, collapsed %q", cs.Lanes, allLanes, cs.Collapsed)
	}

	step("collapse all checked")
	// Failures only.
	if err := d.clickOn(`#failures-only`); err != nil {
		return nil, 0, err
	}
	fs, err := d.state()
	if err != nil {
		return nil, 0, err
	}
	c, err = d.counts()
	if err != nil {
		return nil, 0, err
	}
	if !fs.FailuresOnly || fs.Drawn != st.Failures || c.Bars != st.Failures || c.FailureBars != st.Failures {
		add("with failures only: on %v, %d calls drawn, %d bars of which %d failures, want %d failures and nothing else", fs.FailuresOnly, fs.Drawn, c.Bars, c.FailureBars, st.Failures)
	}
	if err := checkMarkers("failures only", st.Failures); err != nil {
		return nil, 0, err
	}
	ps, err = measure("failures only")
	if err != nil {
		return nil, 0, err
	}
	addAll("failures only", ps)
	if err := d.eval(`(scrollTo(0, 0), true)`, nil); err != nil {
		return nil, 0, err
	}
	if err := snap("failures"); err != nil {
		return nil, 0, err
	}
	if err := d.clickOn(`#failures-only`); err != nil {
		return nil, 0, err
	}
	if fs, err = d.state(); err != nil {
		return nil, 0, err
	} else if fs.FailuresOnly || fs.Drawn != st.Calls {
		add("failures only off again: on %v, %d calls drawn, want %d", fs.FailuresOnly, fs.Drawn, st.Calls)
	}

	step("failures only checked")
	// The card: hover a marker, pin it with a click, let go with Escape.
	mk, err := d.at(`section.lane path.mk`, true)
	if err != nil {
		return nil, 0, err
	}
	if err := d.mouse("mouseMoved", mk.X, mk.Y, false); err != nil {
		return nil, 0, err
	}
	if err := d.frame(); err != nil {
		return nil, 0, err
	}
	if c, err = d.counts(); err != nil {
		return nil, 0, err
	}
	if !strings.Contains(c.Tip, "outcome: ") || !strings.ContainsAny(c.Tip, "[") {
		add("hovering a failure marker shows %q, want the call's card", c.Tip)
	}
	if err := d.click(mk.X, mk.Y); err != nil {
		return nil, 0, err
	}
	if err := d.mouse("mouseMoved", 3, 3, false); err != nil {
		return nil, 0, err
	}
	pin, err := d.state()
	if err != nil {
		return nil, 0, err
	}
	if c, err = d.counts(); err != nil {
		return nil, 0, err
	}
	if pin.Pinned == "" || !strings.Contains(c.Tip, pin.Pinned) {
		add("a click on a marker pins %q, the card shows %q after the mouse left, want the call pinned and shown", pin.Pinned, c.Tip)
	}
	if err := d.key("Escape", 27); err != nil {
		return nil, 0, err
	}
	if c, err = d.counts(); err != nil {
		return nil, 0, err
	}
	if c.Tip != "" {
		add("Escape leaves the card shown: %q", c.Tip)
	}

	step("card checked")
	// The table of every call.
	if err := d.clickOn(`#calls > summary`); err != nil {
		return nil, 0, err
	}
	if c, err = d.counts(); err != nil {
		return nil, 0, err
	}
	tb, err := d.state()
	if err != nil {
		return nil, 0, err
	}
	const tablePage = 250
	if tb.TableRows != st.Calls || c.TableRows != min(tablePage, st.Calls) {
		add("the table lists %d calls with %d rows on its first page, want %d and %d", tb.TableRows, c.TableRows, st.Calls, min(tablePage, st.Calls))
	}
	if st.Calls > tablePage {
		if err := d.clickOn(`#tnext`); err != nil {
			return nil, 0, err
		}
		if tb, err = d.state(); err != nil {
			return nil, 0, err
		}
		if c, err = d.counts(); err != nil {
			return nil, 0, err
		}
		if tb.TableFirst != tablePage || c.TableRows != min(tablePage, st.Calls-tablePage) {
			add("the table's next page starts at row %d with %d rows, want %d and %d", tb.TableFirst+1, c.TableRows, tablePage+1, min(tablePage, st.Calls-tablePage))
		}
	}
	ps, err = measure("table open")
	if err != nil {
		return nil, 0, err
	}
	addAll("table open", ps)
	step("table checked")
	if err := d.clickOn(`#calls > summary`); err != nil {
		return nil, 0, err
	}
	return problems, drawMs, nil
}
