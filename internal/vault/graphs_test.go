package vault

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// globGraphs is how findGraphs found the graphs before: three globs.
func globGraphs(root string) []string {
	var out []string
	for _, pat := range []string{"logseq/config.edn", "*/logseq/config.edn", "*/*/logseq/config.edn"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		for _, p := range m {
			rel, err := filepath.Rel(root, filepath.Dir(filepath.Dir(p)))
			if err != nil {
				continue
			}
			rel = filepath.ToSlash(rel)
			if rel == "." {
				rel = ""
			}
			if rel != "" && (strings.HasPrefix(rel, ".") || ignoredPrefix(rel) != "") {
				continue
			}
			out = append(out, rel)
		}
	}
	return out
}

// TestFindGraphs: the graphs at the root and one and two levels down, in
// the order the globs gave them; deeper ones, hidden and ignored folders,
// and a logseq that is a file are not graphs; a link to a folder counts.
func TestFindGraphs(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{
		"logseq/config.edn", "b/logseq/config.edn", "a/logseq/config.edn",
		"a/z/logseq/config.edn", "a/c/logseq/config.edn", "c/d/e/logseq/config.edn",
		".hidden/logseq/config.edn", "a/.h/logseq/config.edn", "node_modules/logseq/config.edn",
		"f/logseq", "g/notes.md",
	} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "b"), filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(root, "missing"), filepath.Join(root, "dangling"))
	want := []string{"", "a", "b", "linked", "a/.h", "a/c", "a/z"}
	got := findGraphs(root)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findGraphs: %q, want %q", got, want)
	}
	if old := globGraphs(root); !reflect.DeepEqual(got, old) {
		t.Errorf("findGraphs %q, the globs %q", got, old)
	}
}

// TestFindGraphsCorpora: on the shared corpora, the same graphs as the globs.
func TestFindGraphsCorpora(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "corpora")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Skip("no ../shared/corpora")
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		root := filepath.Join(dir, e.Name())
		if got, old := findGraphs(root), globGraphs(root); !reflect.DeepEqual(got, old) {
			t.Errorf("%s: findGraphs %q, the globs %q", e.Name(), got, old)
		}
	}
}
