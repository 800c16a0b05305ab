package benchstat

import (
	"io/fs"
	"os"
	"path/filepath"
)

// CopyVault copies the regular files and folders of src into dst, for a
// bench to index a corpus it must not modify. It skips a .loci folder (an
// index that may sit in the source vault) and, with skipHidden, every
// folder whose name starts with a dot. Symbolic links and other special
// files are not copied.
func CopyVault(src, dst string, skipHidden bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && rel != "." && (d.Name() == ".loci" || skipHidden && d.Name()[0] == '.'):
			return fs.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		}
		return nil
	})
}
