package index

import "context"

// LinkEdges returns the distinct resolved links between two different
// notes, as (source id, target id) pairs ordered by source then target.
// With ids it returns only the links whose both ends are among ids (at most
// 5000 of them); with none, every link of the index. Every kind counts
// (wikilink, markdown, embed, typed, blockref, tag).
func (ix *Index) LinkEdges(ctx context.Context, ids ...int64) ([][2]int64, error) {
	q := `SELECT DISTINCT src_id, dst_id FROM links WHERE dst_id IS NOT NULL AND dst_id <> src_id`
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
	rows, err := ix.DB.QueryContext(ctx, q+` ORDER BY src_id, dst_id`, args...)
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
	return out, rows.Err()
}
