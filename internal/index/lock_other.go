//go:build !unix

package index

import (
	"os"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// writerLock falls back to an exclusive-create lock file where flock is unavailable.
type writerLock struct {
	loc  safefs.Loc
	name string
}

func acquireWriter(loc safefs.Loc, wait bool) (*writerLock, error) {
	name := loc.Name("index.lock.excl")
	f, err := loc.Root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		if safefs.IsDenied(err) {
			return nil, err
		}
		return nil, errs.New(errs.CodeIndexBusy, "the index is being written by another process (remove %s if none is running)", loc.Root.Join(name))
	}
	f.Close()
	return &writerLock{loc: loc, name: name}, nil
}

func (l *writerLock) release() {
	if l != nil {
		l.loc.Root.Remove(l.name)
	}
}
