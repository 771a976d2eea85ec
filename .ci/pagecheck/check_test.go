package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var browser *Browser

func TestMain(m *testing.M) {
	b, err := StartBrowser()
	if err != nil {
		if os.Getenv("PAGECHECK_REQUIRE") != "" {
			println("pagecheck tests:", err.Error())
			os.Exit(1)
		}
		println("pagecheck tests skipped:", err.Error())
		os.Exit(0)
	}
	browser = b
	code := m.Run()
	b.Close()
	os.Exit(code)
}

var expectAll = []string{"#kpis .v", "#cdf path.series", "#hidden", "#absent"}

// TestCheckPage proves every rule can fail: each fixture in testdata
// breaks one, and the check must name it; good.svg breaks none.
func TestCheckPage(t *testing.T) {
	for _, c := range []struct {
		file   string
		want   string   // "" : no problem
		expect []string // -expect selectors
	}{
		{"good.svg", "", nil},
		{"overflow.svg", `text "10000 scopes" at [340.0`, nil},
		{"strike.svg", `text "0.581 (target)" at`, nil},
		{"strike.svg", "is struck through by line", nil},
		{"straddle.svg", `text "a long tool name" at`, nil},
		{"straddle.svg", "straddles the edge of rect", nil},
		{"overlap.svg", `text "t12" at`, nil},
		{"overlap.svg", `overlaps text "t13"`, nil},
		{"external.html", "request leaves the page: Image http://127.0.0.1:9/x.png", nil},
		{"external.html", `reference to another origin: img src="http://127.0.0.1:9/x.png"`, nil},
		{"wide.html", "the page scrolls horizontally", nil},
		{"wide.html", "div#chart", nil},
		{"clipped.html", `text of div.name "researcher-1.scout"`, nil},
		{"clipped.html", "is cut off by its own box", nil},
		{"blank.html", "blank:", nil},
		{"throws.html", "script error: Uncaught", nil},
		{"console.html", "console error: the page logged an error", nil},
		{"timeline-inert.html", "marker lane parent: path.mk.failed is 4.0×4.0 px, under 10×10", nil},
		{"timeline-inert.html", "turn frame lane parent: rect.turn", nil},
		{"timeline-inert.html", "dragging across 30%–55% of the plot shows 0–1000 µs", nil},
		{"timeline-inert.html", "after a click on parent's toggle", nil},
		{"timeline-inert.html", "with failures only: on false", nil},
		{"timeline-inert.html", "hovering a failure marker shows", nil},
		{"timeline-inert.html", "the table lists 0 calls", nil},
		{"expect.html", "", []string{"#kpis .v:first-child", "#cdf path.series:first-child", "h1"}},
		{"expect.html", "expected #kpis .v (match 2 of 2) is empty (no text)", expectAll},
		{"expect.html", "expected #cdf path.series (match 2 of 2) is an empty line", expectAll},
		{"expect.html", "expected #hidden (match 1 of 1) is hidden", expectAll},
		{"expect.html", "expected #absent: no element matches", expectAll},
	} {
		t.Run(c.file, func(t *testing.T) {
			res, err := CheckPage(browser, filepath.Join("testdata", c.file), 800, 600, filepath.Join(t.TempDir(), "shot.png"), c.expect...)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(res.Problems, "\n")
			if c.want == "" {
				if len(res.Problems) > 0 {
					t.Fatalf("want no problem, got:\n%s", all)
				}
				return
			}
			if !strings.Contains(all, c.want) {
				t.Fatalf("want a problem containing %q, got:\n%s", c.want, all)
			}
		})
	}
}
