//go:build unix

package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestTreeRecordsSpecialFiles: a FIFO in a snapshotted folder is recorded
// by its mode, not opened (opening it for reading would block the test
// until a writer came, which none does).
func TestTreeRecordsSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	WriteFiles(t, dir, map[string]string{"a/b.txt": "bee"})
	if err := syscall.Mkfifo(filepath.Join(dir, "a", "pipe"), 0o600); err != nil {
		t.Skip(err)
	}
	os.Symlink("b.txt", filepath.Join(dir, "a", "l"))
	m := Tree(t, dir)
	want := map[string]string{"a/": "", "a/b.txt": "bee", "a/l": "-> b.txt"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %q, want %q", k, m[k], v)
		}
	}
	if p := m["a/pipe"]; !strings.HasPrefix(p, "special file ") || !strings.Contains(p, "p") {
		t.Errorf("a/pipe = %q, want its mode", p)
	}
	if len(m) != 4 {
		t.Errorf("snapshot %v", m)
	}
}

// fatalTB records Fatal calls and stops the caller (by panicking) the way
// testing.T's Fatal stops a test.
type fatalTB struct {
	testing.TB
	msg string
}

type fatalStop struct{}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(fatalStop{})
}
func (f *fatalTB) Fatal(args ...any) { f.msg = fmt.Sprint(args...); panic(fatalStop{}) }

// TestTreeFailsOnAMissingRoot: a folder that cannot be walked is an error,
// not an empty snapshot (which would equal another empty snapshot and
// hide a folder that was removed or never made).
func TestTreeFailsOnAMissingRoot(t *testing.T) {
	tb := &fatalTB{TB: t}
	var got map[string]string
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fatalStop); !ok {
					panic(r)
				}
			}
		}()
		got = Tree(tb, filepath.Join(t.TempDir(), "missing"))
	}()
	if tb.msg == "" {
		t.Fatalf("Tree of a missing folder returned %v without failing the test", got)
	}
}
