package pgtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The template cache: initdb is most of a cluster's start (0.6-0.8 s of CPU
// and 3-8 s of wall time on the loaded two-core dev machine) and its output
// depends only on the binaries and the arguments, so the first initdb's
// fresh data directory is kept and later clusters copy it. The cache lives
// in the user's cache directory (os.UserCacheDir()/loci-pgtest, private to
// the user: a template planted by someone else could configure commands
// postgres runs), one directory per key = SHA-256 of the bin dir, the
// `postgres --version` output and initdb's arguments, so an upgraded
// PostgreSQL gets a new template. LOCI_PG_CACHE names another directory,
// or "off" disables the cache. The cache is best effort: any failure to
// read or fill it falls back to initdb.

func cacheRoot() string {
	switch d := os.Getenv("LOCI_PG_CACHE"); d {
	case "off", "0", "false":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(base, "loci-pgtest")
	default:
		return d
	}
}

func templateKey(bin, version string, args []string) string {
	h := sha256.Sum256([]byte(bin + "\x00" + version + "\x00" + strings.Join(args, "\x00")))
	return "pg-" + hex.EncodeToString(h[:8])
}

// templateDir returns the cached template for these binaries and
// arguments, or "" when there is none (or the cache is off).
func templateDir(bin, version string, args []string) string {
	root := cacheRoot()
	if root == "" {
		return ""
	}
	d := filepath.Join(root, templateKey(bin, version, args))
	if st, err := os.Stat(filepath.Join(d, "PG_VERSION")); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	return d
}

// saveTemplate copies a freshly initdb'd data directory into the cache:
// into a temporary sibling first, renamed into place, so a concurrent test
// binary never sees a half-written template (the loser of a race discards
// its copy).
func saveTemplate(dataDir, bin, version string, args []string) {
	root := cacheRoot()
	if root == "" {
		return
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return
	}
	final := filepath.Join(root, templateKey(bin, version, args))
	tmp, err := os.MkdirTemp(root, ".tmp-")
	if err != nil {
		return
	}
	if err := copyTree(dataDir, tmp, nil); err != nil {
		_ = os.RemoveAll(tmp)
		return
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.RemoveAll(tmp)
	}
}

// copyTree copies the directory src into the existing directory dst:
// directories and regular files with their permission bits, owned by acct
// when set. Anything else (a symbolic link, a device) is an error: a fresh
// data directory has none.
func copyTree(src, dst string, acct *account) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case rel == ".":
			return nil
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()|0o700); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(p, target, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("pgtest: %s in the template is not a file or directory", rel)
		}
		if acct != nil {
			return os.Lchown(target, int(acct.uid), int(acct.gid))
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
