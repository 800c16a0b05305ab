package search

import (
	"context"
	"sort"

	"github.com/loci-dev/loci/internal/errs"
)

// AnchorWeight is the BM25 weight of a note's anchor text (0 turns the
// field off); the chunk columns' weights are in bm25Args.
var AnchorWeight = 2.0

// DescriptionWeight is the BM25 weight of a note's description (its
// frontmatter description or summary, descriptions_fts; 0 turns the field
// off). The description also stays in the first chunk's body.
var DescriptionWeight = 1.0

// noteField is a per-note FTS5 table whose rowid is the note id.
type noteField struct {
	table  string
	weight float64
	part   func(*hit) *float64 // where a hit keeps this field's score
}

func noteFields() []noteField {
	return []noteField{
		{"anchors_fts", AnchorWeight, func(h *hit) *float64 { return &h.anchor }},
		{"descriptions_fts", DescriptionWeight, func(h *hit) *float64 { return &h.desc }},
	}
}

// addFields adds the scores of the note fields (anchor text, description)
// that match expr to hits (best chunk per note, from run) and re-sorts
// them. A note outside the chunk rows run read comes at its first chunk,
// with its fields' scores plus floor: 0 when run read every matching
// chunk (its text did not match), else the score of the last row read,
// the best its text can score (so two notes tied at the cut score the
// same whichever side of it they fell). No per-note lookup: a query costs
// one MATCH per field. A query with -exclusions (neg) adds no note found
// only by its fields: the exclusion can only be checked against the
// note's own text.
func (s *Searcher) addFields(ctx context.Context, expr string, keep func(int64) bool, seen map[int64]bool, hits []hit, limit int, neg bool, floor float64) ([]hit, error) {
	at := make(map[int64]int, len(hits))
	for i, h := range hits {
		at[h.note] = i
	}
	outAt := map[int64]int{}
	var outside []hit
	for _, f := range noteFields() {
		if f.weight <= 0 {
			continue
		}
		rows, err := s.query(ctx, `SELECT rowid, bm25(`+f.table+`, ?) AS s FROM `+f.table+` WHERE `+f.table+` MATCH ? ORDER BY s LIMIT ?+0`, f.weight, expr, limit)
		if err != nil {
			return nil, errs.Wrap(err, errs.CodeInternal, "search failed").With("match", expr)
		}
		for rows.Next() {
			var id int64
			var sc float64
			if err := rows.Scan(&id, &sc); err != nil {
				rows.Close()
				return nil, err
			}
			if i, ok := at[id]; ok {
				hits[i].score += sc
				*f.part(&hits[i]) += sc
			} else if !neg && !seen[id] && (keep == nil || keep(id)) {
				j, ok := outAt[id]
				if !ok {
					j = len(outside)
					outAt[id] = j
					outside = append(outside, hit{note: id})
				}
				outside[j].score += sc
				*f.part(&outside[j]) += sc
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, errs.Wrap(err, errs.CodeInternal, "search failed").With("match", expr)
		}
	}
	if len(outside) > 0 {
		first, err := s.firstChunks(ctx, outside)
		if err != nil {
			return nil, err
		}
		for _, h := range outside {
			if c, ok := first[h.note]; ok { // else deleted meanwhile
				h.chunk, h.score = c, h.score+floor
				hits = append(hits, h)
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score < hits[j].score })
	return hits, nil
}
