package search_test

import (
	"fmt"
	"testing"

	"github.com/loci-dev/loci/internal/search"
)

func page(path string) *search.Response {
	return &search.Response{Mode: search.ModeLexical, Results: []search.Result{{Path: path, HeadingPath: []string{"H"},
		Explain: &search.Explain{Via: []string{"v.md"}}}}}
}

// TestResultCacheLRU: the cache holds at most its bound, evicting the
// least recently used entry (a Get refreshes one), and counts hits and misses.
func TestResultCacheLRU(t *testing.T) {
	c := search.NewResultCache(2, 0)
	c.Put("a", page("a.md"))
	c.Put("b", page("b.md"))
	if r, ok := c.Get("a"); !ok || r.Results[0].Path != "a.md" { // a is now the most recent
		t.Fatalf("get a = %v, %v", r, ok)
	}
	c.Put("c", page("c.md")) // evicts b
	if _, ok := c.Get("b"); ok {
		t.Fatal("b survived past the bound")
	}
	for _, k := range []string{"a", "c"} {
		if r, ok := c.Get(k); !ok || r.Results[0].Path != k+".md" {
			t.Fatalf("get %s = %v, %v", k, r, ok)
		}
	}
	if c.Len() != 2 {
		t.Fatalf("len %d", c.Len())
	}
	c.Put("c", page("c2.md")) // replaces, no growth
	if r, _ := c.Get("c"); c.Len() != 2 || r.Results[0].Path != "c2.md" {
		t.Fatalf("replace: len %d, %v", c.Len(), r)
	}
	if h, m := c.Stats(); h != 4 || m != 1 {
		t.Fatalf("stats %d hits, %d misses", h, m)
	}
	c.Reset()
	if _, ok := c.Get("a"); ok || c.Len() != 0 {
		t.Fatal("reset kept entries")
	}
}

// TestResultCacheCopies: neither the response put nor one got can change
// what the cache hands out next.
func TestResultCacheCopies(t *testing.T) {
	c := search.NewResultCache(4, 0)
	r := page("a.md")
	c.Put("k", r)
	r.Results[0].Path, r.Results[0].HeadingPath[0], r.Results[0].Explain.Via[0] = "x", "x", "x"
	got, _ := c.Get("k")
	got.Results[0].Snippet, got.Results[0].HeadingPath[0], got.Results[0].Explain.Via[0] = "x", "x", "x"
	got.Results = append(got.Results, search.Result{Path: "y"})
	again, _ := c.Get("k")
	x := again.Results[0]
	if len(again.Results) != 1 || x.Path != "a.md" || x.Snippet != "" || x.HeadingPath[0] != "H" || x.Explain.Via[0] != "v.md" {
		t.Fatalf("cached entry changed: %+v %+v", x, x.Explain)
	}
}

// TestQueryKey: queries that differ in any option have different keys;
// the same query (its frontmatter map in any order) has one.
func TestQueryKey(t *testing.T) {
	base := search.Query{Text: "zebra"}
	variants := []search.Query{
		base,
		{Text: "zebra "},
		{Text: "zebra", Limit: 5},
		{Text: "zebra", Offset: 10},
		{Text: "zebra", PathGlob: "a/**"},
		{Text: "zebra", Tags: []string{"a"}},
		{Text: "zebra", Tags: []string{"a", "b"}},
		{Text: "zebra", Tags: []string{"ab"}},
		{Text: "zebra", Frontmatter: map[string]string{"a": "b"}},
		{Text: "zebra", Frontmatter: map[string]string{"ab": ""}},
		{Text: "zebra", CreatedFrom: "2024"},
		{Text: "zebra", CreatedTo: "2024"},
		{Text: "zebra", UpdatedFrom: "2024"},
		{Text: "zebra", UpdatedTo: "2024"},
		{Text: "zebra", Mode: search.ModeHybrid},
		{Text: "zebra", ExpandLinks: true},
		{Text: "zebra", Explain: true},
		{Text: "zebra", Sort: "title"},
		{Text: "zebra", Order: "asc"},
		{Text: "zebra", GroupBy: search.GroupSection},
		{Text: "zebra", Fusion: &search.Fusion{}},
		{Text: "zebra", Fusion: &search.Fusion{K: 30}},
		{Text: "zebra", Fusion: &search.Fusion{LexicalMargin: 0.5}},
	}
	seen := map[string]int{}
	for i, q := range variants {
		k := q.Key()
		if j, ok := seen[k]; ok {
			t.Errorf("variants %d and %d share a key: %+v, %+v", j, i, variants[j], q)
		}
		seen[k] = i
	}
	fm := map[string]string{}
	fm2 := map[string]string{}
	for i := range 20 {
		fm[fmt.Sprint(i)] = "v"
		fm2[fmt.Sprint(19-i)] = "v"
	}
	if (search.Query{Frontmatter: fm}).Key() != (search.Query{Frontmatter: fm2}).Key() {
		t.Error("the same frontmatter filter has two keys")
	}
}

// TestResultCacheBytes: the entries' estimated size stays within the
// byte bound (oldest out first), and a response larger than the bound
// alone is not kept.
func TestResultCacheBytes(t *testing.T) {
	big := func(n int) *search.Response {
		r := &search.Response{}
		for range n {
			r.Results = append(r.Results, search.Result{Path: "p.md", Snippet: string(make([]byte, 800))})
		}
		return r
	}
	c := search.NewResultCache(100, 9_000) // an entry of 5 results: ~4.9 KB
	c.Put("a", big(5))
	c.Put("b", big(5)) // ~9.8 KB with a: a goes
	if _, ok := c.Get("a"); ok || c.Len() != 1 {
		t.Fatalf("byte bound not kept: len %d", c.Len())
	}
	if _, ok := c.Get("b"); !ok {
		t.Fatal("b evicted")
	}
	c.Put("huge", big(20))
	if _, ok := c.Get("huge"); ok {
		t.Fatal("a response past the bound was kept")
	}
	if _, ok := c.Get("b"); !ok || c.Len() != 1 {
		t.Fatal("storing a too-large response evicted others")
	}
	c.Put("b", big(1)) // replacing frees the old size
	c.Put("c", big(5))
	if c.Len() != 2 {
		t.Fatalf("after replacing b by a small page: len %d, want 2", c.Len())
	}
}
