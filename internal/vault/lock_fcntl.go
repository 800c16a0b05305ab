//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package vault

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// tryLockRange takes the one-byte write lock at off without waiting; false
// means another process holds it.
func tryLockRange(f *os.File, off int64) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: off, Len: 1}
	for {
		err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES):
			return false, nil
		default:
			return false, err
		}
	}
}

func unlockRange(f *os.File, off int64) {
	lk := syscall.Flock_t{Type: syscall.F_UNLCK, Whence: io.SeekStart, Start: off, Len: 1}
	syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
}
