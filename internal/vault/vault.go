// Package vault owns the vault on disk: root confinement, the walk over its
// notes, reading and etags. The files are the truth; nothing here knows about
// the index.
package vault

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/text/unicode/norm"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// IgnoredDirs are never walked and never readable through loci.
var IgnoredDirs = []string{".obsidian", ".trash", ".git", ".loci", "node_modules"}

// Kind says what kind of vault a folder is.
type Kind string

const (
	KindObsidian Kind = "obsidian"
	KindLogseq   Kind = "logseq"
)

// Vault is an opened vault root.
type Vault struct {
	Root    string // absolute, symlinks resolved
	Name    string // base name of Root
	Kind    Kind
	exclude []string // doublestar globs over vault-relative paths
	// graphs are the vault-relative roots of Logseq graphs ("" for the vault
	// itself): folders holding logseq/config.edn. A graph may sit inside an
	// Obsidian vault; its pages/ and journals/ are parsed as outlines.
	graphs []string
}

// Open resolves root and detects its kind. exclude are extra doublestar globs
// (vault-relative, e.g. "Archive/**", "*.excalidraw.md"), matched in any
// case (matchAnyFold).
func Open(root string, exclude []string) (*Vault, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeVaultNotFound, "cannot resolve vault path").With("vault", root)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, errs.New(errs.CodeVaultNotFound, "vault folder does not exist: %s", root).With("vault", root)
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return nil, errs.New(errs.CodeVaultNotFound, "vault path is not a folder: %s", root).With("vault", root)
	}
	for _, g := range exclude {
		if !doublestar.ValidatePattern(g) {
			return nil, errs.New(errs.CodeInvalidInput, "invalid exclude glob %q", g)
		}
	}
	v := &Vault{Root: real, Name: filepath.Base(real), exclude: exclude, Kind: KindObsidian}
	v.graphs = findGraphs(real)
	if len(v.graphs) > 0 && v.graphs[0] == "" {
		v.Kind = KindLogseq
	}
	return v, nil
}

// findGraphs looks for logseq/config.edn at the root and up to two levels down.
// It finds what the globs logseq/config.edn, */logseq/config.edn and
// */*/logseq/config.edn would, in the same order (by depth, then by name),
// with one directory listing per folder of the first two levels and one
// lstat per candidate, where the globs listed every second-level folder
// (thousands of entries in a large vault, on every CLI call).
func findGraphs(root string) []string {
	var out []string
	add := func(rel string) {
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel), "logseq", "config.edn")); err != nil {
			return
		}
		if rel != "" && (strings.HasPrefix(rel, ".") || ignoredPrefix(rel) != "") {
			return
		}
		out = append(out, rel)
	}
	// subdirs lists the folders in rel (links to folders included, as a
	// glob's * matches them), by name.
	subdirs := func(rel string) []string {
		ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil
		}
		var dirs []string
		for _, e := range ents {
			child := path.Join(rel, e.Name())
			switch {
			case e.IsDir():
			case e.Type()&fs.ModeSymlink != 0:
				if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(child))); err != nil || !fi.IsDir() {
					continue
				}
			default:
				continue
			}
			dirs = append(dirs, child)
		}
		return dirs
	}
	add("")
	level1 := subdirs("")
	for _, d := range level1 {
		add(d)
	}
	for _, d := range level1 {
		for _, d2 := range subdirs(d) {
			add(d2)
		}
	}
	return out
}

// LogseqFile reports whether rel is an outline page of a Logseq graph
// (pages/ or journals/), and whether it is a journal.
func (v *Vault) LogseqFile(rel string) (outline, journal bool) {
	for _, g := range v.graphs {
		r := rel
		if g != "" {
			if !strings.HasPrefix(rel, g+"/") {
				continue
			}
			r = rel[len(g)+1:]
		}
		switch {
		case strings.HasPrefix(r, "pages/"):
			return true, false
		case strings.HasPrefix(r, "journals/"):
			return true, true
		}
	}
	return false, false
}

// Etag is the hex SHA-256 of a note's bytes.
func Etag(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// CleanRel validates a caller-supplied vault-relative path and returns it in
// canonical form (forward slashes, NFC, no "." segments). It rejects absolute
// paths, ".." escapes, NUL bytes, URL-encoded traversal and ignored folders,
// without touching the disk.
func CleanRel(p string) (string, error) {
	orig := p
	deny := func(reason string) error {
		return errs.New(errs.CodePathDenied, "path %q is not allowed: %s", orig, reason).With("path", orig).With("reason", reason)
	}
	if p == "" {
		return "", errs.New(errs.CodeInvalidInput, "path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", deny("contains a NUL byte")
	}
	if strings.Contains(p, "%") {
		// Reject encoded separators and dots that a later decoder could turn into traversal.
		low := strings.ToLower(p)
		for _, enc := range []string{"%2e", "%2f", "%5c", "%00"} {
			if strings.Contains(low, enc) {
				return "", deny("contains URL-encoded path characters")
			}
		}
	}
	p = strings.ReplaceAll(p, "\\", "/")
	if strings.HasPrefix(p, "/") || filepath.IsAbs(p) || (len(p) >= 2 && p[1] == ':') {
		return "", deny("absolute paths are not accepted; use a vault-relative path")
	}
	p = norm.NFC.String(p)
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", deny("'..' segments are not accepted")
		}
	}
	p = path.Clean(p)
	if p == "." || p == "" {
		return "", deny("path names the vault root")
	}
	if d := ignoredPrefix(p); d != "" {
		return "", deny("inside " + d + "/")
	}
	return p, nil
}

func ignoredPrefix(rel string) string {
	first, _, _ := strings.Cut(rel, "/")
	for _, d := range IgnoredDirs {
		if strings.EqualFold(first, d) {
			return d
		}
	}
	return ""
}

// Abs confines a vault-relative path and returns its absolute location. If the
// path (or any parent) is a symlink, the resolved target must stay inside the
// vault.
func (v *Vault) Abs(rel string) (string, string, error) {
	clean, err := CleanRel(rel)
	if err != nil {
		return "", "", err
	}
	abs := filepath.Join(v.Root, filepath.FromSlash(clean))
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// The path itself may not exist; its deepest existing parent must be inside.
			if perr := v.checkParent(abs); perr != nil {
				return "", "", perr
			}
			return abs, clean, nil
		}
		return "", "", errs.Wrap(err, errs.CodePathDenied, "cannot resolve path").With("path", rel)
	}
	if !v.inside(real) {
		return "", "", errs.New(errs.CodePathDenied, "path %q resolves outside the vault", rel).With("path", rel).With("reason", "symlink escapes the vault")
	}
	return real, clean, nil
}

func (v *Vault) checkParent(abs string) error {
	dir := filepath.Dir(abs)
	for {
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			if !v.inside(real) {
				return errs.New(errs.CodePathDenied, "path resolves outside the vault").With("reason", "symlink escapes the vault")
			}
			return nil
		}
		next := filepath.Dir(dir)
		if next == dir {
			return nil
		}
		dir = next
	}
}

func (v *Vault) inside(real string) bool {
	return real == v.Root || strings.HasPrefix(real, v.Root+string(filepath.Separator))
}

// NoteRule says why a canonical vault-relative path is not a note loci
// serves, or "" when it is one. It is the one rule of every read surface
// and of the walk: a Markdown file (.md), not hidden (no segment starting
// with "."), outside the ignored folders (.obsidian, .git, .loci, .trash,
// node_modules), outside a Logseq graph's own logseq/ folder (backups,
// version files, config) and not excluded by the exclude globs.
func (v *Vault) NoteRule(clean string) string {
	if d := ignoredPrefix(clean); d != "" {
		return "inside " + d + "/"
	}
	for _, seg := range strings.Split(clean, "/") {
		if strings.HasPrefix(seg, ".") {
			return "hidden files and folders are not notes"
		}
	}
	if g, ok := v.logseqInternal(clean); ok {
		return "inside " + g + "logseq/, the Logseq app's own folder (backups, version files, config)"
	}
	if v.excludedByConfig(clean) {
		return "excluded by the exclude config"
	}
	if !strings.EqualFold(path.Ext(clean), ".md") {
		return "only Markdown files (.md) are notes"
	}
	return ""
}

// Resolve confines a caller-supplied path to a note: the requested path and
// the real path it resolves to through any symlinks must both be notes by
// NoteRule, and the real one must be inside the vault. It returns the
// canonical requested path and the real vault-relative path, which has no
// link at any component and keeps the names' bytes on disk (read it with
// v.FS()); a note whose name on disk differs from the requested one only
// by Unicode normalization (NFD from a Mac) is found. A note that does not
// exist is note_not_found; anything else refused is path_denied.
func (v *Vault) Resolve(rel string) (clean, real string, err error) {
	clean, err = CleanRel(rel)
	if err != nil {
		return "", "", err
	}
	if why := v.NoteRule(clean); why != "" {
		return clean, "", errs.New(errs.CodePathDenied, "%s is not a note loci reads: %s", clean, why).With("path", clean).With("reason", why)
	}
	abs := filepath.Join(v.Root, filepath.FromSlash(clean))
	realAbs, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		if disk, ok := v.onDisk(clean); ok {
			abs = filepath.Join(v.Root, filepath.FromSlash(disk))
			realAbs, err = filepath.EvalSymlinks(abs)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		// Missing: say so only when the folders on the way are fine; a
		// link among them that leaves the vault or leads into a closed
		// folder is a refusal whether or not the note exists there.
		realAbs, err = v.resolveMissing(abs)
		if err == nil {
			err = fs.ErrNotExist
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		if errs.Code(err) == errs.CodePathDenied {
			return clean, "", errs.As(err).With("path", clean)
		}
		return clean, "", errs.Wrap(err, errs.CodePathDenied, "cannot resolve path").With("path", clean)
	}
	realRel, ok := safefs.Inside(v.Root, realAbs)
	if !ok {
		return clean, "", errs.New(errs.CodePathDenied, "%s resolves outside the vault through a symbolic link", clean).
			With("path", clean).With("reason", "symlink escapes the vault")
	}
	// The rule speaks of names in NFC; the real path keeps the bytes of
	// the names on disk, which is what opening it needs.
	realNFC := norm.NFC.String(realRel)
	missing := errors.Is(err, fs.ErrNotExist)
	if realNFC != clean {
		// A link inside the vault (Notes/lci → ../.loci) must not open what
		// the rule keeps closed: the rule holds for where it leads too.
		if realNFC == "" {
			return clean, "", errs.New(errs.CodePathDenied, "%s resolves to the vault root", clean).With("path", clean).With("reason", "symlink")
		}
		if why := v.NoteRule(realNFC); why != "" {
			return clean, "", errs.New(errs.CodePathDenied, "%s is a symbolic link to %s, which is not a note loci reads: %s", clean, realNFC, why).
				With("path", clean).With("resolved", realNFC).With("reason", why)
		}
	}
	if missing {
		return clean, "", errs.New(errs.CodeNotFound, "note not found: %s", clean).With("path", clean)
	}
	return clean, realRel, nil
}

// onDisk finds the names on disk of clean (NFC) when they differ from it
// only by Unicode normalization: a note synced from a Mac can keep its
// NFD name on Linux, where a name is its bytes, and the walk and the index
// know it by its NFC name. It reports false when clean is ASCII (its own
// every normalization), when some name has no such twin, or when two
// names on disk are the same in NFC (which one is meant is unknowable).
func (v *Vault) onDisk(clean string) (string, bool) {
	if isASCII(clean) {
		return "", false
	}
	dir, changed := v.Root, false
	var out []string
	for _, seg := range strings.Split(clean, "/") {
		name := seg
		if _, err := os.Lstat(filepath.Join(dir, seg)); err != nil {
			if isASCII(seg) {
				return "", false
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				return "", false
			}
			name = ""
			for _, e := range ents {
				if n := e.Name(); norm.NFC.String(n) == seg {
					if name != "" {
						return "", false
					}
					name = n
				}
			}
			if name == "" {
				return "", false
			}
			changed = true
		}
		out = append(out, name)
		dir = filepath.Join(dir, name)
	}
	return strings.Join(out, "/"), changed
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// resolveMissing resolves the deepest existing folder of abs (which does
// not exist) and joins the rest to it.
func (v *Vault) resolveMissing(abs string) (string, error) {
	rest := filepath.Base(abs)
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(dir) == dir {
			return "", err
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// ReadNote reads a note by vault-relative path: Resolve's rule, then the
// real path is opened without following links (a FIFO or device is
// refused, never blocked on). The returned path is the canonical form of
// the requested one.
func (v *Vault) ReadNote(rel string) ([]byte, string, error) {
	clean, err := CleanRel(rel)
	if err != nil {
		return nil, "", err
	}
	if v.NoteRule(clean) == "" {
		// The common case first: a path with no link on the way is its own
		// real path, and the no-follow read proves it.
		if b, err := v.FS().ReadFile(clean); err == nil {
			return b, clean, nil
		}
	}
	clean, real, err := v.Resolve(rel)
	if err != nil {
		return nil, clean, err
	}
	b, err := v.FS().ReadFile(real)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, clean, errs.New(errs.CodeNotFound, "note not found: %s", clean).With("path", clean)
		case safefs.IsDenied(err):
			if st, serr := v.FS().Lstat(real); serr == nil && st.IsDir() {
				return nil, clean, errs.New(errs.CodeNotFound, "%s is a folder, not a note", clean).With("path", clean).With("reason", "folder")
			}
			return nil, clean, errs.New(errs.CodePathDenied, "%s is not a note loci reads: %s", clean, errs.As(err).Message).With("path", clean).With("reason", "not a regular file")
		}
		return nil, clean, errs.Wrap(err, errs.CodeInternal, "cannot read note").With("path", clean)
	}
	return b, clean, nil
}

// File is one note found by Walk.
type File struct {
	Rel     string // vault-relative, forward slashes, NFC
	Size    int64
	ModTime int64 // UnixNano
}

// Excluded reports whether a vault-relative path is ignored, inside a
// Logseq graph's own logseq/ folder, or excluded by config.
func (v *Vault) Excluded(rel string) bool {
	if ignoredPrefix(rel) != "" {
		return true
	}
	if _, ok := v.logseqInternal(rel); ok {
		return true
	}
	return v.excludedByConfig(rel)
}

func (v *Vault) excludedByConfig(rel string) bool {
	return matchAnyFold(v.exclude, rel)
}

// matchAnyFold reports whether rel matches one of the doublestar globs as
// written or with both folded to one case (and NFC): the rule for globs
// that fence paths off (exclude, deny_paths). On a case-insensitive file
// system (macOS, Windows) private/x.md is the file Private/x.md, so
// Private/** must fence every spelling of it; on Linux the other
// spellings are other files, fenced too (fail closed). Matching the glob
// as written as well keeps what a folded glob would lose (a negated
// class such as [!a-z]).
func matchAnyFold(globs []string, rel string) bool {
	if len(globs) == 0 {
		return false
	}
	folded := foldCase(rel)
	for _, g := range globs {
		if ok, _ := doublestar.Match(g, rel); ok {
			return true
		}
		if ok, _ := doublestar.Match(foldCase(g), folded); ok {
			return true
		}
	}
	return false
}

// foldCase is s in NFC, lower case.
func foldCase(s string) string { return strings.ToLower(norm.NFC.String(s)) }

// logseqInternal reports whether rel is (inside) the logseq/ folder of a
// Logseq graph: the app keeps its config, custom CSS, page backups
// (logseq/bak/), version files and recycle bin there. Backups are full
// copies of pages and would otherwise shadow the real ones. It returns the
// graph's prefix ("" or "sub/").
func (v *Vault) logseqInternal(rel string) (string, bool) {
	for _, g := range v.graphs {
		prefix := ""
		if g != "" {
			prefix = g + "/"
		}
		dir := prefix + "logseq"
		if strings.EqualFold(rel, dir) || strings.EqualFold(rel, dir+"/") || len(rel) > len(dir) && strings.EqualFold(rel[:len(dir)+1], dir+"/") {
			return prefix, true
		}
	}
	return "", false
}

// Walk lists every Markdown note in the vault, skipping ignored folders,
// excluded globs, hidden folders and symlinks that leave the vault. Files that
// vanish during the walk are skipped silently.
func (v *Vault) Walk(ctx context.Context, fn func(File) error) error {
	return filepath.WalkDir(v.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || p != v.Root {
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p == v.Root {
			return nil
		}
		rel, _ := filepath.Rel(v.Root, p)
		rel = norm.NFC.String(filepath.ToSlash(rel))
		name := d.Name()
		if d.IsDir() {
			if strings.HasPrefix(name, ".") || v.Excluded(rel) || v.Excluded(rel+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if v.NoteRule(rel) != "" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // vanished
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			// A linked note is indexed only when what it links to is a
			// note too (never .loci/token, never outside the vault).
			if _, _, err := v.Resolve(rel); err != nil {
				return nil
			}
			st, err := os.Stat(p)
			if err != nil || !st.Mode().IsRegular() {
				return nil
			}
			info = st
		} else if !info.Mode().IsRegular() {
			return nil
		}
		return fn(File{Rel: rel, Size: info.Size(), ModTime: info.ModTime().UnixNano()})
	})
}

// Graphs returns the vault-relative roots of the Logseq graphs in the vault
// ("" for a graph at the root), in discovery order.
func (v *Vault) Graphs() []string { return append([]string(nil), v.graphs...) }

// FS is the vault root as a safefs.Root: the way to touch files below it
// without following a link at any component.
func (v *Vault) FS() safefs.Root { return safefs.Root(v.Root) }
