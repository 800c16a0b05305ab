package benchstat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Fail prints err after the program's name on standard error and exits
// with status 1: how every bench program stops on an error it cannot
// measure past.
func Fail(err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe"), err)
	os.Exit(1)
}

// Check calls Fail when err is not nil.
func Check(err error) {
	if err != nil {
		Fail(err)
	}
}

// GoBuild builds the package pkg into the binary out with cgo off, as the
// release is built, running go in dir (the current folder when empty);
// go's own messages go to standard error.
func GoBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s in %q: %w", pkg, dir, err)
	}
	return nil
}

// Queries are the searches the process-per-query benches (startbench,
// peers) cycle through, round by round, the same for every tool compared.
var Queries = []string{
	"plugin theme",
	"daily notes template",
	"dataview query",
	"how to sync my vault",
	"graph view",
	"keyboard shortcuts",
	"canvas",
	"publish website",
	"spaced repetition flashcards",
	"backlinks",
}
