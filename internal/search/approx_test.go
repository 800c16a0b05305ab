package search_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// approxVault is 3 folders of notes on 3 subjects, 30 sections in all.
func approxVault() map[string]string {
	subjects := map[string][]string{
		"garden":  {"Tomatoes need sun, water and compost in the vegetable beds.", "Prune the roses and weed the soil before spring planting.", "Seeds sprout in warm soil; water the seedlings each morning."},
		"kitchen": {"Bake bread with flour, yeast and salt in a hot oven.", "Simmer the soup with onions, carrots and a bay leaf.", "Roll the pasta dough thin and cut it into ribbons."},
		"travel":  {"Book the train tickets and pack a light suitcase.", "The hotel is near the airport; the flight leaves at noon.", "Carry the passport and a map of the old town."},
	}
	files := map[string]string{}
	for dir, lines := range subjects {
		for i := range 10 {
			files[fmt.Sprintf("%s/%s %d.md", dir, dir, i)] = fmt.Sprintf("# %s note %d\n\n%s\n", strings.ToUpper(dir[:1])+dir[1:], i, lines[i%3])
		}
	}
	return files
}

// TestApproximateVectorSearch: past search.approx_min_chunks, semantic and
// hybrid search go through the approximate index, and the filters (a path
// glob, a read fence's hidden notes) are still applied to what it returns,
// with as many results as the exact scan gives, even when the allowed
// notes lie outside the lists a query probes.
func TestApproximateVectorSearch(t *testing.T) {
	defer func(p int) { embed.ANNProbe = p }(embed.ANNProbe)
	embed.ANNProbe = 1 // one list: the filters must widen the probe
	ctx := context.Background()
	open := func(approx int) (*search.Searcher, *embed.Matrix) {
		root := t.TempDir()
		testutil.WriteFiles(t, root, approxVault())
		os.MkdirAll(filepath.Join(root, ".loci"), 0o755)
		os.WriteFile(filepath.Join(root, ".loci", "config.yaml"), []byte(fmt.Sprintf("search: {approx_min_chunks: %d}\n", approx)), 0o644)
		ix := indexVault(t, root)
		m, err := ix.VectorMatrix(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return &search.Searcher{DB: ix.DB, Vectors: ix}, m
	}
	approx, am := open(8)
	exact, em := open(-1)
	if !am.Approximate() || em.Approximate() || am.Rows != 30 {
		t.Fatalf("approximate: %v (%d rows), exact: %v", am.Approximate(), am.Rows, em.Approximate())
	}
	q := "tomato compost soil seedlings"
	for _, mode := range []string{search.ModeSemantic, search.ModeHybrid} {
		// Unfiltered: the garden notes come first either way.
		r, err := approx.Search(ctx, search.Query{Text: q, Mode: mode, Limit: 5})
		if err != nil || len(r.Results) == 0 || !strings.HasPrefix(r.Results[0].Path, "garden/") {
			t.Fatalf("%s: %v %v", mode, paths(r), err)
		}
		// A path glob on another subject: only its notes, as many as exact
		// (every one of them, with no similarity floor).
		all := &search.Fusion{MinSimilarity: -1}
		for glob, n := range map[string]int{"kitchen/**": 10, "travel/travel 3.md": 1} {
			a, err := approx.Search(ctx, search.Query{Text: q, Mode: mode, Limit: 20, PathGlob: glob, Fusion: all})
			if err != nil {
				t.Fatal(err)
			}
			e, err := exact.Search(ctx, search.Query{Text: q, Mode: mode, Limit: 20, PathGlob: glob, Fusion: all})
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Results) != n || len(e.Results) != n {
				t.Errorf("%s %s: approximate %v, exact %v", mode, glob, paths(a), paths(e))
			}
			for _, res := range a.Results {
				if ok, _ := filepath.Match(strings.ReplaceAll(glob, "**", "*"), res.Path); !ok {
					t.Errorf("%s %s: %s escaped the filter", mode, glob, res.Path)
				}
			}
		}
		// A fence hiding every garden note: none comes back.
		a, err := approx.Search(ctx, search.Query{Text: q, Mode: mode, Limit: 20,
			Allow: func(p string) bool { return !strings.HasPrefix(p, "garden/") }})
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range a.Results {
			if strings.HasPrefix(res.Path, "garden/") {
				t.Errorf("%s: fenced note %s returned", mode, res.Path)
			}
		}
	}
}
