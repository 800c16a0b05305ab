package search

import (
	"context"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

func TestExpandSynonyms(t *testing.T) {
	root := t.TempDir()
	aliases := ""
	for _, a := range []string{"MOC", "How to/Old place", "index note", "hub", "a b c d e f g h i", "hub note", "start", "overview"} {
		aliases += "  - " + a + "\n"
	}
	testutil.WriteFiles(t, root, map[string]string{
		"Maps of content.md": "---\naliases:\n" + aliases + "---\n# Maps of content\n",
		"Other.md":           "---\naliases: [moc]\n---\n# Other name\n",
	})
	v, err := vault.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(context.Background(), v, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	s := &Searcher{DB: ix.DB}
	old := SynonymMax
	defer func() { SynonymMax = old }()
	expand := func(q string) string {
		t.Helper()
		terms, err := s.expandSynonyms(context.Background(), parseQuery(q))
		if err != nil {
			t.Fatal(err)
		}
		strict, _ := buildMatch(terms)
		return strict
	}
	SynonymMax = 4
	for _, c := range []struct{ q, want string }{
		// An alias gets the titles of the notes it names (both).
		{"MOC tips", `(("MOC" OR "Maps of content" OR "Other name") AND "tips")`},
		// A title gets its aliases, at most SynonymMax, never a path-like
		// one, nor one longer than synonymMaxWords.
		{"maps of content", `((("maps" AND "of" AND "content") OR "MOC" OR "index note" OR "hub" OR "hub note"))`},
		// Prefixes and exclusions are never expanded.
		{"moc* -hub", `("moc"*) NOT ("hub")`},
		{"nothing here", `("nothing" AND "here")`},
	} {
		if got := expand(c.q); got != c.want {
			t.Errorf("%q: %s\nwant %s", c.q, got, c.want)
		}
	}
	SynonymMax = 1
	if got := expand("maps of content"); got != `((("maps" AND "of" AND "content") OR "MOC"))` {
		t.Errorf("SynonymMax 1: %s", got)
	}
	SynonymMax = 0
	if got := expand("MOC"); got != `("MOC")` {
		t.Errorf("off: %s", got)
	}
	// The whole query is bounded: many synonym runs stop at synonymMaxTotal.
	SynonymMax = 4
	if got := expand(strings.Repeat("maps of content moc ", 8)); strings.Count(got, " OR ") > synonymMaxTotal {
		t.Errorf("unbounded: %d alternatives in %s", strings.Count(got, " OR "), got)
	}
}
