package search

import (
	"context"
	"encoding/json"
	"path"
	"strings"

	"github.com/loci-dev/loci/internal/textseg"
)

// CoverageBoost scales a note's lexical score by 1 + CoverageBoost × the
// share of the query's distinct terms (stop words and -exclusions left
// out) that its title, an alias or a segment of its path contains: a note
// named after the query outranks one that only mentions its words. BM25
// scores have no fixed scale, so the boost is a factor, not a sum. 0 turns
// it off.
var CoverageBoost = 0.25

// coverageTerms returns the words of terms the title coverage counts: one
// group per term (a phrase covers only when all its words do).
func coverageTerms(terms []term) [][]string {
	var out [][]string
	for _, t := range terms {
		if t.neg || isStop(t) {
			continue
		}
		var g []string
		for _, w := range t.words {
			g = append(g, textseg.Fold(w.Text))
		}
		out = append(out, g)
	}
	return out
}

// titleWords folds the words of a note's title, aliases and path segments
// (the file name without .md, and its folders).
func titleWords(title, aliasesJSON, p string) []string {
	parts := []string{title, strings.TrimSuffix(p, path.Ext(p))}
	var aliases []string
	if aliasesJSON != "" && json.Unmarshal([]byte(aliasesJSON), &aliases) == nil {
		parts = append(parts, aliases...)
	}
	var out []string
	for _, s := range parts {
		for _, w := range textseg.Words(s) {
			out = append(out, textseg.Fold(w.Text))
		}
	}
	return out
}

// covers reports whether the folded title words hold the folded query word
// q (stem-tolerant, as highlighting; a word of an unspaced script is
// matched as a substring).
func covers(words []string, q string) bool {
	return newCoverageWords(words).covers(newCoverageWord(q))
}

// coverageWord is a folded query word with what covers compares of it,
// computed once per query.
type coverageWord struct {
	text, stem string
	segmented  bool
}

func newCoverageWord(q string) coverageWord {
	return coverageWord{text: q, stem: lightStem(q), segmented: textseg.HasSegmented(q)}
}

// coverageWords are a note's folded title words and their stems, computed
// once per note (not once per query word).
type coverageWords struct{ words, stems []string }

func newCoverageWords(words []string) coverageWords {
	stems := make([]string, len(words))
	for i, w := range words {
		stems[i] = lightStem(w)
	}
	return coverageWords{words, stems}
}

func (c coverageWords) covers(q coverageWord) bool {
	for i, w := range c.words {
		if matchWord(w, q.text) || c.stems[i] == q.stem || (q.segmented && strings.Contains(w, q.text)) {
			return true
		}
	}
	return false
}

// coverageGroups prepares the query's groups of words for coverageOf.
func coverageGroups(groups [][]string) [][]coverageWord {
	out := make([][]coverageWord, len(groups))
	for i, g := range groups {
		for _, q := range g {
			out[i] = append(out[i], newCoverageWord(q))
		}
	}
	return out
}

// coverageOf returns the share of groups the title words cover.
func coverageOf(words coverageWords, groups [][]coverageWord) float64 {
	if len(groups) == 0 {
		return 0
	}
	n := 0
	for _, g := range groups {
		all := true
		for _, q := range g {
			if !words.covers(q) {
				all = false
				break
			}
		}
		if all {
			n++
		}
	}
	return float64(n) / float64(len(groups))
}

// boostCoverage scales each hit's score (negative BM25: lower is better)
// by 1 + CoverageBoost × its title coverage of terms. It reads the title,
// aliases and path of the hits' notes in one query (titleWordsOf: kept
// per content revision when the searcher has a Shared). It leaves the
// order to the caller.
func (s *Searcher) boostCoverage(ctx context.Context, cs *callState, terms []term, hits []hit) error {
	groups := coverageTerms(terms)
	if CoverageBoost <= 0 || len(groups) == 0 || len(hits) == 0 {
		return nil
	}
	prepared := coverageGroups(groups)
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.note
	}
	words, err := s.titleWordsOf(ctx, cs.rev, cs.cached, ids)
	if err != nil {
		return err
	}
	cov := make(map[int64]float64, len(hits))
	for i := range hits {
		c, ok := cov[hits[i].note]
		if !ok {
			if w, found := words[hits[i].note]; found {
				c = coverageOf(w, prepared)
			}
			cov[hits[i].note] = c
		}
		hits[i].score *= 1 + CoverageBoost*c
	}
	return nil
}

// lightStem strips the commonest English inflections ("embedding" and
// "embed", "images" and "image" meet), so a title word and a query word
// of different forms match where matchWord's prefix rule misses (a
// shorter title word).
func lightStem(w string) string {
	// keep: the shortest stem each suffix may leave. "ed", "es" and a
	// final "e" need four letters, so "embed", "need" and "uses" are not
	// cut to "emb", "ne" and "us"; a final "s" after "s" is no plural
	// ("class").
	for _, r := range []struct {
		suf  string
		keep int
	}{{"ings", 3}, {"ing", 3}, {"ies", 3}, {"es", 4}, {"ed", 4}, {"s", 3}, {"e", 4}} {
		if len(w) >= len(r.suf)+r.keep && strings.HasSuffix(w, r.suf) {
			if r.suf == "s" && strings.HasSuffix(w, "ss") {
				break
			}
			w = w[:len(w)-len(r.suf)]
			if r.suf == "ies" {
				w += "y"
			}
			break
		}
	}
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		w = w[:n-1] // embedd → embed
	}
	return w
}
