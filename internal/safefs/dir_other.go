//go:build !unix

package safefs

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"
)

// Dir is an opened folder below a Root. Without openat, every operation
// checks its entry with Lstat first: the rule is the same as on Unix, but a
// link swapped in between the check and the operation is not caught.
type Dir struct {
	root Root
	rel  string
}

func (d *Dir) sub(name string) string {
	if d.rel == "" {
		return name
	}
	return d.rel + "/" + name
}

// Path is the absolute OS path of name inside d.
func (d *Dir) Path(name string) string { return d.root.Join(d.sub(name)) }

func (d *Dir) abs() string { return d.root.Join(d.rel) }

// OpenDir opens the folder rel below r, refusing links at every component;
// with create, missing folders are made.
func (r Root) OpenDir(rel string, create bool, perm fs.FileMode) (*Dir, error) {
	parts, err := split(rel)
	if err != nil {
		return nil, err
	}
	d := &Dir{root: r}
	for _, s := range parts {
		nd, err := d.OpenDir(s, create, perm)
		if err != nil {
			return nil, err
		}
		d = nd
	}
	return d, nil
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return denied(name, "not a file name")
	}
	return nil
}

// OpenDir opens the folder name inside d.
func (d *Dir) OpenDir(name string, create bool, perm fs.FileMode) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	p := d.Path(name)
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := os.Mkdir(p, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		st, err = os.Lstat(p)
	}
	if err != nil {
		return nil, err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, SymlinkError(d.sub(name))
	}
	if !st.IsDir() {
		return nil, notDirError(d.sub(name))
	}
	return &Dir{root: d.root, rel: d.sub(name)}, nil
}

// OpenFile opens name in d; a link or a special file is refused.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	st, err := os.Lstat(d.Path(name))
	if err == nil {
		if st.Mode()&fs.ModeSymlink != 0 {
			return nil, SymlinkError(d.sub(name))
		}
		if !st.Mode().IsRegular() {
			return nil, NotRegularError(d.sub(name))
		}
	}
	return os.OpenFile(d.Path(name), flag, perm)
}

// Lstat describes name in d.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return os.Lstat(d.Path(name))
}

// Stat describes d itself.
func (d *Dir) Stat() (fs.FileInfo, error) { return os.Lstat(d.abs()) }

// Remove unlinks name.
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return os.Remove(d.Path(name))
}

// Rename moves name in d to newName in dst.
func (d *Dir) Rename(name string, dst *Dir, newName string) error {
	if err := d.noLink(name); err != nil {
		return err
	}
	if err := dst.noLink(newName); err != nil {
		return err
	}
	return os.Rename(d.Path(name), dst.Path(newName))
}

// noLink checks name and refuses it when it is a link.
func (d *Dir) noLink(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if st, err := os.Lstat(d.Path(name)); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return SymlinkError(d.sub(name))
	}
	return nil
}

// Link makes newName in dst another name of name in d.
func (d *Dir) Link(name string, dst *Dir, newName string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := checkName(newName); err != nil {
		return err
	}
	return os.Link(d.Path(name), dst.Path(newName))
}

// Chtimes sets name's times.
func (d *Dir) Chtimes(name string, atime, mtime time.Time) error {
	return os.Chtimes(d.Path(name), atime, mtime)
}

// ReadDir lists d's entries.
func (d *Dir) ReadDir() ([]fs.DirEntry, error) { return os.ReadDir(d.abs()) }

// Sync is a no-op where folders cannot be fsynced.
func (d *Dir) Sync() error { return nil }

// Close releases d.
func (d *Dir) Close() error { return nil }

// renameOpenTemp: Windows does not rename a file that is open, so a
// temporary file is closed before its rename.
const renameOpenTemp = false

// lockTemp: without flock, an open file is protected by the OS itself
// (Windows refuses to remove a file another process has open).
func lockTemp(*os.File) bool { return true }

// removeStaleTemp removes the temporary file n; one still open by its
// writer is not removed on Windows.
func (d *Dir) removeStaleTemp(n string) { d.Remove(n) }
