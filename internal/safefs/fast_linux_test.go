//go:build linux

package safefs

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// playKernel replaces the openat2 system call for one test.
func playKernel(t *testing.T, call func(dirfd int, path string, how *unix.OpenHow) (int, error)) {
	t.Helper()
	old := openat2
	openat2 = call
	noOpenat2.Store(false)
	t.Cleanup(func() { openat2 = old; noOpenat2.Store(false) })
}

func readTree(t *testing.T) Root {
	t.Helper()
	r := Root(t.TempDir())
	if err := os.MkdirAll(r.Join("a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(string(r), "a", "b.txt"), []byte("bee"), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOpenat2FilteredLatchesOff: under a seccomp profile that answers
// openat2 with EPERM, reads still work (through the component walk) and
// openat2 is not tried again for every read.
func TestOpenat2FilteredLatchesOff(t *testing.T) {
	calls := 0
	playKernel(t, func(int, string, *unix.OpenHow) (int, error) { calls++; return -1, unix.EPERM })
	r := readTree(t)
	for i := 0; i < 3; i++ {
		if b, err := r.ReadFile("a/b.txt"); err != nil || string(b) != "bee" {
			t.Fatalf("read %d: %q %v", i, b, err)
		}
	}
	if !noOpenat2.Load() {
		t.Fatal("openat2 refused with EPERM everywhere is still used")
	}
	if calls != 2 { // the read, then the probe of the base folder
		t.Errorf("openat2 called %d times, want 2 (then never again)", calls)
	}
}

// TestOpenat2OneRefusedFileDoesNotLatch: EPERM for one file (an immutable
// file, O_NOATIME on another user's file) while openat2 works on the base
// folder does not switch openat2 off for the whole process.
func TestOpenat2OneRefusedFileDoesNotLatch(t *testing.T) {
	real := unix.Openat2
	if fd, err := real(unix.AT_FDCWD, ".", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC}); err != nil {
		t.Skipf("no openat2 here: %v", err)
	} else {
		unix.Close(fd)
	}
	playKernel(t, func(dirfd int, path string, how *unix.OpenHow) (int, error) {
		if path == "a/b.txt" {
			return -1, unix.EPERM
		}
		return real(dirfd, path, how)
	})
	r := readTree(t)
	if b, err := r.ReadFile("a/b.txt"); err != nil || string(b) != "bee" {
		t.Fatalf("read: %q %v", b, err)
	}
	if noOpenat2.Load() {
		t.Fatal("one file's EPERM switched openat2 off")
	}
}
