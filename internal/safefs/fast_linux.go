//go:build linux

package safefs

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 proves unusable: the kernel has none
// (ENOSYS, before 5.6) or a seccomp profile refuses it (EPERM, and
// ENOSYS from some container runtimes).
var noOpenat2 atomic.Bool

// openat2 is the system call (tests replace it to play a refusing kernel).
var openat2 = unix.Openat2

// openFast opens an existing file rel below r in one openat2 call that
// refuses a link at any component (RESOLVE_NO_SYMLINKS) and any escape
// (RESOLVE_BENEATH): the same rule as the component walk, in one step. It
// reports ok=false when the walk must decide instead (no openat2, a link
// or other refusal to describe precisely, a missing file).
func (r Root) openFast(rel string, flag int) (*os.File, bool) {
	if noOpenat2.Load() || forceWalk.Load() || flag&os.O_CREATE != 0 || rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "..") || strings.ContainsRune(rel, 0) {
		return nil, false
	}
	root, err := unix.Open(string(r), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(root)
	how := &unix.OpenHow{
		Flags:   uint64(flag | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	err = retryEINTR(func() (e error) {
		fd, e = openat2(root, rel, how)
		return e
	})
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) && !openat2Works(root) {
			noOpenat2.Store(true)
		}
		return nil, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, false
	}
	if flag&unix.O_NONBLOCK == 0 {
		unix.SetNonblock(fd, false)
	}
	return os.NewFile(uintptr(fd), r.Join(rel)), true
}

// openat2Works tells a filtered system call from a file that refuses to be
// opened (EPERM also comes from an immutable file opened for writing, or
// O_NOATIME on another user's file): it opens the base folder itself,
// which a seccomp filter refuses like any other path.
func openat2Works(root int) bool {
	var fd int
	err := retryEINTR(func() (e error) {
		fd, e = openat2(root, ".", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH})
		return e
	})
	if err != nil {
		return !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS)
	}
	unix.Close(fd)
	return true
}
