package search

import (
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/textseg"
)

// Query expansion from word vectors: each plain query word is compared
// with the built-in embedder's word vectors, and its nearest neighbours
// (cosine >= QEThreshold, at most QEPerWord of them) that occur in the
// vault (an FTS5 match, and in at most a tenth of the sections) are run as
// a second lexical query, any of them. A note's score is its first-pass
// score plus QEWeight × its score in the expansion query, each over its
// list's best; notes found only by the expansion join after the strict
// hits.
var (
	QEWeight    = 0.0 // 0 turns expansion off
	QEThreshold = 0.7
	QEPerWord   = 2
	// QEMinRank leaves out the table's most frequent words, as query
	// words and as neighbours: their neighbours are other common words.
	QEMinRank = 1000
	// QEMaxDF: only query words in at most this many sections are
	// expanded (-1: every word).
	QEMaxDF = -1
	// QERelaxed: the expansion words join the relaxed pass as
	// alternatives instead of running as a second query.
	QERelaxed = false
	// QEGate: expand only when no note matched every query term.
	QEGate = false
)

const (
	qeDepth     = 50    // first-pass notes re-ranked
	qeVocab     = 40000 // the most frequent words of the table searched for neighbours
	qeTries     = 8     // neighbours checked against the vault per query word
	qeMinLength = 3
)

func init() {
	// Experiment knob: LOCI_QE="weight,threshold,perword".
	if v := os.Getenv("LOCI_QE"); v != "" {
		f := strings.Split(v, ",")
		if len(f) >= 6 {
			QERelaxed = f[5] == "r"
		}
		if len(f) == 7 {
			QEGate = f[6] == "g"
		}
		if len(f) >= 5 {
			QEMaxDF, _ = strconv.Atoi(f[4])
		}
		if len(f) >= 4 {
			QEMinRank, _ = strconv.Atoi(f[3])
		}
		if len(f) >= 3 {
			QEWeight, _ = strconv.ParseFloat(f[0], 64)
			QEThreshold, _ = strconv.ParseFloat(f[1], 64)
			QEPerWord, _ = strconv.Atoi(f[2])
		}
	}
}

var qeTable struct {
	once  sync.Once
	words []string
	vecs  []float32
	dims  int
}

func qeNeighbours(w string, t float64) []string {
	qeTable.once.Do(func() {
		qeTable.words, qeTable.vecs, qeTable.dims = embed.BuiltinWords(qeVocab)
	})
	q, ok := embed.BuiltinWordVector(w)
	d := qeTable.dims
	if !ok || d == 0 || len(q) != d {
		return nil
	}
	for i := 0; i < min(QEMinRank, len(qeTable.words)); i++ {
		if qeTable.words[i] == w {
			return nil
		}
	}
	type cand struct {
		w string
		c float32
	}
	var cs []cand
	for i, word := range qeTable.words {
		if i < QEMinRank {
			continue
		}
		c := embed.Dot(q, qeTable.vecs[i*d:(i+1)*d])
		if float64(c) >= t {
			cs = append(cs, cand{word, c})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].c != cs[j].c {
			return cs[i].c > cs[j].c
		}
		return cs[i].w < cs[j].w
	})
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.w)
	}
	return out
}

// sameWord reports whether a and b are forms of one word (FTS5's porter
// stemmer would already match one for the other, or nearly).
func sameWord(a, b string) bool {
	if lightStem(a) == lightStem(b) {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 4 && strings.HasPrefix(b, a)
}

// qeWords returns the expansion words of terms.
func (s *Searcher) qeWords(ctx context.Context, terms []term) ([]string, error) {
	var qw []string
	for _, t := range terms {
		if t.neg || t.phrase || t.prefix || len(t.words) != 1 || t.words[0].Segmented || isStop(t) {
			continue
		}
		qw = append(qw, textseg.Fold(t.words[0].Text))
	}
	if len(qw) == 0 {
		return nil, nil
	}
	var total int64
	if err := s.DB.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM chunks").Scan(&total); err != nil {
		return nil, err
	}
	bound := max(total/10, 1)
	var out []string
	taken := map[string]bool{}
	df := func(w string, limit int64) (int64, error) {
		var n int64
		err := s.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", ftsTerm(term{words: []textseg.Word{{Text: w}}}), limit).Scan(&n)
		return n, err
	}
	for _, w := range qw {
		if QEMaxDF >= 0 {
			n, err := df(w, int64(QEMaxDF)+1)
			if err != nil {
				return nil, err
			}
			if n > int64(QEMaxDF) {
				continue
			}
		}
		n, tries := 0, 0
		for _, c := range qeNeighbours(w, QEThreshold) {
			if n >= QEPerWord || tries >= qeTries {
				break
			}
			if len(c) < qeMinLength || stopwords[c] || rm3Stop[c] || !hasLetter(c) || taken[c] {
				continue
			}
			skip := false
			for _, x := range qw {
				if sameWord(c, x) {
					skip = true
				}
			}
			for _, x := range out {
				if sameWord(c, x) {
					skip = true
				}
			}
			if skip {
				continue
			}
			tries++
			d, err := df(c, bound+1)
			if err != nil {
				return nil, err
			}
			if d == 0 || d > bound {
				continue
			}
			taken[c] = true
			out = append(out, c)
			n++
		}
	}
	return out, nil
}

// expandQuery re-ranks hits (the first pass, best first) with the expansion query.
func (s *Searcher) expandQuery(ctx context.Context, terms []term, hits []hit, keep func(int64) bool) ([]hit, error) {
	if QEGate && len(hits) > 0 && hits[0].matched == "all" {
		return hits, nil
	}
	exp, err := s.qeWords(ctx, terms)
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
		JOIN chunks c ON c.id = f.rowid ORDER BY f.s`, expr, 8*qeDepth)
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
	fbTop := fbs[order[0]].score
	top := fbTop
	if len(hits) > 0 {
		top = hits[0].score
	}
	if top >= 0 || fbTop >= 0 {
		return hits, nil
	}
	in := make(map[int64]bool, len(hits))
	for i := range hits {
		h := &hits[i]
		in[h.note] = true
		if x, ok := fbs[h.note]; ok {
			h.score += top * QEWeight * x.score / fbTop
		}
	}
	for _, n := range order {
		if !in[n] {
			x := fbs[n]
			hits = append(hits, hit{note: n, chunk: x.chunk, matched: "any", score: top * QEWeight * x.score / fbTop})
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

// qeTerms returns the expansion words of terms as plain terms.
func (s *Searcher) qeTerms(ctx context.Context, terms []term) ([]term, error) {
	exp, err := s.qeWords(ctx, terms)
	var out []term
	for _, w := range exp {
		out = append(out, term{words: []textseg.Word{{Text: w}}})
	}
	return out, err
}
