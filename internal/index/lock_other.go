//go:build !unix

package index

import (
	"os"
	"path/filepath"

	"github.com/loci-dev/loci/internal/errs"
)

// writerLock falls back to an exclusive-create lock file where flock is unavailable.
type writerLock struct{ path string }

func acquireWriter(dir string, wait bool) (*writerLock, error) {
	p := filepath.Join(dir, "index.lock.excl")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, errs.New(errs.CodeIndexBusy, "the index is being written by another process (remove %s if none is running)", p)
	}
	f.Close()
	return &writerLock{path: p}, nil
}

func (l *writerLock) release() {
	if l != nil {
		os.Remove(l.path)
	}
}
