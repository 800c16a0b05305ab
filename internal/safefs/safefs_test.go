//go:build unix

package safefs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
	"github.com/loci-dev/loci/internal/testutil"
)

// world is a base folder and an "outside" folder beside it that must never
// change.
func world(t *testing.T) (safefs.Root, string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	top := t.TempDir()
	base := filepath.Join(top, "base")
	out := filepath.Join(top, "outside")
	for _, d := range []string{base, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	return safefs.Root(base), out
}

func wantSymlinkDenied(t *testing.T, err error, link string) {
	t.Helper()
	if errs.Code(err) != errs.CodePathDenied {
		t.Fatalf("got %v, want path_denied", err)
	}
	if !strings.Contains(err.Error(), link) {
		t.Fatalf("error %q does not name the link %s", err, link)
	}
}

// bothWays runs f with Linux's one-call openat2 shortcut (where there is
// one) and with the component walk every other platform (and every
// refusal) takes: both must hold the same rule.
func bothWays(t *testing.T, f func(t *testing.T)) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			defer safefs.ForceWalk(walk)()
			f(t)
		})
	}
}

func TestEveryOperationRefusesLinksAtEveryComponent(t *testing.T) {
	bothWays(t, everyOperationRefusesLinks)
}

func everyOperationRefusesLinks(t *testing.T) {
	ops := map[string]func(r safefs.Root, rel string) error{
		"OpenFile create": func(r safefs.Root, rel string) error {
			f, err := r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err == nil {
				f.Write([]byte("pwned"))
				f.Close()
			}
			return err
		},
		"OpenFile trunc": func(r safefs.Root, rel string) error {
			f, err := r.OpenFile(rel, os.O_WRONLY|os.O_TRUNC, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		},
		"ReadFile":        func(r safefs.Root, rel string) error { _, err := r.ReadFile(rel); return err },
		"WriteFileAtomic": func(r safefs.Root, rel string) error { return r.WriteFileAtomic(rel, []byte("pwned"), 0o600) },
		"AppendLine":      func(r safefs.Root, rel string) error { return r.AppendLine(rel, []byte("pwned\n"), 0o600) },
		"MkdirAll":        func(r safefs.Root, rel string) error { return r.MkdirAll(rel+"/sub", 0o755) },
		"Rename to":       func(r safefs.Root, rel string) error { return r.Rename("plain", rel) },
		"Rename from":     func(r safefs.Root, rel string) error { return r.Rename(rel, "moved") },
		"Remove": func(r safefs.Root, rel string) error {
			// Removing the link itself is fine; removing through one is not.
			return r.Remove(rel + "/secret")
		},
		"ReadDir": func(r safefs.Root, rel string) error { _, err := r.ReadDir(rel); return err },
		"Check":   func(r safefs.Root, rel string) error { return r.Check(rel + "/x") },
	}
	for name, op := range ops {
		for _, layout := range []struct {
			link, target, rel string
		}{
			{"d", "outside", "d/secret"},         // folder link at the first component
			{"a/d", "outside", "a/d/secret"},     // folder link deeper
			{"a/f", "outside/secret", "a/f"},     // file link at the last component
			{"a/d", "base/inner", "a/d/secret"},  // a link that stays inside is refused too
			{"a/f", "missing/nowhere", "a/f"},    // dangling link
			{"a/d", "outside", "a/d/new/secret"}, // below a link, to be created
		} {
			t.Run(name+" "+layout.link+"→"+layout.target, func(t *testing.T) {
				r, out := world(t)
				top := filepath.Dir(string(r))
				os.MkdirAll(filepath.Join(string(r), "a"), 0o755)
				os.MkdirAll(filepath.Join(string(r), "inner"), 0o755)
				os.WriteFile(filepath.Join(string(r), "inner", "secret"), []byte("inner"), 0o600)
				os.WriteFile(filepath.Join(string(r), "plain"), []byte("plain"), 0o600)
				if err := os.Symlink(filepath.Join(top, layout.target), filepath.Join(string(r), layout.link)); err != nil {
					t.Fatal(err)
				}
				before, beforeBase := testutil.Tree(t, out), testutil.Tree(t, string(r))
				rel := layout.rel
				if name == "Remove" || name == "ReadDir" || name == "Check" || name == "MkdirAll" {
					rel = layout.link
				}
				err := op(r, rel)
				if name == "Remove" {
					// Remove(link + "/secret") goes through the link.
					if err == nil {
						t.Fatal("removed a file through a link")
					}
				} else {
					wantSymlinkDenied(t, err, layout.link)
				}
				if d := testutil.TreeDiff(before, testutil.Tree(t, out)); d != "" {
					t.Fatalf("outside changed: %s", d)
				}
				if d := testutil.TreeDiff(beforeBase, testutil.Tree(t, string(r))); d != "" {
					t.Fatalf("base changed: %s", d)
				}
			})
		}
	}
}

func TestRemoveDeletesTheLinkNotItsTarget(t *testing.T) {
	r, out := world(t)
	os.Symlink(filepath.Join(out, "secret"), r.Join("l"))
	if err := r.Remove("l"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(r.Join("l")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("link still there: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "secret")); string(b) != "secret" {
		t.Fatal("the link's target changed")
	}
}

func TestSpecialFilesAreRefusedWithoutBlocking(t *testing.T) {
	bothWays(t, specialFilesAreRefused)
}

func specialFilesAreRefused(t *testing.T) {
	r, _ := world(t)
	if err := syscall.Mkfifo(r.Join("fifo"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Opening a FIFO for reading or writing would block forever without a
	// peer; the test would hang rather than fail if it did.
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND | os.O_CREATE} {
		f, err := r.OpenFile("fifo", flag, 0o600)
		if err == nil {
			f.Close()
			t.Fatalf("flag %x: opened a FIFO", flag)
		}
		if errs.Code(err) != errs.CodePathDenied || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("flag %x: %v", flag, err)
		}
	}
	if err := r.AppendLine("fifo", []byte("x\n"), 0o600); errs.Code(err) != errs.CodePathDenied {
		t.Fatalf("AppendLine on a FIFO: %v", err)
	}
	os.Mkdir(r.Join("dir"), 0o755)
	if _, err := r.ReadFile("dir"); errs.Code(err) != errs.CodePathDenied {
		t.Fatalf("ReadFile of a folder: %v", err)
	}
}

func TestOrdinaryUse(t *testing.T) { bothWays(t, ordinaryUse) }

func ordinaryUse(t *testing.T) {
	r, _ := world(t)
	if err := r.WriteFileAtomic("x/y/z.txt", []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFileAtomic("x/y/z.txt", []byte("two"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := r.ReadFile("x/y/z.txt")
	if err != nil || string(b) != "two" {
		t.Fatalf("%q %v", b, err)
	}
	if st, _ := os.Stat(r.Join("x/y/z.txt")); st.Mode().Perm() != 0o640&^umask() {
		t.Fatalf("mode %v", st.Mode())
	}
	for i := 0; i < 3; i++ {
		if err := r.AppendLine("log/a.log", []byte("line\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := r.ReadFile("log/a.log"); string(b) != "line\nline\nline\n" {
		t.Fatalf("%q", b)
	}
	if err := r.Rename("log/a.log", "x/a.log"); err != nil {
		t.Fatal(err)
	}
	ents, err := r.ReadDir("x")
	if err != nil || len(ents) != 2 {
		t.Fatalf("%v %v", ents, err)
	}
	st, err := r.Lstat("x/a.log")
	if err != nil || st.Size() != 15 || !st.Mode().IsRegular() {
		t.Fatalf("%v %v", st, err)
	}
	if _, err := r.ReadFile("nope/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := r.OpenFile("x/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.OpenFile("x/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("O_EXCL twice: %v", err)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "a/../../b", "a\x00b"} {
		if _, err := r.ReadFile(bad); errs.Code(err) != errs.CodePathDenied {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	// Files no one created are not left behind by the atomic writes.
	ents, _ = r.ReadDir("x/y")
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestInside(t *testing.T) {
	for _, c := range []struct {
		base, p, rel string
		ok           bool
	}{
		{"/v", "/v", "", true},
		{"/v", "/v/a/b", "a/b", true},
		{"/v", "/vault/a", "", false},
		{"/v", "/", "", false},
		{"/v", "/v/../w", "", false},
		{"/v", "/v/..a", "..a", true},
	} {
		rel, ok := safefs.Inside(c.base, c.p)
		if ok != c.ok || rel != c.rel {
			t.Errorf("Inside(%q, %q) = %q, %v", c.base, c.p, rel, ok)
		}
	}
}

func umask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

// TestWriteAtomicSweepsStaleTemps: a writer killed before its rename
// leaves .<name>.tmp-<hex> behind; the next atomic write of that name
// removes it, but not the temporary file another process is still writing
// (it holds its lock), nor the temporary files of other names.
func TestWriteAtomicSweepsStaleTemps(t *testing.T) {
	r, _ := world(t)
	if err := os.MkdirAll(r.Join("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := "d/.x.json.tmp-0123456789abcdef"
	live := "d/.x.json.tmp-fedcba9876543210"
	keep := []string{live, "d/.y.json.tmp-0123456789abcdef", "d/.x.json.tmp-notahexnumber!!!", "d/.x.json.tmp-0123"}
	for _, p := range append([]string{stale}, keep...) {
		if err := os.WriteFile(r.Join(p), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(r.Join(live))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Skipf("flock: %v", err)
	}
	if err := r.WriteCacheFile("d/x.json", []byte("whole"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(r.Join(stale)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temporary file still there: %v", err)
	}
	for _, p := range keep {
		if _, err := os.Lstat(r.Join(p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(r.Join("d/x.json")); string(b) != "whole" {
		t.Errorf("x.json = %q", b)
	}
	// Its writer gone, the next write sweeps it too.
	f.Close()
	if err := r.WriteFileAtomic("d/x.json", []byte("again"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(r.Join(live)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary file of a writer that is gone was kept: %v", err)
	}
}
