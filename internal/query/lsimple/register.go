package lsimple

import (
	"context"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/query"
)

func init() { query.Register(query.LogseqSimple, evalQuery) }

// evalQuery answers a simple query for the query operation: the rows of
// notes the read fence hides are dropped before they count against the
// limit (or (sample n)). Blocks give the columns page and content,
// page-only queries page.
func evalQuery(ctx context.Context, ix *index.Index, q string, opt query.Options) (*query.Result, error) {
	res, err := Evaluator{Visible: opt.Visible}.Eval(ctx, ix, q, opt.Limit)
	if err != nil {
		return nil, err
	}
	out := &query.Result{Columns: []string{"page", "content"}, Truncated: res.Truncated}
	pages := res.Kind == "pages"
	if pages {
		out.Columns = []string{"page"}
	}
	for _, r := range res.Rows {
		vals := []any{r.Page}
		if !pages {
			vals = append(vals, r.Content)
		}
		out.Rows = append(out.Rows, query.Row{Path: r.Path, Line: r.Line, Block: r.UUID, Values: vals})
	}
	return out, query.Check(ctx)
}
