package vault

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// errExist reports that a create found its target already there.
var errExist = errors.New("target exists")

// tempName is a hidden, non-.md name beside the target: the walk never
// indexes it and Obsidian does not show it.
func tempName(abs string) string {
	var b [8]byte
	rand.Read(b[:])
	base := filepath.Base(abs)
	if len(base) > 100 {
		base = base[:100]
	}
	return filepath.Join(filepath.Dir(abs), "."+base+".loci-"+hex.EncodeToString(b[:])+".tmp")
}

// sweepTemps removes the temporary files a killed writer left beside abs.
// The caller holds abs's write lock, so no live writer owns one of them.
func sweepTemps(abs string) {
	base := filepath.Base(abs)
	if len(base) > 100 {
		base = base[:100]
	}
	esc := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`).Replace(base)
	if runtime.GOOS == "windows" {
		esc = strings.NewReplacer("*", "?", "[", "?").Replace(base)
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(abs), "."+esc+".loci-*.tmp"))
	for _, m := range matches {
		os.Remove(m)
	}
}

// writeFileAtomic puts data at abs so that a reader (or a crash) sees either
// the old bytes or the new ones, never a mix: the data goes to a temporary
// file in the same folder, is fsynced, gets the old file's permissions (and
// owner, where allowed) and a modification time later than the old one, is
// renamed over the target, and the folder is fsynced. With noReplace the
// target must not exist (errExist otherwise); the new file then appears
// through a hard link, which fails atomically when the name is taken.
func writeFileAtomic(abs string, data []byte, noReplace bool) (err error) {
	dir := filepath.Dir(abs)
	old, statErr := os.Lstat(abs)
	exists := statErr == nil
	if exists && noReplace {
		return errExist
	}
	if exists && !old.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if !exists {
		if err := mkdirAllSync(dir); err != nil {
			return err
		}
	}
	sweepTemps(abs)
	tmp := tempName(abs)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666) // the umask applies to new notes
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if exists {
		if err = f.Chmod(old.Mode().Perm()); err != nil {
			return err
		}
		preserveOwner(f, old)
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if exists {
		if err = newerThan(tmp, old.ModTime()); err != nil {
			return err
		}
	}
	if noReplace {
		if err = linkNoReplace(tmp, abs); err != nil {
			return err
		}
		os.Remove(tmp)
	} else if err = os.Rename(tmp, abs); err != nil {
		return err
	}
	return syncDir(dir)
}

// newerThan makes sure p's modification time is after t. Two writes within
// one clock tick would otherwise leave the same size and mtime, and an
// incremental index (which compares those first) would miss the second.
func newerThan(p string, t time.Time) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	for _, step := range []time.Duration{time.Microsecond, time.Second, 2 * time.Second} {
		if st.ModTime().After(t) {
			return nil
		}
		mt := t.Add(step)
		if err := os.Chtimes(p, mt, mt); err != nil {
			return err
		}
		if st, err = os.Stat(p); err != nil {
			return err
		}
	}
	return nil
}

// linkNoReplace makes dst name the file src without ever replacing dst. A
// file system without hard links falls back to check-then-rename.
func linkNoReplace(src, dst string) error {
	err := os.Link(src, dst)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return errExist
	}
	if _, serr := os.Lstat(dst); serr == nil {
		return errExist
	}
	return os.Rename(src, dst)
}

// moveNoReplace renames src to dst (same file system), refusing to replace
// dst; the file keeps its inode, bytes, mode and times. Both folders are
// fsynced.
func moveNoReplace(src, dst string) error {
	if err := mkdirAllSync(filepath.Dir(dst)); err != nil {
		return err
	}
	err := os.Link(src, dst)
	switch {
	case err == nil:
		if err := os.Remove(src); err != nil {
			os.Remove(dst)
			return err
		}
	case errors.Is(err, fs.ErrExist):
		return errExist
	default:
		if _, serr := os.Lstat(dst); serr == nil {
			return errExist
		}
		if err := os.Rename(src, dst); err != nil {
			return err
		}
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	return syncDir(filepath.Dir(src))
}

// removeFile unlinks abs and fsyncs its folder.
func removeFile(abs string) error {
	if err := os.Remove(abs); err != nil {
		return err
	}
	return syncDir(filepath.Dir(abs))
}

// mkdirAllSync creates dir and its missing parents, fsyncing each parent
// whose entries changed so that the new folders survive a crash.
func mkdirAllSync(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range missing {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// syncDir fsyncs a folder so that a rename or a new entry in it is durable.
// File systems that cannot sync folders are tolerated.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !ignorableSyncErr(err) {
		return err
	}
	return nil
}
