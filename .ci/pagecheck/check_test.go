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

// TestCheckPage proves every rule can fail: each fixture in testdata
// breaks one, and the check must name it; good.svg breaks none.
func TestCheckPage(t *testing.T) {
	for _, c := range []struct {
		file string
		want string // "" : no problem
	}{
		{"good.svg", ""},
		{"overflow.svg", `text "10000 scopes" at [340.0`},
		{"strike.svg", `text "0.581 (target)" at`},
		{"strike.svg", "is struck through by line"},
		{"straddle.svg", `text "a long tool name" at`},
		{"straddle.svg", "straddles the edge of rect"},
		{"overlap.svg", `text "t12" at`},
		{"overlap.svg", `overlaps text "t13"`},
		{"external.html", "request leaves the page: Image http://127.0.0.1:9/x.png"},
		{"external.html", `reference to another origin: img src="http://127.0.0.1:9/x.png"`},
		{"wide.html", "the page scrolls horizontally"},
		{"wide.html", "div#chart"},
		{"clipped.html", `text of div.name "researcher-1.scout"`},
		{"clipped.html", "is cut off by its own box"},
		{"blank.html", "blank:"},
		{"throws.html", "script error: Uncaught"},
		{"console.html", "console error: the page logged an error"},
		{"timeline-inert.html", "marker lane parent: path.mk.failed is 4.0×4.0 px, under 10×10"},
		{"timeline-inert.html", "turn frame lane parent: rect.turn"},
		{"timeline-inert.html", "dragging across 30%–55% of the plot shows 0–1000 µs"},
		{"timeline-inert.html", "after a click on parent's toggle"},
		{"timeline-inert.html", "with failures only: on false"},
		{"timeline-inert.html", "hovering a failure marker shows"},
		{"timeline-inert.html", "the table lists 0 calls"},
	} {
		t.Run(c.file, func(t *testing.T) {
			res, err := CheckPage(browser, filepath.Join("testdata", c.file), 800, 600, filepath.Join(t.TempDir(), "shot.png"))
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
