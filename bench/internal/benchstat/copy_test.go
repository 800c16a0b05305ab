package benchstat

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCopyVault(t *testing.T) {
	src := t.TempDir()
	for _, f := range []string{"a.md", "dir/b.md", ".loci/index.db", ".obsidian/app.json"} {
		p := filepath.Join(src, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "link.md")); err != nil {
		t.Fatal(err)
	}
	list := func(dir string) []string {
		var out []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		hidden bool
		want   []string
	}{
		{false, []string{".obsidian/app.json", "a.md", "dir/b.md"}},
		{true, []string{"a.md", "dir/b.md"}},
	} {
		dst := t.TempDir()
		if err := CopyVault(src, dst, c.hidden); err != nil {
			t.Fatal(err)
		}
		if got := list(dst); !slices.Equal(got, c.want) {
			t.Errorf("skipHidden=%v: copied %v, want %v", c.hidden, got, c.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(src, "dir/b.md")); err != nil || string(b) != "dir/b.md" {
		t.Errorf("source changed: %q %v", b, err)
	}
}
