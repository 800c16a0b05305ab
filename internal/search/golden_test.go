package search_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

const noiseMode = "hybrid+noise"

// checkNoise fails if hybrid with random query vectors falls below lexical
// by more than the noise of a golden set: the fusion guard's promise.
func checkNoise(t *testing.T, reps map[string]*search.Report) {
	t.Helper()
	if l, n := reps[search.ModeLexical].Overall.NDCG10, reps[noiseMode].Overall.NDCG10; n < l-0.01 {
		t.Errorf("hybrid with random query vectors: nDCG@10 %.3f, lexical %.3f", n, l)
	}
}

// evalModes indexes a vault (with built-in embeddings) and runs a golden
// set in each mode.
func evalModes(t *testing.T, root, golden string) map[string]*search.Report {
	t.Helper()
	gs, err := search.LoadGolden(golden)
	if err != nil {
		t.Fatal(err)
	}
	ix := indexVault(t, root)
	out := map[string]*search.Report{}
	// noiseMode is hybrid with random query vectors (search.NoisyVectors).
	for _, mode := range []string{search.ModeLexical, search.ModeSemantic, search.ModeHybrid, noiseMode} {
		s := &search.Searcher{DB: ix.DB, Vectors: ix}
		m := mode
		if mode == noiseMode {
			s.Vectors, m = search.NoisyVectors{VectorSource: ix}, search.ModeHybrid
		}
		rep, err := search.Evaluate(context.Background(), gs, 10, func(ctx context.Context, q string) ([]string, error) {
			r, err := s.Search(ctx, search.Query{Text: q, Limit: 10, Mode: m})
			if err != nil {
				return nil, err
			}
			return paths(r), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		out[mode] = rep
		t.Logf("%-8s nDCG@10 %.3f MRR %.3f Hit@1 %.3f Recall@10 %.3f", mode, rep.Overall.NDCG10, rep.Overall.MRR, rep.Overall.Hit1, rep.Overall.Recall10)
	}
	return out
}

// TestGoldenObsidianHelp keeps the committed golden set honest: hybrid must
// beat lexical overall and on paraphrases, and not fall below it with
// random query vectors.
func TestGoldenObsidianHelp(t *testing.T) {
	root := testutil.Corpus(t, "obsidian-help/en")
	reps := evalModes(t, root, filepath.Join(testutil.RepoRoot(), "testdata", "golden", "obsidian-help-en.json"))
	lex, hyb := reps[search.ModeLexical], reps[search.ModeHybrid]
	if hyb.Overall.NDCG10 <= lex.Overall.NDCG10 || hyb.Overall.NDCG10 < 0.6 {
		t.Errorf("hybrid nDCG@10 %.3f vs lexical %.3f", hyb.Overall.NDCG10, lex.Overall.NDCG10)
	}
	if hyb.ByCategory["paraphrase"].NDCG10 <= lex.ByCategory["paraphrase"].NDCG10 {
		t.Errorf("paraphrases: hybrid %.3f vs lexical %.3f", hyb.ByCategory["paraphrase"].NDCG10, lex.ByCategory["paraphrase"].NDCG10)
	}
	checkNoise(t, reps)
	anchor := evalModes(t, root, filepath.Join(testutil.RepoRoot(), "testdata", "golden", "obsidian-help-en-anchor.json"))
	if l, h := anchor[search.ModeLexical].Overall.NDCG10, anchor[search.ModeHybrid].Overall.NDCG10; h < l {
		t.Errorf("anchor set: hybrid nDCG@10 %.3f below lexical %.3f", h, l)
	}
	checkNoise(t, anchor)
}

// TestGoldenDBpedia is the proof: on dbpedia-entity-5k hybrid
// (built-in embeddings) beats lexical on nDCG@10.
func TestGoldenDBpedia(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes 5,000 notes")
	}
	dir := testutil.Corpus(t, "eval/dbpedia-entity-5k")
	reps := evalModes(t, filepath.Join(dir, "vault"), filepath.Join(dir, "golden.json"))
	if l, h := reps[search.ModeLexical].Overall.NDCG10, reps[search.ModeHybrid].Overall.NDCG10; h <= l {
		t.Errorf("hybrid nDCG@10 %.3f does not beat lexical %.3f", h, l)
	}
	checkNoise(t, reps)
}

// TestGoldenFields: on the queries written from the notes' descriptions,
// the description field lifts lexical nDCG@10 (0.805 without it, 0.905
// with it when measured).
func TestGoldenFields(t *testing.T) {
	root := testutil.Corpus(t, "obsidian-help/en")
	gs, err := search.LoadGolden(filepath.Join(testutil.RepoRoot(), "testdata", "golden", "obsidian-help-en-fields.json"))
	if err != nil {
		t.Fatal(err)
	}
	ix := indexVault(t, root)
	s := &search.Searcher{DB: ix.DB}
	old := search.DescriptionWeight
	defer func() { search.DescriptionWeight = old }()
	ndcg := map[float64]float64{}
	for _, w := range []float64{0, old} {
		search.DescriptionWeight = w
		rep, err := search.Evaluate(context.Background(), gs, 10, func(ctx context.Context, q string) ([]string, error) {
			r, err := s.Search(ctx, search.Query{Text: q, Limit: 10, Mode: search.ModeLexical})
			if err != nil {
				return nil, err
			}
			return paths(r), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		ndcg[w] = rep.Overall.NDCG10
	}
	t.Logf("lexical nDCG@10: description field off %.3f, on %.3f", ndcg[0], ndcg[old])
	if ndcg[old] < ndcg[0]+0.05 {
		t.Errorf("description field: nDCG@10 %.3f, without it %.3f", ndcg[old], ndcg[0])
	}
}
