package index

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

func openCorpus(t *testing.T, name string) *Index {
	t.Helper()
	root := testutil.Corpus(t, name)
	v, err := vault.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The corpora are read-only to us: the index goes to a temp dir.
	ix, err := Open(context.Background(), v, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func countMarkdown(t *testing.T, root string) int {
	n := 0
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if info.IsDir() && strings.HasPrefix(info.Name(), ".") && p != root {
			return filepath.SkipDir
		}
		if !info.IsDir() && strings.EqualFold(filepath.Ext(p), ".md") {
			n++
		}
		return nil
	})
	return n
}

func TestCorpusObsidianHub(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus test")
	}
	ix := openCorpus(t, "obsidian-hub")
	res := mustSync(t, ix, SyncOptions{})
	if want := countMarkdown(t, ix.Vault.Root); res.Indexed != want || res.Failed != 0 {
		t.Fatalf("indexed %d (failed %d), want every one of %d notes outside hidden folders", res.Indexed, res.Failed, want)
	}
	links := count(t, ix, "SELECT COUNT(*) FROM links")
	embeds := count(t, ix, "SELECT COUNT(*) FROM links WHERE kind='embed'")
	unresolved := count(t, ix, "SELECT COUNT(*) FROM links WHERE dst_id IS NULL AND attachment=0")
	// The hub has ~42k "[[" and ~3.5k "![[" in all, but most embeds (and
	// some links) sit inside %% comments, which Obsidian does not render and
	// loci does not index as links.
	if links < 35000 || embeds < 90 {
		t.Errorf("links=%d embeds=%d", links, embeds)
	}
	if unresolved*100 > links {
		t.Errorf("%d of %d links unresolved (>1%%): resolution is off", unresolved, links)
	}
	// A second run changes nothing.
	res = mustSync(t, ix, SyncOptions{})
	if res.Indexed != 0 || res.Removed != 0 {
		t.Errorf("no-op re-index = %+v", res)
	}
	t.Logf("links=%d embeds=%d unresolved=%d", links, embeds, unresolved)
}

func TestCorpusLogseqDocs(t *testing.T) {
	ix := openCorpus(t, "logseq-docs")
	if ix.Vault.Kind != vault.KindLogseq {
		t.Fatalf("logseq-docs detected as %s", ix.Vault.Kind)
	}
	mustSync(t, ix, SyncOptions{})
	uuids := count(t, ix, "SELECT COUNT(DISTINCT uuid) FROM blocks WHERE uuid IS NOT NULL")
	refs := count(t, ix, "SELECT COUNT(*) FROM links WHERE kind='blockref'")
	resolvedRefs := count(t, ix, "SELECT COUNT(*) FROM links WHERE kind='blockref' AND dst_id IS NOT NULL")
	props := count(t, ix, "SELECT COUNT(*) FROM blocks WHERE properties IS NOT NULL")
	if uuids < 120 || refs < 60 || props < 100 {
		t.Errorf("uuids=%d refs=%d blocks with properties=%d; the graph has 130 ids, 64 refs", uuids, refs, props)
	}
	if resolvedRefs*10 < refs*8 {
		t.Errorf("only %d of %d block refs resolve", resolvedRefs, refs)
	}
	// Namespaced file names become page names with '/'.
	if n := count(t, ix, "SELECT COUNT(*) FROM notes WHERE path LIKE 'pages/%\\_\\_\\_%' ESCAPE '\\' AND title LIKE '%/%'"); n == 0 {
		t.Errorf("no namespaced page titles")
	}
	l, err := ix.LinksOf(context.Background(), "pages/Block Reference.md")
	if err != nil {
		t.Fatal(err)
	}
	typed := map[string]string{}
	for _, x := range l.TypedOut {
		typed[x.Key] = x.Target
	}
	if typed["type"] != "Feature" || typed["platforms"] != "All Platforms" {
		t.Errorf("typed links of Block Reference = %v", typed)
	}
	t.Logf("uuids=%d refs=%d resolved=%d", uuids, refs, resolvedRefs)
}
