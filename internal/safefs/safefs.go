// Package safefs is how loci touches the files it writes itself (notes,
// the trash, the undo journal, the audit log, the idempotency store, the
// token, the index and its caches) and the files it reads on a caller's
// behalf: below a trusted base folder, no symbolic link is followed at any
// path component, and only regular files and folders are opened.
//
// A vault is hostile input: a synced or cloned vault can hold a link
// anywhere (.trash → /tmp, .loci/audit.log → ~/.bashrc, a FIFO named
// journal). On Unix every component is opened relative to its parent's
// descriptor with O_NOFOLLOW (openat), so a link planted or swapped in at
// any moment cannot redirect an operation; a link found is refused with
// path_denied naming it (relative to the base). Elsewhere the same rule is
// checked with Lstat before each operation.
//
// The base itself is trusted: it is the vault root or an index folder the
// user chose, resolved once when it was opened.
package safefs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/loci-dev/loci/internal/errs"
)

// forceWalk makes every open take the component walk, never Linux's
// one-call openat2 (a test hook: both paths must hold the same rule).
var forceWalk atomic.Bool

// Root is a trusted base folder (absolute, symlinks already resolved by
// whoever chose it). Paths given to its methods are relative to it, with
// forward slashes; "" or "." names the base itself.
type Root string

// Join returns the absolute OS path of rel (for messages and for APIs
// that only take a path, after Check).
func (r Root) Join(rel string) string {
	if rel == "" || rel == "." {
		return string(r)
	}
	return filepath.Join(string(r), filepath.FromSlash(rel))
}

// split validates rel and returns its components. ".." and absolute paths
// are refused: callers build these paths themselves, so one is a bug or an
// attack, never a request to honour.
func split(rel string) ([]string, error) {
	rel = filepath.ToSlash(rel)
	if rel == "" || rel == "." {
		return nil, nil
	}
	if strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) || filepath.IsAbs(filepath.FromSlash(rel)) {
		return nil, denied(rel, "not a relative path")
	}
	var out []string
	for _, s := range strings.Split(path.Clean(rel), "/") {
		switch s {
		case "", ".":
			continue
		case "..":
			return nil, denied(rel, "'..' is not allowed")
		}
		out = append(out, s)
	}
	return out, nil
}

// denied is the error for a path loci refuses to touch.
func denied(rel, reason string) error {
	return errs.New(errs.CodePathDenied, "%s: %s", rel, reason).With("path", rel).With("reason", reason)
}

// SymlinkError is the path_denied error for a symbolic link found at rel.
func SymlinkError(rel string) error {
	return errs.New(errs.CodePathDenied, "%s is a symbolic link; loci does not follow links when it writes or reads its own files", rel).
		With("path", rel).With("reason", "symlink").With("symlink", rel)
}

func notDirError(rel string) error {
	return denied(rel, "not a folder")
}

// NotRegularError is the path_denied error for a file at rel that is not a
// regular file (a FIFO, a device, a socket, a folder where a file belongs).
func NotRegularError(rel string) error {
	return errs.New(errs.CodePathDenied, "%s is not a regular file", rel).With("path", rel).With("reason", "not a regular file")
}

// IsDenied reports whether err is safefs's refusal (a link, a non-folder
// in the middle of a path, a special file).
func IsDenied(err error) bool { return errs.Code(err) == errs.CodePathDenied }

// Check verifies that no existing component of rel below r is a symbolic
// link and that every existing component but the last is a folder. A
// missing component ends the check (what does not exist cannot be a
// link). It is for paths handed to code that opens them itself (SQLite).
func (r Root) Check(rel string) error {
	_, err := r.Missing(rel)
	return err
}

// Missing is Check, and returns the components of rel from the first one
// that does not exist (what creating rel would make; nil when rel exists).
func (r Root) Missing(rel string) ([]string, error) {
	parts, err := split(rel)
	if err != nil {
		return nil, err
	}
	p := string(r)
	for i, s := range parts {
		p = filepath.Join(p, s)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return parts[i:], nil
		}
		if err != nil {
			return nil, err
		}
		sub := strings.Join(parts[:i+1], "/")
		if st.Mode()&fs.ModeSymlink != 0 {
			return nil, SymlinkError(sub)
		}
		if i < len(parts)-1 && !st.IsDir() {
			return nil, notDirError(sub)
		}
	}
	return nil, nil
}

// MkdirAll creates rel and its missing parents (perm), refusing links.
func (r Root) MkdirAll(rel string, perm fs.FileMode) error {
	d, err := r.OpenDir(rel, true, perm)
	if err != nil {
		return err
	}
	return d.Close()
}

// OpenFile opens rel (flag and perm as os.OpenFile). With O_CREATE the
// missing parent folders are created (0755). The file must be a regular
// file: a FIFO or device is refused without blocking on it.
func (r Root) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	if f, ok := r.openFast(filepath.ToSlash(rel), flag); ok {
		return f, nil
	}
	dir, name := path.Split(filepath.ToSlash(rel))
	if name == "" {
		return nil, denied(rel, "not a file name")
	}
	d, err := r.OpenDir(strings.TrimSuffix(dir, "/"), flag&os.O_CREATE != 0, 0o755)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.OpenFile(name, flag, perm)
}

// ReadFile reads rel whole.
func (r Root) ReadFile(rel string) ([]byte, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Lstat describes rel without following a link at any component.
func (r Root) Lstat(rel string) (fs.FileInfo, error) {
	dir, name := path.Split(filepath.ToSlash(rel))
	if name == "" {
		d, err := r.OpenDir(rel, false, 0)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.Stat()
	}
	d, err := r.OpenDir(strings.TrimSuffix(dir, "/"), false, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Lstat(name)
}

// Remove unlinks the file (or empty folder) rel; a link at rel itself is
// removed, never followed.
func (r Root) Remove(rel string) error {
	dir, name := path.Split(filepath.ToSlash(rel))
	d, err := r.OpenDir(strings.TrimSuffix(dir, "/"), false, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Remove(name)
}

// ReadDir lists the folder rel.
func (r Root) ReadDir(rel string) ([]fs.DirEntry, error) {
	d, err := r.OpenDir(rel, false, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir()
}

// Rename moves oldRel to newRel (replacing newRel, as rename(2)); neither
// path may go through a link.
func (r Root) Rename(oldRel, newRel string) error {
	od, on := path.Split(filepath.ToSlash(oldRel))
	nd, nn := path.Split(filepath.ToSlash(newRel))
	src, err := r.OpenDir(strings.TrimSuffix(od, "/"), false, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := r.OpenDir(strings.TrimSuffix(nd, "/"), false, 0)
	if err != nil {
		return err
	}
	defer dst.Close()
	return src.Rename(on, dst, nn)
}

// WriteFileAtomic puts data at rel so that a reader (or a crash) sees the
// old bytes or the new ones, never a mix: a temporary file beside it,
// fsynced, renamed over it, the folder fsynced. Parents are created.
func (r Root) WriteFileAtomic(rel string, data []byte, perm fs.FileMode) error {
	return r.writeAtomic(rel, data, perm, true)
}

// WriteCacheFile is WriteFileAtomic without the fsyncs: for caches that
// are rebuilt when lost (a crash leaves the old file or the new one, or
// none, never a mix that is trusted: readers check their contents).
func (r Root) WriteCacheFile(rel string, data []byte, perm fs.FileMode) error {
	return r.writeAtomic(rel, data, perm, false)
}

func (r Root) writeAtomic(rel string, data []byte, perm fs.FileMode, durable bool) error {
	dir, name := path.Split(filepath.ToSlash(rel))
	d, err := r.OpenDir(strings.TrimSuffix(dir, "/"), true, 0o755)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.writeAtomic(name, data, perm, durable)
}

func (d *Dir) writeAtomic(name string, data []byte, perm fs.FileMode, durable bool) (err error) {
	if err := d.noLink(name); err != nil {
		return err
	}
	d.sweepTemps(name)
	f, tmp, err := d.createTemp(name, perm)
	if err != nil {
		return err
	}
	open := true
	defer func() {
		if open {
			f.Close()
		}
		if err != nil {
			d.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if durable {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if !renameOpenTemp {
		open = false
		if err = f.Close(); err != nil {
			return err
		}
	}
	if err = d.Rename(tmp, d, name); err != nil {
		return err
	}
	if durable {
		if err = d.Sync(); err != nil {
			return err
		}
	}
	if open {
		// The lock that kept sweepers away goes with the descriptor.
		open = false
		return f.Close()
	}
	return nil
}

// tempPrefix starts the names of the temporary files beside name: hidden,
// so no walk takes them for notes.
func tempPrefix(name string) string { return "." + name + ".tmp-" }

// createTemp creates a temporary file beside name and locks it (lockTemp)
// so that no other process's sweep removes it while it is written.
func (d *Dir) createTemp(name string, perm fs.FileMode) (*os.File, string, error) {
	for try := 0; try < 4; try++ {
		tmp := tempPrefix(name) + randHex()
		f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return nil, "", err
		}
		if lockTemp(f) {
			return f, tmp, nil
		}
		// A sweep locked it between its creation and our lock: that
		// sweep removes it; take another name.
		f.Close()
	}
	return nil, "", &os.PathError{Op: "create", Path: d.Path(tempPrefix(name) + "*"), Err: errors.New("every temporary file was taken by a sweep")}
}

// sweepTemps removes the temporary files that writers of name killed
// before their rename left beside it. A temporary file still being
// written is kept: its writer holds its lock (lockTemp), and a sweep
// removes only a file whose lock it gets (staleTemp).
func (d *Dir) sweepTemps(name string) {
	ents, err := d.ReadDir()
	if err != nil {
		return
	}
	prefix := tempPrefix(name)
	for _, e := range ents {
		n := e.Name()
		if len(n) != len(prefix)+16 || !strings.HasPrefix(n, prefix) || !e.Type().IsRegular() || !isHex(n[len(prefix):]) {
			continue
		}
		d.removeStaleTemp(n)
	}
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// AppendLine appends one line with a single write(2) on an O_APPEND file
// (lines from several processes never interleave), creating it (perm) and
// its folders.
func (r Root) AppendLine(rel string, line []byte, perm fs.FileMode) error {
	f, err := r.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Inside reports whether the absolute path p is base or below it, and
// returns its path relative to base (forward slashes).
func Inside(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	if rel == "." {
		rel = ""
	}
	return rel, true
}

func randHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Loc is a folder loci owns (an index folder, the AI cache's folder),
// reached from a trusted base: the vault root when the folder is inside the
// vault (the default <vault>/.loci), so that a link planted at .loci itself
// is refused too; else the folder itself, which the user named.
type Loc struct {
	Root Root
	Rel  string // the folder below Root ("" = Root itself)
}

// At locates dir (made absolute) from the first base that contains it.
// Bases are trusted folders (vault roots, symlinks already resolved).
func At(dir string, bases ...string) Loc {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	for _, b := range bases {
		if b == "" {
			continue
		}
		if rel, ok := Inside(b, abs); ok {
			return Loc{Root: Root(b), Rel: rel}
		}
	}
	return Loc{Root: Root(abs)}
}

// Path is the folder's absolute path.
func (l Loc) Path() string { return l.Root.Join(l.Rel) }

// Name is the root-relative path of name inside the folder.
func (l Loc) Name(name string) string {
	if l.Rel == "" {
		return name
	}
	return l.Rel + "/" + name
}

// MkdirAll creates the folder (perm) and its missing parents below Root;
// a folder outside every trusted base is the user's own choice and is
// created as named.
func (l Loc) MkdirAll(perm fs.FileMode) error {
	if l.Rel == "" {
		return os.MkdirAll(string(l.Root), perm)
	}
	return l.Root.MkdirAll(l.Rel, perm)
}

// Check refuses names inside the folder that are links (and the folder's
// own components): for files that other code opens by path (SQLite).
func (l Loc) Check(names ...string) error {
	if err := l.Root.Check(l.Rel); err != nil {
		return err
	}
	for _, n := range names {
		if err := l.Root.Check(l.Name(n)); err != nil {
			return err
		}
	}
	return nil
}
