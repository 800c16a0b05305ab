//go:build unix

package vault

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// preserveOwner gives the new file the old one's owner and group where the
// process may (best effort: an ordinary user can only keep its own files).
func preserveOwner(f *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	cur, err := f.Stat()
	if err != nil {
		return
	}
	if ns, ok := cur.Sys().(*syscall.Stat_t); ok && ns.Uid == st.Uid && ns.Gid == st.Gid {
		return
	}
	f.Chown(int(st.Uid), int(st.Gid))
}

func ignorableSyncErr(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP)
}
