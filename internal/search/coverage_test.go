package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestCoverageBoost: a note whose title covers the query outranks one that
// only mentions its words (more often, in a shorter text), and without the
// boost it does not, so the boost is what ranks it first.
func TestCoverageBoost(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Pruning roses.md", "# Pruning roses\n\nCut back in late winter. "+strings.Repeat("Keep the shears sharp and clean the blades after each plant. ", 6)+"Roses need pruning.\n")
	write("Spring chores.md", "# Spring chores\n\n## Pruning roses\n\nPruning roses, pruning roses again, then roses and more pruning.\n")
	for i := range 10 {
		write(fmt.Sprintf("Filler %d.md", i), fmt.Sprintf("# Filler %d\n\nWatering tomatoes and weeding beds, week %d.\n", i, i))
	}
	ix := indexVault(t, dir)
	s := &search.Searcher{DB: ix.DB}
	ctx := context.Background()
	first := func(boost float64) string {
		t.Helper()
		old := search.CoverageBoost
		search.CoverageBoost = boost
		defer func() { search.CoverageBoost = old }()
		r, err := s.Search(ctx, search.Query{Text: "pruning roses", Mode: search.ModeLexical})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) != 2 {
			t.Fatalf("boost %v: got %v, want the two notes that hold both words", boost, paths(r))
		}
		return r.Results[0].Path
	}
	if got := first(0); got != "Spring chores.md" {
		t.Fatalf("without the boost the note that repeats the words should lead (else this test proves nothing); got %s first", got)
	}
	if got := first(search.CoverageBoost); got != "Pruning roses.md" {
		t.Errorf("with the boost: got %s first, want Pruning roses.md", got)
	}
	// A stop word in the query does not change that:
	// "the" is left out of the share.
	r, err := s.Search(ctx, search.Query{Text: "the roses pruning", Mode: search.ModeLexical})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) == 0 || r.Results[0].Path != "Pruning roses.md" {
		t.Errorf("with a stop word: got %v, want Pruning roses.md first", paths(r))
	}
}

// BenchmarkCoverageBoost times the dbpedia-entity-5k golden queries
// (lexical) with the coverage boost off and on, interleaved in one loop,
// and reports both and their ratio (x-off):
//
//	go test ./internal/search -run '^$' -bench CoverageBoost -benchtime 5x
func BenchmarkCoverageBoost(b *testing.B) {
	root := testutil.Corpus(b, "eval/dbpedia-entity-5k")
	raw, err := os.ReadFile(filepath.Join(root, "golden.json"))
	if err != nil {
		b.Fatal(err)
	}
	var golden []struct{ Query string }
	if err := json.Unmarshal(raw, &golden); err != nil {
		b.Fatal(err)
	}
	ix := indexVault(b, filepath.Join(root, "vault"))
	s := &search.Searcher{DB: ix.DB}
	ctx := context.Background()
	on := search.CoverageBoost
	defer func() { search.CoverageBoost = on }()
	var off, with time.Duration
	for i := 0; i < b.N; i++ {
		for _, boost := range []float64{0, on} {
			search.CoverageBoost = boost
			t0 := time.Now()
			for _, g := range golden {
				if _, err := s.Search(ctx, search.Query{Text: g.Query, Mode: search.ModeLexical}); err != nil {
					b.Fatal(err)
				}
			}
			if boost == 0 {
				off += time.Since(t0)
			} else {
				with += time.Since(t0)
			}
		}
	}
	n := float64(b.N * len(golden))
	b.ReportMetric(float64(off.Microseconds())/1000/n, "off-ms/query")
	b.ReportMetric(float64(with.Microseconds())/1000/n, "on-ms/query")
	b.ReportMetric(float64(with)/float64(off), "x-off")
}
