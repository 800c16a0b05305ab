package index

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// edgeCache keeps the whole graph's edges of each open index while its
// notes stay the same (NotesFingerprint: a link changes only when its note
// is re-indexed, and a resolution only when a note is added or removed).
var edgeCache struct {
	sync.Mutex
	m map[*Index]cachedEdges
}

type cachedEdges struct {
	fp    string
	edges [][2]int64
}

// maxEdgeCache bounds the indexes whose edges are kept (one per served
// vault in a server; tests open many).
const maxEdgeCache = 8

// LinkEdges returns the distinct resolved links between two different
// notes, as (source id, target id) pairs ordered by source then target.
// With ids it returns only the links whose both ends are among ids (at most
// 5000 of them); with none, every link of the index. Every kind counts
// (wikilink, markdown, embed, typed, blockref, tag).
//
// The whole graph's edges are computed once per state of the index's notes
// and shared: the caller must not modify the slice.
func (ix *Index) LinkEdges(ctx context.Context, ids ...int64) ([][2]int64, error) {
	if len(ids) > 0 {
		return ix.linkEdges(ctx, ids)
	}
	fp, err := ix.NotesFingerprint(ctx)
	if err != nil {
		return nil, err
	}
	edgeCache.Lock()
	c, ok := edgeCache.m[ix]
	edgeCache.Unlock()
	if ok && c.fp == fp {
		return c.edges, nil
	}
	edges, err := ix.linkEdges(ctx, nil)
	if err != nil {
		return nil, err
	}
	// Stored only if the notes did not change meanwhile.
	if fp2, err := ix.NotesFingerprint(ctx); err == nil && fp2 == fp {
		edgeCache.Lock()
		if edgeCache.m == nil || len(edgeCache.m) >= maxEdgeCache {
			edgeCache.m = map[*Index]cachedEdges{}
		}
		edgeCache.m[ix] = cachedEdges{fp: fp, edges: edges}
		edgeCache.Unlock()
	}
	return edges, nil
}

func (ix *Index) linkEdges(ctx context.Context, ids []int64) ([][2]int64, error) {
	// DISTINCT and ORDER BY are done here, not in SQL: SQLite's sorter
	// over every link was 40% of a whole-graph call (pprof, obsidian-hub).
	q := `SELECT src_id, dst_id FROM links WHERE dst_id IS NOT NULL AND dst_id <> src_id`
	var args []any
	if len(ids) > 0 {
		in := placeholders(len(ids))
		q += ` AND src_id IN (` + in + `) AND dst_id IN (` + in + `)`
		args = make([]any, 0, 2*len(ids))
		for _, id := range ids {
			args = append(args, id)
		}
		args = append(args, args...)
	}
	rows, err := ix.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var e [2]int64
		if err := rows.Scan(&e[0], &e[1]); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b [2]int64) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	return slices.Compact(out), nil
}
