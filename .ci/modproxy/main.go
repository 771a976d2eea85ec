// Command modproxy publishes this checkout's modules into a Go module proxy
// on disk (GOPROXY=file://DIR), each at the version a release would tag, so
// CI can build consumers exactly as a user's `go get` would: from zips that
// hold what the module's directory holds (nested modules excluded), with the
// go.mod as committed and no replace directive from this repository.
//
// Usage: go run . -out DIR -version vX.Y.Z [-rev REV] REPO MODULEDIR...
//
// REPO is the git repository's root; each MODULEDIR is a directory under it
// with its own go.mod (the root itself is "."). What is published is the
// committed tree at REV (HEAD by default), as a tag would publish it:
// untracked files (node_modules, build output) never reach a zip.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy directory to write (GOPROXY=file://DIR)")
	version := flag.String("version", "", "the version every module is published at")
	rev := flag.String("rev", "HEAD", "the git revision to publish")
	flag.Parse()
	if *out == "" || *version == "" || flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR -version vX.Y.Z [-rev REV] REPO MODULEDIR...")
		os.Exit(2)
	}
	root := flag.Arg(0)
	for _, dir := range flag.Args()[1:] {
		path, err := publish(*out, *version, root, *rev, filepath.ToSlash(filepath.Clean(dir)))
		if err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s: %v\n", dir, err)
			os.Exit(1)
		}
		fmt.Printf("    published %s@%s\n", path, *version)
	}
}

// publish writes one module's list, info, mod and zip files and returns its
// module path.
func publish(out, version, repo, rev, dir string) (string, error) {
	if dir == "." {
		dir = ""
	}
	gomod, err := exec.Command("git", "-C", repo, "show", rev+":"+path.Join(dir, "go.mod")).Output()
	if err != nil {
		return "", fmt.Errorf("reading go.mod at %s: %w", rev, err)
	}
	f, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		return "", err
	}
	if f.Module == nil {
		return "", fmt.Errorf("go.mod names no module")
	}
	if len(f.Replace) > 0 {
		// The go command refuses `go install pkg@version` of such a module,
		// and a consumer's build ignores the directives: a published module
		// must resolve its requirements without them.
		return "", fmt.Errorf("go.mod has %d replace directive(s); a published module must not", len(f.Replace))
	}
	mv := module.Version{Path: f.Module.Mod.Path, Version: version}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return "", err
	}
	escaped, err := module.EscapePath(mv.Path)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	if err := appendList(filepath.Join(vdir, "list"), version); err != nil {
		return "", err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err := os.WriteFile(filepath.Join(vdir, version+".info"), info, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".mod"), gomod, 0o644); err != nil {
		return "", err
	}
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		return "", err
	}
	// The committed tree, as `git archive` gives it (this works in a linked
	// worktree too, where zip.CreateFromVCS finds no .git directory).
	tree, err := os.MkdirTemp("", "modproxy")
	if err != nil {
		zf.Close()
		return "", err
	}
	defer os.RemoveAll(tree)
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", repo, rev, tree)
	if out, err := archive.CombinedOutput(); err != nil {
		zf.Close()
		return "", fmt.Errorf("git archive %s: %v: %s", rev, err, out)
	}
	if err := modzip.CreateFromDir(zf, mv, filepath.Join(tree, filepath.FromSlash(dir))); err != nil {
		zf.Close()
		return "", err
	}
	return mv.Path, zf.Close()
}

func appendList(name, version string) error {
	b, err := os.ReadFile(name)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, v := range strings.Fields(string(b)) {
		if v == version {
			return nil
		}
	}
	return os.WriteFile(name, append(b, version+"\n"...), 0o644)
}
