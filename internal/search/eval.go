package search

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/loci-dev/loci/internal/errs"
)

// GoldenQuery is one judged query of a golden set (the format of
// ../shared/eval/dbpedia-entity-5k/golden.json).
type GoldenQuery struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Relevant []string `json:"relevant_paths"`
	Partial  []string `json:"partial_paths"`
	Category string   `json:"category"`
}

// LoadGolden reads a golden set file.
func LoadGolden(path string) ([]GoldenQuery, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInvalidInput, "cannot read golden set").With("golden", path)
	}
	var g []GoldenQuery
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, errs.New(errs.CodeInvalidInput, "invalid golden set %s: %v (want a JSON array of {id, query, relevant_paths, partial_paths, category})", path, err).With("golden", path)
	}
	for i, q := range g {
		if strings.TrimSpace(q.Query) == "" || len(q.Relevant)+len(q.Partial) == 0 {
			return nil, errs.New(errs.CodeInvalidInput, "golden query %d (%s) needs a query and at least one relevant or partial path", i+1, q.ID).With("golden", path)
		}
		if g[i].ID == "" {
			g[i].ID = fmt.Sprint(i + 1)
		}
		if g[i].Category == "" {
			g[i].Category = "default"
		}
	}
	return g, nil
}

// Metrics are the quality figures of a set of queries (means over queries).
type Metrics struct {
	Queries  int     `json:"queries"`
	NDCG5    float64 `json:"ndcg@5"`
	NDCG10   float64 `json:"ndcg@10"`
	MRR      float64 `json:"mrr"`
	Hit1     float64 `json:"hit@1"`
	Hit3     float64 `json:"hit@3"`
	Hit5     float64 `json:"hit@5"`
	Recall10 float64 `json:"recall@10"`
}

// QueryEval is the outcome of one query.
type QueryEval struct {
	ID       string  `json:"id"`
	Query    string  `json:"query"`
	Category string  `json:"category"`
	NDCG10   float64 `json:"ndcg@10"`
	// FirstRelevant is the rank of the first relevant result (0: none in the results).
	FirstRelevant int `json:"first_relevant_rank"`
	// Retrieved are the result paths, best first, each marked "+" (relevant),
	// "~" (partial) or " ".
	Retrieved []string `json:"retrieved"`
	// Missed are the relevant paths not in the first 10 results.
	Missed  []string `json:"missed,omitempty"`
	metrics Metrics
}

// Report is the outcome of a golden-set run.
type Report struct {
	Mode       string             `json:"mode"`
	K          int                `json:"k"`
	Overall    Metrics            `json:"overall"`
	ByCategory map[string]Metrics `json:"by_category"`
	// Misses are the queries with no relevant result in the first k.
	Misses  []QueryEval `json:"misses"`
	Queries []QueryEval `json:"queries"`
}

// Gain of a partially relevant result in nDCG (a relevant one gains 1).
const partialGain = 0.5

// Evaluate runs every query through search (which returns result paths,
// best first) and scores the rankings. Relevance: relevant_paths gain 1,
// partial_paths 0.5 in nDCG; MRR, Hit@n and Recall@10 count relevant_paths
// only (partial_paths when a query has no relevant_paths).
func Evaluate(ctx context.Context, golden []GoldenQuery, k int, search func(ctx context.Context, query string) ([]string, error)) (*Report, error) {
	if k <= 0 {
		k = 10
	}
	rep := &Report{K: k, ByCategory: map[string]Metrics{}}
	cats := map[string][]Metrics{}
	var all []Metrics
	for _, g := range golden {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		paths, err := search(ctx, g.Query)
		if err != nil {
			return nil, fmt.Errorf("query %s %q: %w", g.ID, g.Query, err)
		}
		if len(paths) > k {
			paths = paths[:k]
		}
		qe := scoreQuery(g, paths)
		rep.Queries = append(rep.Queries, qe)
		if qe.FirstRelevant == 0 {
			rep.Misses = append(rep.Misses, qe)
		}
		all = append(all, qe.metrics)
		cats[g.Category] = append(cats[g.Category], qe.metrics)
	}
	rep.Overall = mean(all)
	for c, ms := range cats {
		rep.ByCategory[c] = mean(ms)
	}
	if rep.Misses == nil {
		rep.Misses = []QueryEval{}
	}
	return rep, nil
}

func key(p string) string { return strings.ToLower(norm.NFC.String(strings.TrimPrefix(p, "./"))) }

func scoreQuery(g GoldenQuery, paths []string) QueryEval {
	gain := map[string]float64{}
	for _, p := range g.Partial {
		gain[key(p)] = partialGain
	}
	for _, p := range g.Relevant {
		gain[key(p)] = 1
	}
	target := g.Relevant
	if len(target) == 0 {
		target = g.Partial
	}
	isTarget := map[string]bool{}
	for _, p := range target {
		isTarget[key(p)] = true
	}
	qe := QueryEval{ID: g.ID, Query: g.Query, Category: g.Category, Retrieved: []string{}}
	found := map[string]bool{}
	for i, p := range paths {
		kp := key(p)
		mark := " "
		switch {
		case gain[kp] == 1:
			mark = "+"
		case gain[kp] > 0:
			mark = "~"
		}
		qe.Retrieved = append(qe.Retrieved, mark+" "+p)
		if isTarget[kp] {
			if qe.FirstRelevant == 0 {
				qe.FirstRelevant = i + 1
			}
			if i < 10 {
				found[kp] = true
			}
		}
	}
	for _, p := range target {
		if !found[key(p)] {
			qe.Missed = append(qe.Missed, p)
		}
	}
	m := Metrics{Queries: 1}
	m.NDCG5 = ndcg(paths, gain, 5)
	m.NDCG10 = ndcg(paths, gain, 10)
	if qe.FirstRelevant > 0 {
		m.MRR = 1 / float64(qe.FirstRelevant)
	}
	hit := func(n int) float64 {
		if qe.FirstRelevant > 0 && qe.FirstRelevant <= n {
			return 1
		}
		return 0
	}
	m.Hit1, m.Hit3, m.Hit5 = hit(1), hit(3), hit(5)
	if len(target) > 0 {
		m.Recall10 = float64(len(found)) / float64(len(isTarget))
	}
	qe.NDCG10 = round4(m.NDCG10)
	qe.metrics = m
	return qe
}

// ndcg is the normalized discounted cumulative gain at cutoff n, with
// gain/log2(rank+1) and the ideal ranking of all judged paths.
func ndcg(paths []string, gain map[string]float64, n int) float64 {
	var dcg float64
	seen := map[string]bool{}
	for i, p := range paths {
		if i >= n {
			break
		}
		kp := key(p)
		if seen[kp] {
			continue
		}
		seen[kp] = true
		dcg += gain[kp] / math.Log2(float64(i+2))
	}
	ideal := make([]float64, 0, len(gain))
	for _, g := range gain {
		ideal = append(ideal, g)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(ideal)))
	var idcg float64
	for i, g := range ideal {
		if i >= n {
			break
		}
		idcg += g / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

func mean(ms []Metrics) Metrics {
	var out Metrics
	for _, m := range ms {
		out.NDCG5 += m.NDCG5
		out.NDCG10 += m.NDCG10
		out.MRR += m.MRR
		out.Hit1 += m.Hit1
		out.Hit3 += m.Hit3
		out.Hit5 += m.Hit5
		out.Recall10 += m.Recall10
	}
	n := float64(len(ms))
	if n == 0 {
		return out
	}
	out.Queries = len(ms)
	out.NDCG5 = round4(out.NDCG5 / n)
	out.NDCG10 = round4(out.NDCG10 / n)
	out.MRR = round4(out.MRR / n)
	out.Hit1 = round4(out.Hit1 / n)
	out.Hit3 = round4(out.Hit3 / n)
	out.Hit5 = round4(out.Hit5 / n)
	out.Recall10 = round4(out.Recall10 / n)
	return out
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// Text renders the report as a table, then the misses.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode %s, k %d\n\n", r.Mode, r.K)
	fmt.Fprintf(&b, "%-18s %7s %7s %7s %6s %6s %6s %9s %7s\n", "category", "queries", "nDCG@5", "nDCG@10", "MRR", "Hit@1", "Hit@3", "Hit@5", "Rec@10")
	row := func(name string, m Metrics) {
		fmt.Fprintf(&b, "%-18s %7d %7.3f %7.3f %6.3f %6.3f %6.3f %6.3f %9.3f\n", name, m.Queries, m.NDCG5, m.NDCG10, m.MRR, m.Hit1, m.Hit3, m.Hit5, m.Recall10)
	}
	row("overall", r.Overall)
	cats := make([]string, 0, len(r.ByCategory))
	for c := range r.ByCategory {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	if len(cats) > 1 {
		for _, c := range cats {
			row(c, r.ByCategory[c])
		}
	}
	if len(r.Misses) > 0 {
		fmt.Fprintf(&b, "\nmisses (no relevant note in the first %d): %d\n", r.K, len(r.Misses))
		for _, m := range r.Misses {
			fmt.Fprintf(&b, "  [%s] %q\n    want: %s\n", m.ID, m.Query, strings.Join(firstN(m.Missed, 3), "; "))
			var got []string
			for _, p := range firstN(m.Retrieved, 3) {
				got = append(got, strings.TrimSpace(p))
			}
			fmt.Fprintf(&b, "    got:  %s\n", strings.Join(got, "; "))
		}
	}
	return b.String()
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
