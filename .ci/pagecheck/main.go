// Command pagecheck loads self-contained pages (HTML or SVG files) in
// headless Chromium at several window widths and fails, naming the
// element, when one does not render, when something overflows its box, or
// when the page reaches for anything outside itself.
//
//	go run . [-widths 800,1280] [-height 900] [-shots DIR] [-expect SELECTORS] FILE...
//
// For each file and width it checks that:
//   - the page loads without a script error or an error on the console,
//     and a screenshot of it is not blank (one colour);
//   - with -expect (CSS selectors, separated by ";"), each selector
//     matches at least one element and every element it matches is shown
//     and not empty: a box of some size, and text in it unless it is an
//     SVG shape (a path must have a length);
//   - the page does not scroll horizontally, every SVG text lies inside
//     its SVG viewport and the window, overlaps no other text, is crossed
//     by no line but grid lines (class "grid") and either sits inside a
//     shape or clear of it; HTML text stays in the window and no element
//     cuts off or scrolls its content sideways (measure.js);
//   - no request leaves the page: every request the DevTools Network
//     domain reports is for the file itself or a data:/blob: URL (the
//     page is loaded offline, so none could succeed anyway), and no
//     attribute or style in the DOM refers to another origin;
//   - a page that exposes window.timeline (the demo's timeline.html) zooms,
//     collapses, filters and shows its cards when driven with real mouse
//     and keyboard input, and marks every failure visibly (checkTimeline).
//
// It prints each page's size, the time to its load event and to its
// first paint after it, and for a timeline the time its script took to
// draw it (PAGECHECK_TRACE=1 also prints how long each step of a
// timeline's check took).
//
// Chromium is found as $CHROMIUM or "chromium" on $PATH and driven over
// --remote-debugging-pipe (see Browser).
package main

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed measure.js
var measureJS string

func main() {
	widths := flag.String("widths", "800,1280", "window widths in px, comma-separated")
	height := flag.Int("height", 900, "window height in px")
	shots := flag.String("shots", "", "write a screenshot per page and width into DIR (default: a temporary directory)")
	expect := flag.String("expect", "", `CSS selectors, separated by ";", that must each match shown, non-empty elements on every page`)
	flag.Parse()
	var expected []string
	for _, sel := range strings.Split(*expect, ";") {
		if sel = strings.TrimSpace(sel); sel != "" {
			expected = append(expected, sel)
		}
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: pagecheck [-widths 800,1280] [-height 900] [-shots DIR] FILE...")
		os.Exit(2)
	}
	var ws []int
	for _, s := range strings.Split(*widths, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || w < 200 {
			fmt.Fprintf(os.Stderr, "pagecheck: bad width %q\n", s)
			os.Exit(2)
		}
		ws = append(ws, w)
	}
	dir := *shots
	if dir == "" {
		d, err := os.MkdirTemp("", "pagecheck-shots-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "pagecheck:", err)
			os.Exit(1)
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "pagecheck:", err)
		os.Exit(1)
	}

	t0 := time.Now()
	b, err := StartBrowser()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pagecheck:", err)
		os.Exit(1)
	}
	failed := 0
	for _, f := range flag.Args() {
		for _, w := range ws {
			shot := filepath.Join(dir, fmt.Sprintf("%s@%d.png", shotName(f), w))
			res, err := CheckPage(b, f, w, *height, shot, expected...)
			if err != nil {
				res.Problems = append(res.Problems, err.Error())
			}
			if len(res.Problems) == 0 {
				fmt.Printf("ok    %s @%dpx: %s, %d texts, %dpx tall, loaded in %s, painted in %s%s · %s\n", f, w, size(f), res.Texts, res.Height, res.Load, res.Ready, drawNote(res), shot)
				continue
			}
			failed++
			fmt.Printf("FAIL  %s @%dpx: %d problem(s)\n", f, w, len(res.Problems))
			for i, p := range res.Problems {
				if i == 25 {
					fmt.Printf("      … and %d more\n", len(res.Problems)-i)
					break
				}
				fmt.Printf("      - %s\n", p)
			}
		}
	}
	if err := b.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "pagecheck:", err)
	}
	fmt.Printf("pagecheck: %d page(s) × %d width(s) in %s, %d failed; screenshots in %s\n",
		flag.NArg(), len(ws), time.Since(t0).Round(100*time.Millisecond), failed, dir)
	if failed > 0 {
		os.Exit(1)
	}
}

// Result is what CheckPage found on one page at one width.
type Result struct {
	Problems []string // empty: the page passed
	Texts    int      // SVG text elements measured
	Height   int      // px, the page's full height
	// Load is the time from the navigation to the load event and Ready
	// to the first two frames painted after it (fonts loaded); both as
	// the browser's clock reads them (performance.now()).
	Load, Ready time.Duration
	// Draw is how long a timeline page's script took to draw it first
	// (0 for other pages).
	Draw time.Duration
}

// CheckPage loads file in a new tab of b with a window of width × height
// px, checks it (see the package doc), with the expected selectors, and
// writes a PNG screenshot of the window to shot. An error means the check
// itself could not run.
func CheckPage(b *Browser, file string, width, height int, shot string, expected ...string) (Result, error) {
	var res Result
	abs, err := filepath.Abs(file)
	if err != nil {
		return res, err
	}
	if _, err := os.Stat(abs); err != nil {
		return res, err
	}
	pageURL := (&url.URL{Scheme: "file", Path: abs}).String()
	const timeout = 30 * time.Second

	raw, err := b.Call("", "Target.createTarget", map[string]any{"url": "about:blank"}, timeout)
	if err != nil {
		return res, err
	}
	var target struct{ TargetID string }
	if err := json.Unmarshal(raw, &target); err != nil {
		return res, err
	}
	defer b.Call("", "Target.closeTarget", map[string]any{"targetId": target.TargetID}, timeout)
	raw, err = b.Call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, timeout)
	if err != nil {
		return res, err
	}
	var att struct{ SessionID string }
	if err := json.Unmarshal(raw, &att); err != nil {
		return res, err
	}
	s := att.SessionID

	var mu sync.Mutex
	var requests, exceptions, consoleErrs []string
	loaded := make(chan struct{}, 1)
	b.On(s, func(method string, params json.RawMessage) {
		switch method {
		case "Network.requestWillBeSent":
			var p struct {
				Request struct{ URL string }
				Type    string
			}
			if json.Unmarshal(params, &p) == nil {
				mu.Lock()
				requests = append(requests, p.Type+" "+p.Request.URL)
				mu.Unlock()
			}
		case "Runtime.exceptionThrown":
			var p struct {
				ExceptionDetails struct {
					Text      string
					Exception struct{ Description string }
				}
			}
			if json.Unmarshal(params, &p) == nil {
				mu.Lock()
				exceptions = append(exceptions, strings.TrimSpace(p.ExceptionDetails.Text+" "+p.ExceptionDetails.Exception.Description))
				mu.Unlock()
			}
		case "Runtime.consoleAPICalled":
			var p struct {
				Type string
				Args []struct {
					Value       any
					Description string
				}
			}
			if json.Unmarshal(params, &p) == nil && (p.Type == "error" || p.Type == "assert") {
				var parts []string
				for _, a := range p.Args {
					if a.Description != "" {
						parts = append(parts, a.Description)
					} else {
						parts = append(parts, fmt.Sprint(a.Value))
					}
				}
				mu.Lock()
				consoleErrs = append(consoleErrs, p.Type+": "+strings.Join(parts, " "))
				mu.Unlock()
			}
		case "Log.entryAdded":
			var p struct {
				Entry struct{ Level, Source, Text, URL string }
			}
			if json.Unmarshal(params, &p) == nil && p.Entry.Level == "error" {
				mu.Lock()
				consoleErrs = append(consoleErrs, p.Entry.Source+": "+p.Entry.Text)
				mu.Unlock()
			}
		case "Page.loadEventFired":
			select {
			case loaded <- struct{}{}:
			default:
			}
		}
	})
	for _, c := range []struct {
		method string
		params any
	}{
		{"Page.enable", nil},
		{"Network.enable", nil},
		{"Runtime.enable", nil},
		{"Log.enable", nil},
		// Nothing can leave the machine; an attempt still shows as a request.
		{"Network.emulateNetworkConditions", map[string]any{"offline": true, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}},
		{"Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}},
	} {
		if _, err := b.Call(s, c.method, c.params, timeout); err != nil {
			return res, err
		}
	}
	raw, err = b.Call(s, "Page.navigate", map[string]any{"url": pageURL}, timeout)
	if err != nil {
		return res, err
	}
	var nav struct{ ErrorText string }
	if json.Unmarshal(raw, &nav) == nil && nav.ErrorText != "" {
		return res, fmt.Errorf("loading %s: %s", pageURL, nav.ErrorText)
	}
	select {
	case <-loaded:
	case <-time.After(timeout):
		return res, fmt.Errorf("%s: no load event in %s", file, timeout)
	}
	// Let fonts and layout settle: two animation frames after the fonts.
	raw, err = evaluate(b, s, `document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() =>
		r([performance.getEntriesByType('navigation')[0]?.loadEventEnd || 0, performance.now()])))))`, true)
	if err != nil {
		return res, err
	}
	var times [2]float64
	if json.Unmarshal(raw, &times) == nil {
		res.Load = time.Duration(times[0] * float64(time.Millisecond)).Round(time.Millisecond)
		res.Ready = time.Duration(times[1] * float64(time.Millisecond)).Round(time.Millisecond)
	}
	raw, err = evaluate(b, s, measureJS, false)
	if err != nil {
		return res, err
	}
	var m struct {
		Problems []string
		Texts    int
		Height   int
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return res, fmt.Errorf("measure.js: %v: %s", err, raw)
	}
	res.Problems, res.Texts, res.Height = m.Problems, m.Texts, m.Height
	if len(expected) > 0 {
		sels, _ := json.Marshal(expected)
		raw, err = evaluate(b, s, "("+expectJS+")("+string(sels)+")", false)
		if err != nil {
			return res, err
		}
		var missing []string
		if err := json.Unmarshal(raw, &missing); err != nil {
			return res, fmt.Errorf("expect: %v: %s", err, raw)
		}
		res.Problems = append(res.Problems, missing...)
	}

	raw, err = b.Call(s, "Page.captureScreenshot", map[string]any{"format": "png"}, timeout)
	if err != nil {
		return res, err
	}
	var sc struct{ Data string }
	if err := json.Unmarshal(raw, &sc); err != nil {
		return res, err
	}
	img, err := base64.StdEncoding.DecodeString(sc.Data)
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(shot, img, 0o644); err != nil {
		return res, err
	}
	if err := notBlank(img); err != nil {
		res.Problems = append(res.Problems, fmt.Sprintf("screenshot %s: %v", shot, err))
	}

	// A page with window.timeline is driven: zoom, collapse, filter, card.
	var interactive bool
	if raw, err := evaluate(b, s, `typeof window.timeline === 'object' && typeof window.timeline.state === 'function'`, false); err != nil {
		return res, err
	} else if err := json.Unmarshal(raw, &interactive); err != nil {
		return res, err
	}
	if interactive {
		measure := func(label string) ([]string, error) {
			raw, err := evaluate(b, s, measureJS, false)
			if err != nil {
				return nil, err
			}
			var m struct{ Problems []string }
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("measure.js (%s): %v", label, err)
			}
			return m.Problems, nil
		}
		snap := func(name string) error {
			raw, err := b.Call(s, "Page.captureScreenshot", map[string]any{"format": "png"}, timeout)
			if err != nil {
				return err
			}
			var sc struct{ Data string }
			if err := json.Unmarshal(raw, &sc); err != nil {
				return err
			}
			img, err := base64.StdEncoding.DecodeString(sc.Data)
			if err != nil {
				return err
			}
			return os.WriteFile(strings.TrimSuffix(shot, ".png")+"-"+name+".png", img, 0o644)
		}
		ps, drawMs, err := checkTimeline(b, s, measure, snap)
		if err != nil {
			return res, fmt.Errorf("timeline check: %w", err)
		}
		res.Problems = append(res.Problems, ps...)
		res.Draw = time.Duration(drawMs * float64(time.Millisecond)).Round(time.Millisecond)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, e := range exceptions {
		res.Problems = append(res.Problems, "script error: "+e)
	}
	for _, e := range consoleErrs {
		res.Problems = append(res.Problems, "console "+e)
	}
	for _, r := range requests {
		_, u, _ := strings.Cut(r, " ")
		if u == pageURL || strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "blob:") || strings.HasPrefix(u, "about:") {
			continue
		}
		res.Problems = append(res.Problems, "request leaves the page: "+r)
	}
	return res, nil
}

// expectJS returns, for a list of CSS selectors, a problem for each one
// that matches nothing and for each matched element that is hidden,
// has no size, or is empty (no text; for an SVG shape no area, for a path
// no length).
const expectJS = `(sels) => {
  const out = [];
  const shapes = new Set(['path', 'line', 'polyline', 'polygon', 'rect', 'circle', 'ellipse', 'svg', 'g']);
  for (const sel of sels) {
    let els;
    try { els = [...document.querySelectorAll(sel)]; } catch (e) { out.push('expected ' + sel + ': bad selector: ' + e.message); continue; }
    if (!els.length) { out.push('expected ' + sel + ': no element matches'); continue; }
    els.forEach((el, i) => {
      const what = 'expected ' + sel + ' (match ' + (i + 1) + ' of ' + els.length + ')';
      const cs = getComputedStyle(el);
      const r = el.getBoundingClientRect();
      if (cs.display === 'none' || cs.visibility === 'hidden' || +cs.opacity === 0) { out.push(what + ' is hidden'); return; }
      const tag = el.tagName.toLowerCase();
      if (tag === 'path' || tag === 'polyline' || tag === 'line') {
        if (!(el.getTotalLength() > 0)) out.push(what + ' is an empty line (no length)');
        return;
      }
      if (!(r.width > 0 && r.height > 0)) { out.push(what + ' has no size'); return; }
      if (!shapes.has(tag) && !el.textContent.trim()) out.push(what + ' is empty (no text)');
    });
  }
  return out;
}`

// evaluate runs expr in session s and returns its value as JSON.
func evaluate(b *Browser, s, expr string, await bool) (json.RawMessage, error) {
	raw, err := b.Call(s, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": await}, 60*time.Second)
	if err != nil {
		return nil, err
	}
	var r struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if e := r.ExceptionDetails; e != nil {
		return nil, fmt.Errorf("script failed: %s %s", e.Text, e.Exception.Description)
	}
	return r.Result.Value, nil
}

// notBlank fails for an image that is one colour, or nearly so: fewer than
// 0.2% of its pixels differ from the commonest colour.
func notBlank(pngData []byte) error {
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		return err
	}
	bd := img.Bounds()
	if bd.Dx() == 0 || bd.Dy() == 0 {
		return errors.New("empty image")
	}
	count := map[[3]uint32]int{}
	key := func(x, y int) [3]uint32 {
		r, g, b, _ := img.At(x, y).RGBA()
		return [3]uint32{r >> 8, g >> 8, b >> 8}
	}
	for y := bd.Min.Y; y < bd.Max.Y; y += 2 {
		for x := bd.Min.X; x < bd.Max.X; x += 2 {
			count[key(x, y)]++
		}
	}
	var bg [3]uint32
	total, best := 0, -1
	for k, n := range count {
		total += n
		if n > best {
			bg, best = k, n
		}
	}
	if other := total - best; float64(other) < 0.002*float64(total) {
		return fmt.Errorf("blank: %d of %d sampled pixels differ from the background rgb%v", other, total, bg)
	}
	return nil
}

// drawNote says how long a timeline page's script took to draw it.
func drawNote(r Result) string {
	if r.Draw == 0 {
		return ""
	}
	return fmt.Sprintf(" (its script drew it in %s)", r.Draw)
}

// size is the size of file, as "123 KB".
func size(file string) string {
	fi, err := os.Stat(file)
	if err != nil {
		return "? KB"
	}
	return fmt.Sprintf("%d KB", (fi.Size()+512)/1024)
}

// shotName names a file's screenshots after its last two path elements,
// so that dir-a/timeline.html and dir-b/timeline.html do not collide.
func shotName(file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	return filepath.Base(filepath.Dir(abs)) + "-" + filepath.Base(abs)
}
