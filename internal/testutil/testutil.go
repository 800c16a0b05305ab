// Package testutil holds helpers shared by tests: locating the shared
// corpora (skipping cleanly when they are absent) and building vaults.
package testutil

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedDir returns ../shared beside the repository, or "" if absent.
// LOCI_SHARED overrides it.
func SharedDir() string {
	if d := os.Getenv("LOCI_SHARED"); d != "" {
		return d
	}
	d := filepath.Join(RepoRoot(), "..", "shared")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// Corpus returns the path of a corpus under shared/corpora (or shared/eval
// when name starts with "eval/"), skipping the test when it is absent.
func Corpus(tb testing.TB, name string) string {
	tb.Helper()
	s := SharedDir()
	if s == "" {
		tb.Skipf("shared corpora not found beside the repo (../shared); skipping %s", name)
	}
	p := filepath.Join(s, "corpora", name)
	if len(name) > 5 && name[:5] == "eval/" {
		p = filepath.Join(s, name)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("corpus %s not found at %s; skipping", name, p)
	}
	return p
}

// DemoVault returns the bundled demo vault.
func DemoVault() string { return filepath.Join(RepoRoot(), "demo", "vault") }

// WriteFiles creates files (vault-relative path → content) under root.
func WriteFiles(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	for rel, body := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// CopyTree copies a folder (regular files only) to dst.
func CopyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			if info.Name() == ".loci" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// LociBinary builds cmd/loci (CGO_ENABLED=0, as released) once per test
// process and returns its path; LOCI_TEST_BIN names a binary to use instead
// (an older build, to see what it let through). Tests that need it skip
// under -short. A package using it runs its tests through RunMain, which
// removes the build when they are done.
func LociBinary(tb testing.TB) string {
	tb.Helper()
	if b := os.Getenv("LOCI_TEST_BIN"); b != "" {
		return b
	}
	if testing.Short() {
		tb.Skip("builds the loci binary")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "loci-test-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "loci")
		// -buildvcs=auto: stamp the git revision when there is one (a
		// machine may set GOFLAGS=-buildvcs=false).
		build := exec.Command("go", "build", "-buildvcs=auto", "-o", binPath, "./cmd/loci")
		build.Dir = RepoRoot()
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("CGO_ENABLED=0 go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return binPath
}

// RunMain runs a package's tests and removes what LociBinary built:
// func TestMain(m *testing.M) { os.Exit(testutil.RunMain(m)) }.
func RunMain(m *testing.M) int {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

// Tree lists every entry below dir (files with their content, folders with
// a trailing slash, links as "-> target", anything else — a FIFO, a socket,
// a device — by its mode, never opened): a snapshot to compare before and
// after an operation that must not touch dir. A dir that cannot be walked
// fails the test (a missing folder would otherwise snapshot as empty); an
// entry that cannot be read is recorded with its error.
// Entries for which a skip function returns true (given the
// slash-separated relative path) are left out.
func Tree(tb testing.TB, dir string, skip ...func(rel string) bool) map[string]string {
	tb.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p == dir {
			return err // the root itself: fail below
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		for _, s := range skip {
			if s(rel) {
				return nil
			}
		}
		if err != nil {
			m[rel] = "error: " + err.Error()
			return nil
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				l = "error: " + err.Error()
			}
			m[rel] = "-> " + l
		case d.IsDir():
			m[rel+"/"] = ""
		case t.IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				m[rel] = "error: " + err.Error()
			} else {
				m[rel] = string(b)
			}
		default:
			// Opening a FIFO would block until a writer came.
			m[rel] = "special file " + t.String()
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("testutil.Tree(%s): %v", dir, err)
	}
	return m
}

// TreeDiff says how two Tree snapshots differ ("" when they are the same).
func TreeDiff(before, after map[string]string) string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		} else if w != v {
			d = append(d, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}
