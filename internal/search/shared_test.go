package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// sharedQueries exercise every query the searcher prepares through a
// Shared: strict and relaxed passes, common-term pruning, exclusions,
// phrases, prefixes, note fields, group_by section, filters, paging.
func sharedQueries() []search.Query {
	var out []search.Query
	for _, text := range []string{"project", "project alpha", "meeting notes", "alpha -beta", `"daily note"`, "proj*", "zzznomatch", "the", "roadmap quarterly planning"} {
		for _, mode := range []string{search.ModeLexical, search.ModeHybrid} {
			out = append(out,
				search.Query{Text: text, Mode: mode},
				search.Query{Text: text, Mode: mode, GroupBy: search.GroupSection},
				search.Query{Text: text, Mode: mode, Limit: 2, Offset: 1},
				search.Query{Text: text, Mode: mode, Explain: true, ExpandLinks: true},
				search.Query{Text: text, Mode: mode, Tags: []string{"project"}})
		}
	}
	return out
}

func mustSearch(t *testing.T, s *search.Searcher, q search.Query) *search.Response {
	t.Helper()
	r, err := s.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	return r
}

func sameResponse(t *testing.T, what string, q search.Query, got, want *search.Response) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s, query %+v:\n got  %s\n want %s", what, q, g, w)
	}
}

// TestSharedSameResults: a searcher with a Shared (prepared statements,
// title words kept) answers every query exactly as one without, on the
// first call (statements prepared, titles read) and on the second (both
// reused), and a Shared made for another DB is not used.
func TestSharedSameResults(t *testing.T) {
	ix := indexVault(t, testutil.DemoVault())
	other := indexVault(t, testutil.DemoVault())
	sh := search.NewShared(ix.DB)
	defer sh.Close()
	plain := &search.Searcher{DB: ix.DB, Vectors: ix}
	shared := &search.Searcher{DB: ix.DB, Vectors: ix, Shared: sh}
	foreign := &search.Searcher{DB: other.DB, Vectors: other, Shared: sh}
	n := 0
	for round := range 2 {
		for _, q := range sharedQueries() {
			want := mustSearch(t, plain, q)
			n += len(want.Results)
			sameResponse(t, fmt.Sprintf("round %d", round), q, mustSearch(t, shared, q), want)
			sameResponse(t, "a Shared of another DB", q, mustSearch(t, foreign, q), mustSearch(t, &search.Searcher{DB: other.DB, Vectors: other}, q))
		}
	}
	if n == 0 {
		t.Fatal("no query found anything: the comparison proves nothing")
	}
}

// TestSharedSeesEdits: title words are kept per content revision, so an
// edit that changes a note's aliases (same note, same path) changes its
// title coverage at once for a searcher that kept the old words.
func TestSharedSeesEdits(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Spring chores.md", "# Spring chores\n\nPruning roses, then roses and more pruning.\n")
	write("Garden log.md", "# Garden log\n\nPruning roses today. Roses again.\n")
	for i := range 6 {
		write(fmt.Sprintf("Filler %d.md", i), fmt.Sprintf("# Filler %d\n\nWatering tomatoes, week %d.\n", i, i))
	}
	ix := indexVault(t, dir)
	sh := search.NewShared(ix.DB)
	defer sh.Close()
	shared := &search.Searcher{DB: ix.DB, Shared: sh}
	q := search.Query{Text: "pruning roses", Mode: search.ModeLexical, Explain: true}
	score := func(r *search.Response, p string) float64 {
		for _, x := range r.Results {
			if x.Path == p {
				return x.Score
			}
		}
		t.Fatalf("%s not found: %v", p, paths(r))
		return 0
	}
	before := mustSearch(t, shared, q) // the words of both notes are now kept
	sameResponse(t, "before the edit", q, before, mustSearch(t, &search.Searcher{DB: ix.DB}, q))

	// The alias puts the query's words in Garden log's title words; its
	// BM25 changes too (aliases are in the title column), but only the
	// coverage factor differs between a stale and a fresh cache.
	write("Garden log.md", "---\naliases: [Rose pruning]\n---\n# Garden log\n\nPruning roses today. Roses again.\n")
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	after := mustSearch(t, shared, q)
	sameResponse(t, "after the edit", q, after, mustSearch(t, &search.Searcher{DB: ix.DB}, q))
	if score(after, "Garden log.md") == score(before, "Garden log.md") {
		t.Fatal("the edit did not change Garden log's score: the test proves nothing")
	}
	old := search.CoverageBoost
	search.CoverageBoost = 0
	noBoost := mustSearch(t, &search.Searcher{DB: ix.DB}, q)
	search.CoverageBoost = old
	if got, base := score(after, "Garden log.md"), score(noBoost, "Garden log.md"); got <= base*1.2 {
		t.Errorf("after the edit Garden log scores %v, its BM25 alone %v: the alias's coverage (×1.25) is missing", got, base)
	}
}

// TestSharedConcurrent: searches sharing one Shared from many goroutines
// (run with -race) get what a lone searcher without one gets.
func TestSharedConcurrent(t *testing.T) {
	ix := indexVault(t, testutil.DemoVault())
	sh := search.NewShared(ix.DB)
	defer sh.Close()
	qs := sharedQueries()
	want := make([]*search.Response, len(qs))
	for i, q := range qs {
		want[i] = mustSearch(t, &search.Searcher{DB: ix.DB, Vectors: ix}, q)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range qs {
				i := (k + g*7) % len(qs)
				r, err := (&search.Searcher{DB: ix.DB, Vectors: ix, Shared: sh}).Search(context.Background(), qs[i])
				if err != nil {
					t.Errorf("%+v: %v", qs[i], err)
					return
				}
				if !reflect.DeepEqual(r, want[i]) {
					t.Errorf("goroutine %d, query %+v: differs from the lone searcher's", g, qs[i])
				}
			}
		}()
	}
	wg.Wait()
}
