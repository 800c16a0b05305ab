package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/vault"
)

// readAll maps each generated file's vault-relative path to its bytes.
func readAll(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGeneratedVaultIndexes: a 50-note vault is deterministic for a seed,
// indexes without failures, every wikilink resolves (targets are notes of
// the vault), and it holds tasks, tags, frontmatter and CJK notes.
func TestGeneratedVaultIndexes(t *testing.T) {
	const n = 50
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if _, err := generate(a, n, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(b, n, 7); err != nil {
		t.Fatal(err)
	}
	fa, fb := readAll(t, a), readAll(t, b)
	if len(fa) != n {
		t.Fatalf("%d files, want %d", len(fa), n)
	}
	for p, x := range fa {
		if !bytes.Equal(x, fb[p]) {
			t.Fatalf("%s differs between two runs with the same seed", p)
		}
	}

	ctx := context.Background()
	v, err := vault.Open(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(ctx, v, index.Options{Dir: t.TempDir(), NoEmbed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	res, err := ix.Sync(ctx, index.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Indexed != n || res.Failed != 0 {
		t.Fatalf("indexed %d failed %d (%v), want %d and 0", res.Indexed, res.Failed, res.Failures, n)
	}
	count := func(q string) int {
		var c int
		if err := ix.DB.QueryRow(q).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := count("SELECT COUNT(*) FROM links WHERE kind='wikilink'"); c == 0 {
		t.Fatal("no wikilinks")
	}
	if c := count("SELECT COUNT(*) FROM links WHERE kind='wikilink' AND dst_id IS NULL"); c != 0 {
		t.Fatalf("%d unresolved wikilinks", c)
	}
	for _, q := range []string{
		"SELECT COUNT(*) FROM tasks",
		"SELECT COUNT(*) FROM tags",
		"SELECT COUNT(*) FROM notes WHERE frontmatter IS NOT NULL AND frontmatter != '{}'",
	} {
		if count(q) == 0 {
			t.Fatalf("%s: 0", q)
		}
	}
	// Note 0 is the hub: with the power-law targets most links go to the
	// lowest ids, so note 0 has the most incoming links.
	g := &gen{seed: 7, n: n}
	var top string
	if err := ix.DB.QueryRow(`SELECT n.title FROM links l JOIN notes n ON n.id = l.dst_id
		WHERE l.kind='wikilink' GROUP BY l.dst_id ORDER BY COUNT(*) DESC, n.title LIMIT 1`).Scan(&top); err != nil {
		t.Fatal(err)
	}
	if top != g.title(0) {
		t.Fatalf("most linked note %q, want note 0 %q", top, g.title(0))
	}
	// Languages: seed 7 gives some non-English notes among 50 (5% each).
	langs := map[string]int{}
	for i := 0; i < n; i++ {
		langs[g.lang(i)]++
	}
	if langs["en"] == n {
		t.Fatal("no non-English notes")
	}
	// Every note is found by its own title.
	s := &search.Searcher{DB: ix.DB}
	for i := 0; i < n; i += 7 {
		r, err := s.Search(ctx, search.Query{Text: `"` + g.title(i) + `"`, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, hit := range r.Results {
			found = found || hit.Title == g.title(i)
		}
		if !found {
			t.Fatalf("note %d %q not found by its title", i, g.title(i))
		}
	}
}
