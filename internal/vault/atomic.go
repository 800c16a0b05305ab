package vault

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/safefs"
)

// errExist reports that a create found its target already there.
var errExist = errors.New("target exists")

// Every function here takes paths relative to a safefs.Root (the vault
// root) and acts through folder descriptors opened without following a
// link at any component (internal/safefs): a link planted anywhere on the
// way (.trash, .loci/journal, a note's folder) is refused with path_denied
// naming it, and nothing is ever written outside the vault.

// splitRel splits a root-relative path into its folder and name.
func splitRel(rel string) (string, string) {
	dir, name := path.Split(rel)
	return strings.TrimSuffix(dir, "/"), name
}

// tempPrefix is the start of the temporary names beside a file called
// name: hidden and not .md, so the walk never indexes them and Obsidian
// does not show them. A long name is cut to its first 100 bytes, at a
// character boundary: a name that is not valid UTF-8 is refused by APFS.
func tempPrefix(name string) string {
	if len(name) > 100 {
		n := 100
		for n > 0 && !utf8.RuneStart(name[n]) {
			n--
		}
		name = name[:n]
	}
	return "." + name + ".loci-"
}

func tempName(name string) string {
	var b [8]byte
	rand.Read(b[:])
	return tempPrefix(name) + hex.EncodeToString(b[:]) + ".tmp"
}

// sweepTemps removes the temporary files a killed writer left beside name
// in d. The caller holds the file's write lock, so no live writer owns one.
func sweepTemps(d *safefs.Dir, name string) {
	ents, err := d.ReadDir()
	if err != nil {
		return
	}
	prefix := tempPrefix(name)
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, prefix) && strings.HasSuffix(n, ".tmp") && len(n) == len(prefix)+16+4 && e.Type().IsRegular() {
			d.Remove(n)
		}
	}
}

// writeFileAtomic puts data at rel so that a reader (or a crash) sees
// either the old bytes or the new ones, never a mix: the data goes to a
// temporary file in the same folder, is fsynced, gets the old file's
// permissions (and owner, where allowed) and a modification time later
// than the old one, is renamed over the target, and the folder is fsynced.
// With noReplace the target must not exist (errExist otherwise); the new
// file then appears through a hard link, which fails atomically when the
// name is taken. Missing folders are created.
func writeFileAtomic(r safefs.Root, rel string, data []byte, noReplace bool) (err error) {
	dirRel, name := splitRel(rel)
	d, err := r.OpenDir(dirRel, true, 0o755)
	if err != nil {
		return err
	}
	defer d.Close()
	old, statErr := d.Lstat(name)
	exists := statErr == nil
	if exists && old.Mode()&fs.ModeSymlink != 0 {
		return safefs.SymlinkError(rel)
	}
	if exists && noReplace {
		return errExist
	}
	if exists && !old.Mode().IsRegular() {
		return safefs.NotRegularError(rel)
	}
	sweepTemps(d, name)
	tmp := tempName(name)
	f, err := d.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666) // the umask applies to new notes
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			d.Remove(tmp)
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
		if err = newerThan(d, tmp, old.ModTime()); err != nil {
			return err
		}
	}
	if noReplace {
		if err = linkNoReplace(d, tmp, d, name); err != nil {
			return err
		}
		d.Remove(tmp)
	} else if err = d.Rename(tmp, d, name); err != nil {
		return err
	}
	return d.Sync()
}

// newerThan makes sure name's modification time is after t. Two writes
// within one clock tick would otherwise leave the same size and mtime, and
// an incremental index (which compares those first) would miss the second.
func newerThan(d *safefs.Dir, name string, t time.Time) error {
	st, err := d.Lstat(name)
	if err != nil {
		return err
	}
	for _, step := range []time.Duration{time.Microsecond, time.Second, 2 * time.Second} {
		if st.ModTime().After(t) {
			return nil
		}
		mt := t.Add(step)
		if err := d.Chtimes(name, mt, mt); err != nil {
			return err
		}
		if st, err = d.Lstat(name); err != nil {
			return err
		}
	}
	return nil
}

// linkNoReplace makes dst/dstName name the file src/name without ever
// replacing it. A file system without hard links falls back to
// check-then-rename.
func linkNoReplace(src *safefs.Dir, name string, dst *safefs.Dir, dstName string) error {
	err := src.Link(name, dst, dstName)
	if err == nil {
		return nil
	}
	if safefs.IsDenied(err) {
		return err
	}
	if errors.Is(err, fs.ErrExist) {
		return errExist
	}
	if _, serr := dst.Lstat(dstName); serr == nil {
		return errExist
	}
	return src.Rename(name, dst, dstName)
}

// moveNoReplace renames srcRel to dstRel (same file system), refusing to
// replace dstRel; the file keeps its inode, bytes, mode and times. Missing
// folders of dstRel are created; both folders are fsynced.
func moveNoReplace(r safefs.Root, srcRel, dstRel string) error {
	sdRel, sname := splitRel(srcRel)
	ddRel, dname := splitRel(dstRel)
	sd, err := r.OpenDir(sdRel, false, 0)
	if err != nil {
		return err
	}
	defer sd.Close()
	if st, err := sd.Lstat(sname); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return safefs.SymlinkError(srcRel)
	}
	dd, err := r.OpenDir(ddRel, true, 0o755)
	if err != nil {
		return err
	}
	defer dd.Close()
	if err := linkNoReplace(sd, sname, dd, dname); err != nil {
		return err
	}
	if _, err := sd.Lstat(sname); err == nil {
		// Linked (not renamed by the fallback): drop the old name.
		if err := sd.Remove(sname); err != nil {
			dd.Remove(dname)
			return err
		}
	}
	if err := dd.Sync(); err != nil {
		return err
	}
	return sd.Sync()
}

// removeFile unlinks rel and fsyncs its folder.
func removeFile(r safefs.Root, rel string) error {
	dirRel, name := splitRel(rel)
	d, err := r.OpenDir(dirRel, false, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Remove(name); err != nil {
		return err
	}
	return d.Sync()
}
