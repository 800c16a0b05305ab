//go:build unix

package safefs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is an opened folder below a Root: the operations on it act on its
// entries through its descriptor, so nothing that happens to the path
// above it afterwards can redirect them.
type Dir struct {
	fd   int
	root Root
	rel  string // relative to root, "" for the root itself
}

// sub is the root-relative path of name inside d.
func (d *Dir) sub(name string) string {
	if d.rel == "" {
		return name
	}
	return d.rel + "/" + name
}

// Path is the absolute OS path of name inside d (for messages and logs).
func (d *Dir) Path(name string) string { return d.root.Join(d.sub(name)) }

// OpenDir opens the folder rel below r, component by component, never
// following a link; with create, missing folders are made (perm) and their
// parents fsynced.
func (r Root) OpenDir(rel string, create bool, perm fs.FileMode) (*Dir, error) {
	parts, err := split(rel)
	if err != nil {
		return nil, err
	}
	var fd int
	err = retryEINTR(func() (e error) {
		fd, e = unix.Open(string(r), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return e
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: string(r), Err: err}
	}
	for i, s := range parts {
		sub := strings.Join(parts[:i+1], "/")
		nfd, err := openDirAt(fd, s)
		if errors.Is(err, unix.ENOENT) && create {
			if merr := unix.Mkdirat(fd, s, uint32(perm.Perm())); merr == nil {
				syncFD(fd)
			} else if !errors.Is(merr, unix.EEXIST) {
				unix.Close(fd)
				return nil, &os.PathError{Op: "mkdir", Path: r.Join(sub), Err: merr}
			}
			nfd, err = openDirAt(fd, s)
		}
		if err != nil {
			c := classify(fd, s, sub, err, true)
			unix.Close(fd)
			if IsDenied(c) {
				return nil, c
			}
			return nil, &os.PathError{Op: "open", Path: r.Join(sub), Err: err}
		}
		unix.Close(fd)
		fd = nfd
	}
	return &Dir{fd: fd, root: r, rel: strings.Join(parts, "/")}, nil
}

func openDirAt(parent int, name string) (int, error) {
	var fd int
	err := retryEINTR(func() (e error) {
		fd, e = unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return e
	})
	return fd, err
}

// classify turns the error of an O_NOFOLLOW open into path_denied when the
// entry is a link (or, for a folder, not a folder); other errors pass.
func classify(parent int, name, sub string, err error, wantDir bool) error {
	// ELOOP on Linux and macOS, EMLINK on FreeBSD, EFTYPE on NetBSD:
	// rather than list them, look at the entry whenever an open fails
	// for a reason other than its absence.
	if errors.Is(err, unix.ENOENT) {
		return err
	}
	var st unix.Stat_t
	if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return err
	}
	switch t := uint32(st.Mode) & unix.S_IFMT; {
	case t == unix.S_IFLNK:
		return SymlinkError(sub)
	case wantDir && t != unix.S_IFDIR:
		return notDirError(sub)
	case !wantDir && t != unix.S_IFREG:
		// A FIFO opened for writing without a reader fails with ENXIO.
		return NotRegularError(sub)
	}
	return err
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return denied(name, "not a file name")
	}
	return nil
}

// OpenFile opens name in d without following a link; only regular files
// are opened (a FIFO or device is refused without blocking on it).
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var fd int
	err := retryEINTR(func() (e error) {
		fd, e = unix.Openat(d.fd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
		return e
	})
	if err != nil {
		if c := classify(d.fd, name, d.sub(name), err, false); IsDenied(c) {
			return nil, c
		}
		return nil, &os.PathError{Op: "open", Path: d.Path(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: d.Path(name), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, NotRegularError(d.sub(name))
	}
	if flag&unix.O_NONBLOCK == 0 {
		unix.SetNonblock(fd, false)
	}
	return os.NewFile(uintptr(fd), d.Path(name)), nil
}

// Lstat describes name in d (a link is described, not followed).
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: d.Path(name), Err: err}
	}
	return newInfo(name, &st), nil
}

// Stat describes d itself.
func (d *Dir) Stat() (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: d.root.Join(d.rel), Err: err}
	}
	return newInfo(path.Base("/"+d.rel), &st), nil
}

// Remove unlinks name (a file, a link itself, or an empty folder).
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := unix.Unlinkat(d.fd, name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		if e2 := unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR); e2 == nil || !errors.Is(e2, unix.ENOTDIR) {
			err = e2
		}
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: d.Path(name), Err: err}
	}
	return nil
}

// Rename moves name in d to newName in dst (replacing it, as rename(2)).
// Neither may be a link: rename(2) would not follow one, but loci's rule is
// to refuse a link wherever it finds one, so that a planted link is seen.
func (d *Dir) Rename(name string, dst *Dir, newName string) error {
	if err := d.noLink(name); err != nil {
		return err
	}
	if err := dst.noLink(newName); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd, name, dst.fd, newName); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Path(name), New: dst.Path(newName), Err: err}
	}
	return nil
}

// noLink checks name and refuses it when it is a link.
func (d *Dir) noLink(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	var st unix.Stat_t
	if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint32(st.Mode)&unix.S_IFMT == unix.S_IFLNK {
		return SymlinkError(d.sub(name))
	}
	return nil
}

// Link makes newName in dst another name of name in d; it fails with
// fs.ErrExist when newName is taken (it never replaces).
func (d *Dir) Link(name string, dst *Dir, newName string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := checkName(newName); err != nil {
		return err
	}
	if err := unix.Linkat(d.fd, name, dst.fd, newName, 0); err != nil {
		return &os.LinkError{Op: "link", Old: d.Path(name), New: dst.Path(newName), Err: err}
	}
	return nil
}

// Chtimes sets name's access and modification times (a link's own).
func (d *Dir) Chtimes(name string, atime, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	if err := unix.UtimesNanoAt(d.fd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "chtimes", Path: d.Path(name), Err: err}
	}
	return nil
}

// ReadDir lists d's entries.
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	nfd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.root.Join(d.rel), Err: err}
	}
	f := os.NewFile(uintptr(nfd), d.root.Join(d.rel))
	defer f.Close()
	return f.ReadDir(-1)
}

// OpenDir opens the folder name inside d (creating it with create).
func (d *Dir) OpenDir(name string, create bool, perm fs.FileMode) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	nfd, err := openDirAt(d.fd, name)
	if errors.Is(err, unix.ENOENT) && create {
		if merr := unix.Mkdirat(d.fd, name, uint32(perm.Perm())); merr == nil {
			syncFD(d.fd)
		} else if !errors.Is(merr, unix.EEXIST) {
			return nil, &os.PathError{Op: "mkdir", Path: d.Path(name), Err: merr}
		}
		nfd, err = openDirAt(d.fd, name)
	}
	if err != nil {
		if c := classify(d.fd, name, d.sub(name), err, true); IsDenied(c) {
			return nil, c
		}
		return nil, &os.PathError{Op: "open", Path: d.Path(name), Err: err}
	}
	return &Dir{fd: nfd, root: d.root, rel: d.sub(name)}, nil
}

// Sync fsyncs d, so that entries created, renamed or removed in it are
// durable. File systems that cannot sync folders are tolerated.
func (d *Dir) Sync() error { return syncFD(d.fd) }

// Close releases d.
func (d *Dir) Close() error { return unix.Close(d.fd) }

func syncFD(fd int) error {
	err := unix.Fsync(fd)
	if err != nil && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP)) {
		return nil
	}
	return err
}

func retryEINTR(f func() error) error {
	for {
		err := f()
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// info is an fs.FileInfo from fstatat.
type info struct {
	name string
	st   unix.Stat_t
}

func newInfo(name string, st *unix.Stat_t) *info { return &info{name: name, st: *st} }

func (i *info) Name() string       { return i.name }
func (i *info) Size() int64        { return int64(i.st.Size) }
func (i *info) ModTime() time.Time { return time.Unix(int64(i.st.Mtim.Sec), int64(i.st.Mtim.Nsec)) }
func (i *info) IsDir() bool        { return i.Mode().IsDir() }
func (i *info) Sys() any           { return &i.st }
func (i *info) Mode() fs.FileMode {
	m := fs.FileMode(i.st.Mode & 0o777)
	switch uint32(i.st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if i.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if i.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	return m
}

// renameOpenTemp: on Unix a temporary file stays open (and locked) until
// it has been renamed into place.
const renameOpenTemp = true

// lockTemp takes the lock that tells sweeps a temporary file is being
// written (an exclusive flock, released when its writer closes it or
// dies). It reports false only when someone else holds it already; a file
// system without flock cannot protect the file, and the write goes on
// (removeStaleTemp then never removes anything there).
func lockTemp(f *os.File) bool {
	return !errors.Is(flockNB(f), unix.EWOULDBLOCK)
}

func flockNB(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = retryEINTR(func() error { return unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) })
	}); err != nil {
		return err
	}
	return ferr
}

// removeStaleTemp removes the temporary file n if no writer holds its lock.
func (d *Dir) removeStaleTemp(n string) {
	f, err := d.OpenFile(n, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if flockNB(f) == nil {
		d.Remove(n)
	}
}
