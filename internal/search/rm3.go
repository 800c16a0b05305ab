package search

import (
	"context"
	"math"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/textseg"
)

// RM3 pseudo-relevance feedback (Lavrenko and Croft's relevance model,
// interpolated with the query): the top RM3Docs notes of the first lexical
// pass are taken as relevant, their words weighted by
// Σ_d P(w|d)·P(d|q) × idf(w), and the RM3Terms best (stop words, query
// words and words in more than a tenth of the sections left out) are run
// as a second FTS5 query (any of them). A note's final score is
// RM3Lambda × its first-pass score + (1 − RM3Lambda) × its feedback
// score, each divided by its list's best; notes found only by the
// feedback query join after the first pass's strict hits.
var (
	RM3Docs   = 0 // 0 turns feedback off
	RM3Terms  = 10
	RM3Lambda = 0.6
)

const (
	rm3Depth      = 50       // first-pass notes re-ranked
	rm3DocBytes   = 32 << 10 // text read per feedback note
	rm3Candidates = 40       // words whose document frequency is counted
)

// rm3 re-ranks hits (the first pass, best first) with the feedback query.
func (s *Searcher) rm3(ctx context.Context, terms []term, hits []hit, keep func(int64) bool) ([]hit, error) {
	k := min(RM3Docs, len(hits))
	if k == 0 || RM3Terms <= 0 {
		return hits, nil
	}
	exp, err := s.rm3Terms(ctx, terms, hits[:k])
	if err != nil || len(exp) == 0 {
		return hits, err
	}
	var or []string
	for _, w := range exp {
		or = append(or, ftsTerm(term{words: []textseg.Word{{Text: w}}}))
	}
	expr := "(" + strings.Join(or, " OR ") + ")"
	var neg []string
	for _, t := range terms {
		if t.neg {
			neg = append(neg, ftsTerm(t))
		}
	}
	if len(neg) > 0 {
		expr += " NOT (" + strings.Join(neg, " OR ") + ")"
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT c.note_id, f.rowid, f.s FROM (SELECT rowid, `+bm25Args+` AS s FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?) f
		JOIN chunks c ON c.id = f.rowid ORDER BY f.s`, expr, 8*rm3Depth)
	if err != nil {
		return hits, err
	}
	type fb struct {
		chunk int64
		score float64
	}
	fbs := map[int64]fb{}
	var order []int64
	for rows.Next() {
		var n, c int64
		var sc float64
		if err := rows.Scan(&n, &c, &sc); err != nil {
			rows.Close()
			return hits, err
		}
		if _, ok := fbs[n]; ok || (keep != nil && !keep(n)) {
			continue
		}
		fbs[n] = fb{c, sc}
		order = append(order, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(order) == 0 {
		return hits, err
	}
	top, fbTop := hits[0].score, fbs[order[0]].score
	if top >= 0 || fbTop >= 0 {
		return hits, nil
	}
	in := make(map[int64]bool, len(hits))
	for i := range hits {
		h := &hits[i]
		in[h.note] = true
		f := 0.0
		if x, ok := fbs[h.note]; ok {
			f = x.score / fbTop
		}
		h.score = top * (RM3Lambda*h.score/top + (1-RM3Lambda)*f)
	}
	for _, n := range order {
		if !in[n] {
			x := fbs[n]
			hits = append(hits, hit{note: n, chunk: x.chunk, matched: "any", score: top * (1 - RM3Lambda) * x.score / fbTop})
		}
	}
	// The strict pass's notes stay first.
	sort.SliceStable(hits, func(i, j int) bool {
		si, sj := hits[i].matched == "all", hits[j].matched == "all"
		if si != sj {
			return si
		}
		return hits[i].score < hits[j].score
	})
	return hits, nil
}

// rm3Terms returns the expansion words of the feedback notes fb.
func (s *Searcher) rm3Terms(ctx context.Context, terms []term, fb []hit) ([]string, error) {
	qw := map[string]bool{}
	for _, t := range terms {
		for _, w := range t.words {
			f := textseg.Fold(w.Text)
			qw[f], qw[lightStem(f)] = true, true
		}
	}
	// P(d|q): the first-pass scores, normalized over the feedback notes.
	sum := 0.0
	for _, h := range fb {
		sum += -h.score
	}
	if sum <= 0 {
		return nil, nil
	}
	rm := map[string]float64{}
	for _, h := range fb {
		text, err := s.noteText(ctx, h.note)
		if err != nil {
			return nil, err
		}
		tf := map[string]int{}
		n := 0
		for _, w := range textseg.Words(text) {
			n++
			if w.Segmented {
				continue
			}
			f := textseg.Fold(w.Text)
			if len(f) < 3 || stopwords[f] || rm3Stop[f] || qw[f] || qw[lightStem(f)] || !hasLetter(f) {
				continue
			}
			tf[f]++
		}
		if n == 0 {
			continue
		}
		pd := -h.score / sum
		for w, c := range tf {
			rm[w] += float64(c) / float64(n) * pd
		}
	}
	cands := make([]string, 0, len(rm))
	for w := range rm {
		cands = append(cands, w)
	}
	sort.Slice(cands, func(i, j int) bool {
		if rm[cands[i]] != rm[cands[j]] {
			return rm[cands[i]] > rm[cands[j]]
		}
		return cands[i] < cands[j]
	})
	if len(cands) > rm3Candidates {
		cands = cands[:rm3Candidates]
	}
	var total int64
	if err := s.DB.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM chunks").Scan(&total); err != nil {
		return nil, err
	}
	bound := max(total/10, 1)
	weight := map[string]float64{}
	var out []string
	for _, w := range cands {
		var df int64
		err := s.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", ftsTerm(term{words: []textseg.Word{{Text: w}}}), bound+1).Scan(&df)
		if err != nil {
			return nil, err
		}
		if df == 0 || df > bound {
			continue
		}
		weight[w] = rm[w] * math.Log(float64(total)/float64(df))
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return weight[out[i]] > weight[out[j]] })
	if len(out) > RM3Terms {
		out = out[:RM3Terms]
	}
	return out, nil
}

// noteText returns the start of a note's text (its sections in order).
func (s *Searcher) noteText(ctx context.Context, note int64) (string, error) {
	rows, err := s.DB.QueryContext(ctx, "SELECT text FROM chunks WHERE note_id = ? ORDER BY seq", note)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() && b.Len() < rm3DocBytes {
		var t string
		if err := rows.Scan(&t); err != nil {
			return "", err
		}
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return b.String(), rows.Err()
}

func hasLetter(s string) bool {
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r > 0x7f {
			return true
		}
	}
	return false
}

// rm3Stop are frequent English words the query stop list lacks.
var rm3Stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`about above after again against all also any because been before being below between both could each few further had has have having here hers herself him himself his however just more most much must nor now off once only other ought ours ourselves out over own same shall she should some such than theirs themselves those through under until very were what whom while whose yours yourself yourselves use used using one two can may like make see get set new way well within without`) {
		rm3Stop[w] = true
	}
}
