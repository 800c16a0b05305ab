package search_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// guardPool is the words guardVault draws its notes from.
var guardPool = strings.Fields(`garden tomato soil compost seed water harvest keyboard shortcut command
menu theme colour font style icon phone laptop backup version history recipe bread soup pasta oven
flour kitchen dinner river mountain forest ocean island desert valley city village castle bridge
tower museum library school teacher student lesson exam science physics chemistry biology planet
star galaxy rocket engine motor train plane ship harbour bicycle wheel road traffic doctor hospital
medicine patient nurse fever music piano guitar violin song concert dance painting camera photo
film movie theatre actor novel poem author story letter market price money bank coin trade football
tennis match player coach team winter summer autumn spring snow rain storm cloud wind horse dog cat
bird fish insect flower tree leaf apple orange lemon cheese butter milk coffee tea sugar salt pepper`)

// guardVault is 80 notes of 12 words each drawn from guardPool, and 80
// two-word queries taken from the notes: lexical search finds the notes
// holding either word with close BM25 scores, the setting where a vector
// side can reorder the lexical ranking most.
func guardVault(t *testing.T) (map[string]string, [][2]string) {
	rng := rand.New(rand.NewSource(7))
	files := map[string]string{}
	var queries [][2]string
	for i := 0; i < 80; i++ {
		var words []string
		for j := 0; j < 12; j++ {
			words = append(words, guardPool[rng.Intn(len(guardPool))])
		}
		files[fmt.Sprintf("n%02d.md", i)] = fmt.Sprintf("# Note %d\n\n%s.\n", i, strings.Join(words, " "))
		if words[0] != words[1] {
			queries = append(queries, [2]string{words[0], words[1]})
		}
	}
	return files, queries
}

// TestFusionGuardAgainstNoise: with query vectors that carry nothing (a
// seeded random direction, search.NoisyVectors), hybrid keeps the lexical
// ranking's first hit in its top 3 for every query and at rank 1 for
// nearly every one; without the guard the same vectors move it often.
func TestFusionGuardAgainstNoise(t *testing.T) {
	files, queries := guardVault(t)
	root := t.TempDir()
	testutil.WriteFiles(t, root, files)
	ix := indexVault(t, root)
	ctx := context.Background()
	noisy := search.NoisyVectors{VectorSource: ix}
	run := func(f search.Fusion) (moved, out3 int) {
		s := &search.Searcher{DB: ix.DB, Vectors: noisy, Fusion: f}
		for _, q := range queries {
			text := q[0] + " " + q[1]
			lex, err := s.Search(ctx, search.Query{Text: text, Mode: search.ModeLexical, Limit: 10})
			if err != nil || len(lex.Results) < 5 {
				t.Fatalf("lexical %q: %v, %v", text, paths(lex), err)
			}
			hyb, err := s.Search(ctx, search.Query{Text: text, Mode: search.ModeHybrid, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			top := lex.Results[0].Path
			if hyb.Results[0].Path != top {
				moved++
			}
			if i := slices.Index(paths(hyb), top); i < 0 || i > 2 {
				out3++
			}
		}
		return
	}
	// No similarity floor, so that every note enters the vector ranking
	// and the noise has its full say.
	moved, out3 := run(search.Fusion{MinSimilarity: -1})
	// The guard is a test at about two standard deviations: noise passes
	// it for a few queries in a hundred, no more.
	if out3 > len(queries)/20 || moved > len(queries)/10 {
		t.Errorf("guarded: lexical top hit moved in %d of %d queries, out of the top 3 in %d", moved, len(queries), out3)
	}
	// The same noise without the guard: the test can tell.
	movedOff, out3Off := run(search.Fusion{MinSimilarity: -1, AgreementFloor: -1})
	if movedOff < 4*max(moved, 1) || out3Off <= out3 {
		t.Errorf("unguarded noise moved the top hit in only %d of %d queries (guarded %d)", movedOff, len(queries), moved)
	}
	t.Logf("of %d queries, top hit moved: guarded %d, unguarded %d; out of the top 3: guarded %d, unguarded %d", len(queries), moved, movedOff, out3, out3Off)
}

// TestFusionGuardWeights: the guard leaves the built-in vectors a weight
// on most queries of the same vault, and noise none on nearly every one.
func TestFusionGuardWeights(t *testing.T) {
	files, queries := guardVault(t)
	root := t.TempDir()
	testutil.WriteFiles(t, root, files)
	ix := indexVault(t, root)
	ctx := context.Background()
	weights := func(v search.VectorSource, group string) (some, zero int) {
		s := &search.Searcher{DB: ix.DB, Vectors: v}
		for _, q := range queries {
			r, err := s.Search(ctx, search.Query{Text: q[0] + " " + q[1], Mode: search.ModeHybrid, Explain: true, GroupBy: group})
			if err != nil || len(r.Results) == 0 || r.Results[0].Explain.SemanticWeight == nil {
				t.Fatalf("%q: %v", q, err)
			}
			if *r.Results[0].Explain.SemanticWeight > 0 {
				some++
			} else {
				zero++
			}
		}
		return
	}
	for _, group := range []string{search.GroupNote, search.GroupSection} {
		some, _ := weights(ix, group)
		_, zero := weights(search.NoisyVectors{VectorSource: ix}, group)
		if some < len(queries)*3/4 || zero < len(queries)*9/10 {
			t.Errorf("group_by %s, of %d queries: real vectors with weight %d, noise without %d", group, len(queries), some, zero)
		}
		t.Logf("group_by %s, of %d queries: real vectors with weight %d, noise without %d", group, len(queries), some, zero)
	}
	// Lexical and semantic modes carry no such weight.
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	for _, m := range []string{search.ModeLexical, search.ModeSemantic} {
		r, _ := s.Search(ctx, search.Query{Text: "tomato soil", Mode: m, Explain: true})
		if len(r.Results) == 0 || r.Results[0].Explain.SemanticWeight != nil {
			t.Errorf("mode %s: %+v", m, r.Results)
		}
	}
}
