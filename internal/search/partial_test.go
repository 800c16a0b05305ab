package search_test

import (
	"context"
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// While some sections lack their vector, a query without a mode is
// lexical; one that asks for hybrid or semantic gets it, over the vectors
// there are, and the response says they are partial.
func TestPartialVectorsDefaultToLexical(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, hybridVault)
	ix := indexVault(t, root)
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	ctx := context.Background()
	check := func(mode, wantMode, wantVectors string) *search.Response {
		t.Helper()
		r, err := s.Search(ctx, search.Query{Text: "hotkeys", Mode: mode})
		if err != nil || r.Mode != wantMode || r.Vectors != wantVectors {
			t.Fatalf("mode %q: got mode %q vectors %q (%v), want %q %q", mode, r.Mode, r.Vectors, err, wantMode, wantVectors)
		}
		return r
	}
	check("", search.ModeHybrid, "")

	// A note indexed without its vectors (what a server's sync leaves to
	// its background embedder).
	testutil.WriteFiles(t, root, map[string]string{"Shortcuts.md": "# Shortcuts\n\nHotkeys for the editor.\n"})
	if _, err := ix.Sync(ctx, index.SyncOptions{NoEmbed: true}); err != nil {
		t.Fatal(err)
	}
	r := check("", search.ModeLexical, search.VectorsPartial)
	if !slices.Contains(paths(r), "Shortcuts.md") {
		t.Errorf("the new note is not found lexically: %v", paths(r))
	}
	check(search.ModeHybrid, search.ModeHybrid, search.VectorsPartial)
	check(search.ModeSemantic, search.ModeSemantic, search.VectorsPartial)
	check(search.ModeLexical, search.ModeLexical, "")

	// Embedded: hybrid again by default.
	if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	check("", search.ModeHybrid, "")
	check(search.ModeSemantic, search.ModeSemantic, "")
}
