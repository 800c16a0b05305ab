// Package config resolves loci's settings in one precedence for every
// command and role: flags > environment (LOCI_*) > the user's config file
// (~/.config/loci/config.yaml, $LOCI_CONFIG) > the vault's own
// .loci/config.yaml > defaults, remembering where each value comes from.
//
// Every file is decoded strictly and fails closed: an unknown key, a value
// of the wrong type, a bad glob or duration and an unknown enum value are
// config_invalid errors naming the key, its line and (for typos) the
// nearest valid key, never settings silently ignored. A vault's own file is
// untrusted input and may set less (docs/security.md): no remote model
// server or key for one, no index outside the vault, no chat settings, and
// its writes.enabled: true is not honoured.
package config

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
)

// CheckStateDir refuses a <vault>/.loci that leads outside the vault (a
// symbolic link planted in the vault): loci keeps its index, token, undo
// journal and audit log there, so it could otherwise be made to write
// anywhere (path_denied).
func CheckStateDir(vaultRoot string) error {
	def := filepath.Join(vaultRoot, ".loci")
	if err := insideVault(vaultRoot, def); err != nil {
		return errs.New(errs.CodePathDenied, "%s leads outside the vault (%v): loci keeps its index, token and undo journal there, so a planted vault could make it write anywhere; remove the link", def, err).
			With("dir", def)
	}
	return nil
}

// ResolveIndexDir returns the index directory the configuration asks for,
// resolved against the vault root ("" for the default, <vault>/.loci). An
// index_dir from the vault's own file must stay inside the vault; one from
// the user's file, relative, is relative to each vault; one from the
// environment or a flag is the user's path as given.
func (c *Config) ResolveIndexDir() (string, error) {
	if err := CheckStateDir(c.VaultRoot); err != nil {
		return "", err
	}
	if c.IndexDir == "" {
		return "", nil
	}
	s := c.SourceOf("index_dir")
	dir := c.IndexDir
	switch s.Layer {
	case LayerEnv, LayerFlag:
		return dir, nil
	case LayerUser:
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(c.VaultRoot, filepath.FromSlash(dir))
		}
		return dir, nil
	}
	f := &File{IndexDir: dir, Path: s.Path, Source: SourceVault, lines: map[string]int{"index_dir": s.Line}}
	return f.ResolveIndexDir(c.VaultRoot)
}

// ResolveIndexDir returns the index directory the file asks for, resolved
// against the vault root ("" when the file names none: the default,
// <vault>/.loci, which must pass CheckStateDir). A relative index_dir is
// relative to the vault root. From a vault's own file the directory must
// stay inside the vault, also through symbolic links (config_invalid).
// The user's own file may name any folder.
func (f *File) ResolveIndexDir(vaultRoot string) (string, error) {
	if err := CheckStateDir(vaultRoot); err != nil {
		return "", err
	}
	if f.IndexDir == "" {
		return "", nil
	}
	dir := f.IndexDir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(vaultRoot, filepath.FromSlash(dir))
	}
	if f.Source == SourceUser {
		return dir, nil
	}
	if err := insideVault(vaultRoot, dir); err != nil {
		return "", invalid(f.Path, []Problem{{Key: "index_dir", Line: f.lines["index_dir"], Message: "resolves outside the vault through a symbolic link (" + err.Error() + "); from the vault's own config the index must stay inside the vault (use --index-dir, LOCI_INDEX_DIR or your own config for another place)"}})
	}
	return dir, nil
}

// insideVault checks that dir, once its existing part is resolved through
// symbolic links, is the vault root or below it.
func insideVault(vaultRoot, dir string) error {
	root, err := filepath.EvalSymlinks(vaultRoot)
	if err != nil {
		return err
	}
	root, _ = filepath.Abs(root)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// Resolve the longest existing prefix; the rest is created below it.
	rest := ""
	cur := abs
	for {
		if _, err := os.Lstat(cur); err == nil {
			break
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			break
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
	real, err := filepath.EvalSymlinks(cur)
	if err != nil {
		return err
	}
	real = filepath.Join(real, rest)
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return errs.New(errs.CodePathDenied, "it resolves to %s", real)
	}
	return nil
}
