//go:build unix

package vault

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// preserveOwner gives the new file the old one's owner and group where the
// process may (best effort: an ordinary user can only keep its own files).
func preserveOwner(f *os.File, old fs.FileInfo) {
	var uid, gid uint32
	switch st := old.Sys().(type) {
	case *unix.Stat_t:
		uid, gid = st.Uid, st.Gid
	case *syscall.Stat_t:
		uid, gid = st.Uid, st.Gid
	default:
		return
	}
	cur, err := f.Stat()
	if err != nil {
		return
	}
	if ns, ok := cur.Sys().(*syscall.Stat_t); ok && ns.Uid == uid && ns.Gid == gid {
		return
	}
	f.Chown(int(uid), int(gid))
}
