//go:build unix

package index

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// writerLock is an advisory flock on <index dir>/index.lock held for the
// duration of a sync, so that two processes never write the index at once.
type writerLock struct{ f *os.File }

func acquireWriter(loc safefs.Loc, wait bool) (*writerLock, error) {
	p := loc.Root.Join(loc.Name("index.lock"))
	f, err := loc.Root.OpenFile(loc.Name("index.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if safefs.IsDenied(err) {
			return nil, err
		}
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot open index lock")
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		holder := "another process"
		if b, rerr := io.ReadAll(io.NewSectionReader(f, 0, 64)); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf("process %d", pid)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errs.New(errs.CodeIndexBusy, "the index is being written by %s; wait for it or pass --wait", holder).With("lock", p)
		}
		return nil, errs.Wrap(err, errs.CodeIndexBusy, "cannot lock the index")
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &writerLock{f: f}, nil
}

func (l *writerLock) release() {
	if l == nil || l.f == nil {
		return
	}
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
