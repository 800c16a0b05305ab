package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestEmbedCacheLookedUpInBothWays: a pass whose first page is full loads
// the whole content-hash cache; a smaller one looks up its page's hashes
// by key. Either way a text already in the cache is not embedded again.
func TestEmbedCacheLookedUpInBothWays(t *testing.T) {
	for _, page := range []int{2, 8192} {
		old := embedGroupSize
		embedGroupSize = page
		t.Cleanup(func() { embedGroupSize = old })
		root := t.TempDir()
		testutil.WriteFiles(t, root, map[string]string{
			"a.md": "# Alpha\n\nApples grow on trees.\n",
			"b.md": "# Beta\n\nBananas grow in bunches.\n",
			"c.md": "# Gamma\n\nCherries are small.\n",
		})
		fe := &fakeEmbedder{model: "m1"}
		ix := openWith(t, root, fe, embed.Settings{})
		mustSync(t, ix, SyncOptions{})
		fe.reset()
		// Two new notes whose section texts and profiles repeat cached ones
		// (same heading path and text, same title), one note with a new text.
		testutil.WriteFiles(t, root, map[string]string{
			"x/a.md": "# Alpha\n\nApples grow on trees.\n",
			"x/b.md": "# Beta\n\nBananas grow in bunches.\n",
			"d.md":   "# Delta\n\nDates are sweet.\n",
		})
		res := mustSync(t, ix, SyncOptions{})
		got := fe.reset()
		// d.md: its section and its title profile; x/a.md and x/b.md: all cached.
		if len(got) != 2 || res.Embed.Cached != 4 {
			t.Errorf("page %d: embedded %q, cached %d (want 2 texts of d.md, 4 cached)", page, got, res.Embed.Cached)
		}
		if n := count(t, ix, "SELECT COUNT(*) FROM chunk_vectors"); n != count(t, ix, "SELECT COUNT(*) FROM chunks") {
			t.Errorf("page %d: chunk_vectors %d != chunks", page, n)
		}
		_ = os.Remove(filepath.Join(root, "d.md"))
	}
}
