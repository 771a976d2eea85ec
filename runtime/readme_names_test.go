package runtime_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README and the contract cite tests by name ("tests are named after
// the rule they prove"); every name they cite is a test of the repository,
// so a reader can run it (issue 25: the README cited one that did not exist).
func TestDocs_CitedTestNamesExist(t *testing.T) {
	root := ".."
	defined := map[string]bool{}
	funcRe := regexp.MustCompile(`(?m)^func ((?:Test|Example|Benchmark|Fuzz)\w*)\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range funcRe.FindAllStringSubmatch(string(b), -1) {
				defined[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	citedRe := regexp.MustCompile("`(?:go test [^`]*-run '?)?((?:Test|Example)[A-Z0-9_]\\w*)")
	for _, doc := range []string{"README.md", "docs/contract.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range citedRe.FindAllStringSubmatch(string(b), -1) {
			if !defined[m[1]] && !(strings.HasSuffix(m[1], "_") && hasPrefix(defined, m[1])) {
				t.Errorf("%s cites test %s, which no _test.go file defines", doc, m[1])
			}
		}
	}
}

// hasPrefix reports whether a defined test starts with p (the docs cite a
// family of tests, such as TestClose_, by its prefix).
func hasPrefix(defined map[string]bool, p string) bool {
	for n := range defined {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}
