package index

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

// sameResolution checks that the resolver a build uses (names looked up
// in the index, a few keys cached) gives every candidate list the
// in-memory resolver gives: for every stored link, and for names derived
// from every note (its path key, its stem, a partial path, upper case,
// relative forms). It returns the number of targets compared.
func sameResolution(t *testing.T, ix *Index) int {
	t.Helper()
	defer func(n, b int) { namesCache, namesBatch = n, b }(namesCache, namesBatch)
	namesCache, namesBatch = 5, 7 // evictions all along, several queries a page
	ctx := context.Background()
	mem, err := LoadResolver(ctx, ix.DB, ix.Vault.Kind)
	if err != nil {
		t.Fatal(err)
	}
	db, err := newSQLResolver(ctx, ix.DB, ix.Vault.Kind)
	if err != nil {
		t.Fatal(err)
	}
	defer db.db.close()
	type probe struct{ src, kind, target string }
	var probes []probe
	rows, err := ix.DB.Query(`SELECT s.path, l.kind, l.target FROM links l JOIN notes s ON s.id=l.src_id WHERE l.attachment=0 AND l.kind<>'blockref' ORDER BY l.rowid`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p probe
		if err := rows.Scan(&p.src, &p.kind, &p.target); err != nil {
			t.Fatal(err)
		}
		probes = append(probes, p)
	}
	rows.Close()
	rows, err = ix.DB.Query(`SELECT path FROM notes ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rows.Close()
	for i, p := range paths {
		from := paths[(i*7)%len(paths)]
		noExt := strings.TrimSuffix(p, path.Ext(p))
		for _, tgt := range []string{p, noExt, strings.ToUpper(noExt), path.Base(noExt), "./" + p, "/" + noExt, "../" + path.Base(p),
			path.Base(path.Dir(p)) + "/" + path.Base(noExt)} {
			probes = append(probes, probe{from, "wikilink", tgt}, probe{from, "markdown", tgt})
		}
	}
	ids := map[string]int64{}
	for _, p := range probes {
		if _, ok := ids[p.src]; !ok {
			ids[p.src] = mustID(t, ix, p.src)
		}
	}
	// Once with a query per key (namesCache keys kept), once with the
	// keys of 1,000 targets at a time looked up first (as a build does).
	for _, batch := range []int{0, 1000} {
		for i, p := range probes {
			if batch > 0 && i%batch == 0 {
				db.db.trim()
				var page []nameProbe
				for _, q := range probes[i:min(i+batch, len(probes))] {
					page = append(page, nameProbe{q.src, q.kind, q.target})
				}
				db.prefetch(page)
			}
			want := mem.Candidates(p.src, p.kind, p.target)
			got := db.Candidates(db.Path(ids[p.src]), p.kind, p.target)
			if db.db.err != nil {
				t.Fatal(db.db.err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s -> %s [[%s]] (batch %d): index lookups give %+v, the in-memory resolver %+v", p.src, p.kind, p.target, batch, got, want)
			}
		}
	}
	return len(probes)
}

func mustID(t *testing.T, ix *Index, p string) int64 {
	t.Helper()
	var id int64
	if err := ix.DB.QueryRow("SELECT id FROM notes WHERE path=?", p).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSQLResolverMatchesMemory: names that several notes share (a stem in
// many folders, a path key in two cases, an alias of two notes), partial
// paths, relative Markdown links and aliases resolve the same either way.
func TestSQLResolverMatchesMemory(t *testing.T) {
	root := filepath.Join(t.TempDir(), "vault")
	genLinkVault(t, root, 300, 5)
	testutil.WriteFiles(t, root, linkFixture)
	testutil.WriteFiles(t, root, map[string]string{
		"Case/Twin.md":  "# Twin upper\n[[case/twin]] [[TWIN]] [[Shared]]",
		"case/twin.md":  "---\naliases: [Shared]\n---\n# twin lower\n[[Case/Twin]]",
		"x/y/Twin.md":   "---\naliases: [Shared, shared]\n---\n[[y/twin]] [x](../../case/twin.md) [[./Twin]]",
		"Ünïcode/É.md":  "[[é]] [[ünïcode/é]] [[É]]",
		"deep/a/b/c.md": "[[b/c]] [[a/b/c]] [[deep/a/b/c]] [[c]] [c](c.md) [up](../../Case/Twin.md)",
	})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	// Hand-checked: the two path keys "case/twin" resolve to the note
	// written last (the highest id), a stem shared by three notes to the
	// shortest path, an alias to the shortest of its notes.
	for _, c := range []struct{ src, target, dst string }{
		{"Case/Twin.md", "case/twin", "case/twin.md"},
		{"Case/Twin.md", "TWIN", "Case/Twin.md"}, // its own folder first
		{"Case/Twin.md", "Shared", "x/y/Twin.md"},
		{"x/y/Twin.md", "y/twin", "x/y/Twin.md"},
		{"Ünïcode/É.md", "é", "Ünïcode/É.md"},
		{"deep/a/b/c.md", "b/c", "deep/a/b/c.md"},
	} {
		if got := dstOf(t, ix, c.src, c.target); got != c.dst {
			t.Errorf("%s -> [[%s]] resolved to %s, want %s", c.src, c.target, got, c.dst)
		}
	}
	if n := sameResolution(t, ix); n < 3000 {
		t.Errorf("only %d targets compared", n)
	}
}

// TestSQLResolverMatchesMemoryCorpora: the same over the real vaults
// (Obsidian, and a Logseq graph: page titles, namespaces, aliases).
func TestSQLResolverMatchesMemoryCorpora(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus test")
	}
	for _, name := range []string{"obsidian-hub", "logseq-docs"} {
		t.Run(name, func(t *testing.T) {
			ix := openCorpus(t, name)
			mustSync(t, ix, SyncOptions{NoEmbed: true})
			t.Log(fmt.Sprint(sameResolution(t, ix), " targets compared"))
		})
	}
}
