package datalog

import (
	"context"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/query/graph"
)

func init() { query.Register(query.LogseqAdvanced, evalQuery) }

// evalQuery answers an advanced query for the query operation. The query
// is parsed and checked before the graph is read, so a malformed or
// unsupported query costs nothing.
func evalQuery(ctx context.Context, ix *index.Index, q string, opt query.Options) (*query.Result, error) {
	p, err := Parse(q)
	if err != nil {
		return nil, err
	}
	var inputs []any
	if opt.Inputs != nil {
		if inputs, err = FromJSON(opt.Inputs); err != nil {
			return nil, err
		}
	}
	g, err := loadGraph(ctx, ix)
	if err != nil {
		return nil, err
	}
	return Evaluator{}.Run(ctx, g, p, inputs, opt)
}

// loadGraph is the one place the graph is read: the shared graph of the
// index, cached by its content revision (read-only: never mutate it).
func loadGraph(ctx context.Context, ix *index.Index) (*graph.Graph, error) {
	return graph.For(ctx, ix)
}
