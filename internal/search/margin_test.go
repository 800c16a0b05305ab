package search_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// steeredVectors embeds every query as another text, so the vector side
// ranks what the test wants first.
type steeredVectors struct {
	search.VectorSource
	as string
}

func (s steeredVectors) EmbedQuery(ctx context.Context, _ string) ([]float32, error) {
	return s.VectorSource.EmbedQuery(ctx, s.as)
}

// TestLexicalMargin: a note that wins the lexical ranking by a wide BM25
// margin keeps rank 1 in hybrid mode against a vector side that prefers
// the runner-up; without the margin term (ranks alone) it is overtaken.
// Among lexical hits of near-equal scores the vectors still decide.
func TestLexicalMargin(t *testing.T) {
	files := map[string]string{
		"Compost.md": "# Compost\n\nCompost is decomposed organic matter. A compost heap turns kitchen scraps into compost; turn the compost weekly.\n",
		"Garden.md":  "# Garden\n\nTomato, basil and pepper grow in raised beds with a little compost.\n",
	}
	for i := 0; i < 6; i++ {
		files[fmt.Sprintf("Salad %d.md", i)] = fmt.Sprintf("# Salad %d\n\nA salad of tomato, basil, pepper and cheese; the peelings go to compost.\n", i)
	}
	root := t.TempDir()
	testutil.WriteFiles(t, root, files)
	ix := indexVault(t, root)
	ctx := context.Background()
	v := steeredVectors{VectorSource: ix, as: "tomato basil pepper raised beds garden"}
	run := func(margin float64, query string) []string {
		s := &search.Searcher{DB: ix.DB, Vectors: v, Fusion: search.Fusion{AgreementFloor: -1, LexicalMargin: margin}}
		r, err := s.Search(ctx, search.Query{Text: query, Mode: search.ModeHybrid, Limit: 10, Explain: true})
		if err != nil || len(r.Results) < 3 {
			t.Fatalf("%q: %v, %v", query, paths(r), err)
		}
		return paths(r)
	}
	if got := run(0, "compost"); got[0] != "Compost.md" {
		t.Errorf("with the margin term: %v, want Compost.md first", got)
	}
	if got := run(-1, "compost"); got[0] == "Compost.md" {
		t.Errorf("ranks alone: %v; the test vault no longer makes the vectors overtake the lexical winner", got)
	}
	// "tomato": Garden and the salads match with close scores; the
	// vectors (steered to Garden) put Garden first either way.
	for _, m := range []float64{0, -1} {
		if got := run(m, "tomato"); got[0] != "Garden.md" {
			t.Errorf("margin %v, tomato: %v, want Garden.md first", m, got)
		}
	}
}
