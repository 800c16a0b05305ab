package search_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestQELatency (scratch): golden queries x reps, expansion off / on in one loop.
func TestQELatency(t *testing.T) {
	if os.Getenv("QE_LAT") == "" {
		t.Skip()
	}
	sets := map[string][2]string{
		"help":    {testutil.Corpus(t, "obsidian-help/en"), filepath.Join(testutil.RepoRoot(), "testdata", "golden", "obsidian-help-en.json")},
		"dbpedia": {filepath.Join(testutil.Corpus(t, "eval/dbpedia-entity-5k"), "vault"), filepath.Join(testutil.Corpus(t, "eval/dbpedia-entity-5k"), "golden.json")},
	}
	for name, p := range sets {
		gs, err := search.LoadGolden(p[1])
		if err != nil {
			t.Fatal(err)
		}
		ix := indexVault(t, p[0])
		s := &search.Searcher{DB: ix.DB, Vectors: ix}
		w := search.QEWeight
		for _, mode := range []string{search.ModeLexical, search.ModeHybrid} {
			var tot [2]time.Duration
			n := 0
			for rep := 0; rep < 5; rep++ {
				for _, q := range gs {
					for i, qw := range []float64{0, w} {
						search.QEWeight = qw
						t0 := time.Now()
						if _, err := s.Search(context.Background(), search.Query{Text: q.Query, Limit: 10, Mode: mode}); err != nil {
							t.Fatal(err)
						}
						tot[i] += time.Since(t0)
					}
					n++
				}
			}
			search.QEWeight = w
			t.Logf("%s %s: off %.2f ms, on %.2f ms, x%.2f", name, mode, float64(tot[0].Microseconds())/1000/float64(n), float64(tot[1].Microseconds())/1000/float64(n), float64(tot[1])/float64(tot[0]))
		}
	}
}
