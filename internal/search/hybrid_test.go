package search_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

var hybridVault = map[string]string{
	"Recover deleted files.md": "# Recover deleted files\n\nWhen a file is removed by accident, open the snapshot history and restore an earlier version.\n",
	"Keyboard.md":              "# Keyboard shortcuts\n\nAssign hotkeys to commands in the settings.\n",
	"Gardening.md":             "# Gardening\n\nTomatoes need sun and water. See [[Compost]].\n",
	"Compost.md":               "# Compost\n\nKitchen scraps turn into soil for the vegetable beds.\n",
	"Themes.md":                "# Themes\n\nChange colours and fonts with a dark or light theme.\n",
	"Cooking.md":               "# Cooking\n\nSoup, bread and pasta recipes for the week.\n",
}

func TestHybridAndSemantic(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, hybridVault)
	ix := indexVault(t, root)
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	ctx := context.Background()

	// The default mode is hybrid once vectors exist.
	r, err := s.Search(ctx, search.Query{Text: "hotkeys"})
	if err != nil || r.Mode != search.ModeHybrid || len(r.Results) == 0 || r.Results[0].Path != "Keyboard.md" {
		t.Fatalf("hybrid: %+v %v", r, err)
	}
	// A paraphrase with no word in common: only meaning finds it.
	q := "I lost a page by mistake and want it back"
	lex, _ := s.Search(ctx, search.Query{Text: q, Mode: search.ModeLexical})
	if slices.Contains(paths(lex), "Recover deleted files.md") {
		t.Fatalf("lexical should not find the paraphrase: %v", paths(lex))
	}
	sem, err := s.Search(ctx, search.Query{Text: q, Mode: search.ModeSemantic, Explain: true})
	if err != nil || len(sem.Results) == 0 || sem.Results[0].Path != "Recover deleted files.md" {
		t.Fatalf("semantic: %v %v", paths(sem), err)
	}
	top := sem.Results[0]
	if top.Matched != "semantic" || top.Explain == nil || top.Explain.VectorRank != 1 || top.Explain.VectorScore <= 0 || top.Explain.LexicalRank != 0 {
		t.Errorf("semantic top = %+v %+v", top, top.Explain)
	}
	hyb, _ := s.Search(ctx, search.Query{Text: q, Explain: true})
	if len(hyb.Results) == 0 || hyb.Results[0].Path != "Recover deleted files.md" {
		t.Errorf("hybrid paraphrase: %v", paths(hyb))
	}
	// Gibberish finds nothing, in every mode.
	for _, m := range []string{"", search.ModeSemantic, search.ModeHybrid} {
		if r, _ := s.Search(ctx, search.Query{Text: "zzqqxx", Mode: m}); len(r.Results) != 0 {
			t.Errorf("mode %q gibberish: %v", m, paths(r))
		}
	}
	// One result per note, and filters apply to vectors too.
	r, _ = s.Search(ctx, search.Query{Text: "vegetables soil tomatoes", Mode: search.ModeSemantic, PathGlob: "C*.md", Limit: 20})
	seen := map[string]bool{}
	for _, p := range paths(r) {
		if seen[p] || (p != "Compost.md" && p != "Cooking.md") {
			t.Errorf("semantic with glob: %v", paths(r))
		}
		seen[p] = true
	}
	// Exclusions apply to semantic results too.
	r, _ = s.Search(ctx, search.Query{Text: "vegetables soil -compost", Mode: search.ModeSemantic})
	if slices.Contains(paths(r), "Compost.md") {
		t.Errorf("excluded note returned: %v", paths(r))
	}
}

func TestExpandLinks(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, hybridVault)
	ix := indexVault(t, root)
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	ctx := context.Background()
	r, err := s.Search(ctx, search.Query{Text: "tomatoes", Mode: search.ModeLexical, ExpandLinks: true, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	var compost *search.Result
	for i := range r.Results {
		if r.Results[i].Path == "Compost.md" {
			compost = &r.Results[i]
		}
	}
	if len(r.Results) < 2 || r.Results[0].Path != "Gardening.md" || compost == nil {
		t.Fatalf("expand: %v", paths(r))
	}
	if compost.Matched != "link" || compost.Explain.Graph <= 0 || !slices.Equal(compost.Explain.Via, []string{"Gardening.md"}) ||
		compost.Score >= r.Results[0].Score {
		t.Errorf("linked note = %+v %+v", compost, compost.Explain)
	}
	// The seed itself is boosted by the backlink from its neighbour only when linked both ways; here not.
	if r.Results[0].Explain.Graph != 0 {
		t.Errorf("seed graph = %v", r.Results[0].Explain.Graph)
	}
}

func TestModesWithoutVectors(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, hybridVault)
	v, _ := vault.Open(root, nil)
	ix, err := index.Open(context.Background(), v, index.Options{Dir: filepath.Join(t.TempDir(), "idx"), NoEmbed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ix.Sync(context.Background(), index.SyncOptions{})
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	r, err := s.Search(context.Background(), search.Query{Text: "hotkeys"})
	if err != nil || r.Mode != search.ModeLexical || len(r.Results) != 1 {
		t.Fatalf("default without vectors: %+v %v", r, err)
	}
	_, err = s.Search(context.Background(), search.Query{Text: "hotkeys", Mode: search.ModeSemantic})
	if errs.Code(err) != errs.CodeEmbedUnavailable {
		t.Errorf("semantic without vectors: %v", err)
	}
	if _, err := (&search.Searcher{DB: ix.DB}).Search(context.Background(), search.Query{Text: "x", Mode: "hybrid"}); errs.Code(err) != errs.CodeEmbedUnavailable {
		t.Errorf("hybrid without a source: %v", err)
	}
	if _, err := s.Search(context.Background(), search.Query{Text: "x", Mode: "fuzzy"}); errs.Code(err) != errs.CodeInvalidInput {
		t.Errorf("unknown mode: %v", err)
	}
}

func TestEvaluateMetrics(t *testing.T) {
	golden := []search.GoldenQuery{
		{ID: "1", Query: "a", Relevant: []string{"r1.md", "r2.md"}, Partial: []string{"p.md"}, Category: "x"},
		{ID: "2", Query: "b", Relevant: []string{"r3.md"}, Category: "y"},
	}
	results := map[string][]string{"a": {"p.md", "r1.md", "n.md", "r2.md"}, "b": {"n1.md", "n2.md"}}
	rep, err := search.Evaluate(context.Background(), golden, 10, func(_ context.Context, q string) ([]string, error) { return results[q], nil })
	if err != nil {
		t.Fatal(err)
	}
	// Query a: DCG = 0.5/1 + 1/log2(3) + 0 + 1/log2(5); IDCG = 1 + 1/log2(3) + 0.5/2.
	dcg := 0.5 + 1/math.Log2(3) + 1/math.Log2(5)
	idcg := 1 + 1/math.Log2(3) + 0.5/2
	want := math.Round(dcg/idcg/2*1e4) / 1e4
	o := rep.Overall
	if o.Queries != 2 || o.NDCG10 != want || o.MRR != 0.25 || o.Hit1 != 0 || o.Hit3 != 0.5 || o.Recall10 != 0.5 {
		t.Errorf("overall = %+v (want nDCG@10 %v)", o, want)
	}
	if len(rep.Misses) != 1 || rep.Misses[0].ID != "2" || rep.ByCategory["y"].NDCG10 != 0 {
		t.Errorf("misses = %+v", rep.Misses)
	}
	if rep.Queries[0].FirstRelevant != 2 || rep.Queries[0].Retrieved[0] != "~ p.md" {
		t.Errorf("query a = %+v", rep.Queries[0])
	}
	if txt := rep.Text(); !containsAll(txt, "overall", "misses", "nDCG@10") {
		t.Errorf("text = %s", txt)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// TestSemanticQueriesAreNotHeldToTermLimits: the limits on terms and tokens
// bound what FTS5 matches. A semantic query only gets embedded (its bytes
// are bounded), so a long question is accepted; hybrid matches as many of
// its terms as the limits allow, and every exclusion, wherever it stands.
func TestSemanticQueriesAreNotHeldToTermLimits(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, hybridVault)
	ix := indexVault(t, root)
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	ctx := context.Background()
	var filler []string
	for i := 0; i < search.MaxTerms+8; i++ {
		filler = append(filler, fmt.Sprintf("zq%dx", i))
	}
	long := "hotkeys keyboard shortcuts " + strings.Join(filler, " ")
	if _, err := s.Search(ctx, search.Query{Text: long, Mode: search.ModeLexical}); errs.Code(err) != errs.CodeInvalidInput {
		t.Fatalf("lexical: %v, want validation_failed", err)
	}
	sem, err := s.Search(ctx, search.Query{Text: long, Mode: search.ModeSemantic})
	if err != nil {
		t.Fatalf("semantic refused a query of %d terms: %v", search.MaxTerms+11, err)
	}
	if sem.Mode != search.ModeSemantic {
		t.Errorf("semantic mode = %s", sem.Mode)
	}
	hyb, err := s.Search(ctx, search.Query{Text: long, Mode: search.ModeHybrid, Explain: true})
	if err != nil {
		t.Fatalf("hybrid refused a query of %d terms: %v", search.MaxTerms+11, err)
	}
	if len(hyb.Results) == 0 || hyb.Results[0].Path != "Keyboard.md" || hyb.Results[0].Explain.LexicalRank != 1 {
		t.Fatalf("hybrid: the clipped lexical half did not find Keyboard.md first: %v", paths(hyb))
	}
	// An exclusion after more terms than the limits allow still excludes.
	q := "vegetables soil kitchen scraps " + strings.Join(filler, " ") + " -compost"
	for _, mode := range []string{search.ModeSemantic, search.ModeHybrid} {
		r, err := s.Search(ctx, search.Query{Text: q, Mode: mode, Limit: 20})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if slices.Contains(paths(r), "Compost.md") {
			t.Errorf("%s: excluded note returned: %v", mode, paths(r))
		}
	}
	// Too many exclusions are refused in every mode: each one is matched.
	neg := "soil -" + strings.Join(filler, " -")
	for _, mode := range []string{search.ModeSemantic, search.ModeHybrid} {
		if _, err := s.Search(ctx, search.Query{Text: neg, Mode: mode}); errs.Code(err) != errs.CodeInvalidInput {
			t.Errorf("%s with %d exclusions: %v, want validation_failed", mode, len(filler), err)
		}
	}
	// Over the byte limit, every mode refuses.
	if _, err := s.Search(ctx, search.Query{Text: strings.Repeat("soil ", search.MaxQueryBytes), Mode: search.ModeSemantic}); errs.Code(err) != errs.CodeInvalidInput {
		t.Errorf("semantic over the byte limit: %v", err)
	}
}
