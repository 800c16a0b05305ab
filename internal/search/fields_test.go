package search_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestDescriptionField: a note whose frontmatter description holds the
// query's words ranks above a note with the same words only in its text,
// explain shows the part, and weight 0 turns the field off (the two notes
// then tie: the description's words are also in the first chunk's body).
func TestDescriptionField(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"Desc.md":  "---\ndescription: automatic snapshots\n---\n# D\n\nplain words\n",
		"Plain.md": "# P\n\nautomatic snapshots plain words\n",
		"Hub.md":   "# H\n\nThe [[Plain]] note keeps automatic snapshots.\n",
	}
	for i := 0; i < 20; i++ {
		// Other described and linked notes: BM25 gives a word in half a
		// field's rows no weight.
		files[fmt.Sprintf("f%02d.md", i)] = fmt.Sprintf("---\ndescription: filler %d\n---\n# F%02d\n\nfiller words, see [[f%02d]]\n", i, i, (i+1)%20)
	}
	testutil.WriteFiles(t, root, files)
	ix := indexVault(t, root)
	s := &search.Searcher{DB: ix.DB}
	ctx := context.Background()
	score := func(explain bool) map[string]search.Result {
		t.Helper()
		r, err := s.Search(ctx, search.Query{Text: "automatic snapshots", Mode: search.ModeLexical, Explain: explain})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]search.Result{}
		for _, x := range r.Results {
			out[x.Path] = x
		}
		return out
	}
	oldD, oldA := search.DescriptionWeight, search.AnchorWeight
	defer func() { search.DescriptionWeight, search.AnchorWeight = oldD, oldA }()
	search.AnchorWeight = 0

	search.DescriptionWeight = 0
	got := score(false)
	if got["Desc.md"].Score != got["Plain.md"].Score || got["Desc.md"].Score == 0 {
		t.Fatalf("field off: Desc %v, Plain %v, want equal", got["Desc.md"].Score, got["Plain.md"].Score)
	}
	search.DescriptionWeight = 1
	got = score(false)
	if got["Desc.md"].Score <= got["Plain.md"].Score {
		t.Errorf("field on: Desc %v, Plain %v, want Desc above", got["Desc.md"].Score, got["Plain.md"].Score)
	}

	// Explain splits the lexical score: the description part, and the
	// anchor part (Hub's sentence about Plain).
	search.AnchorWeight = 2
	got = score(true)
	d, p := got["Desc.md"].Explain, got["Plain.md"].Explain
	if d == nil || p == nil {
		t.Fatalf("no explain: %+v", got)
	}
	if d.LexicalDescriptionScore <= 0 || d.LexicalAnchorScore != 0 || d.LexicalDescriptionScore >= d.LexicalScore {
		t.Errorf("Desc explain %+v", *d)
	}
	if p.LexicalAnchorScore <= 0 || p.LexicalDescriptionScore != 0 || p.LexicalAnchorScore >= p.LexicalScore {
		t.Errorf("Plain explain %+v", *p)
	}
}
