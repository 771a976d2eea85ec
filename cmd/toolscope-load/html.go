package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolscope/toolscope/load"
)

// htmlPath resolves -html: "auto" puts the page next to the JSON report
// (report.json → report.html), or nowhere when there is none.
func htmlPath(flagValue, jsonOut string) string {
	if flagValue != "auto" {
		return flagValue
	}
	if jsonOut == "" {
		return ""
	}
	return strings.TrimSuffix(jsonOut, filepath.Ext(jsonOut)) + ".html"
}

func writeHTML(path string, rep *load.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = rep.WriteHTML(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
