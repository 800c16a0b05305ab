package search

import "context"

// VectorsPartial is the value of Response.Vectors while the index's vectors
// are incomplete (a background embedder is still working, or failed).
const VectorsPartial = "partial"

// vectorsCompleter is the part of a VectorSource (*index.Index) that knows
// whether every section has its vector yet.
type vectorsCompleter interface {
	VectorsComplete(ctx context.Context) bool
}

// vectorsPartial reports whether the source has usable vectors but not
// all of them: the default mode is then lexical, and a semantic or hybrid
// search runs over the vectors present and says so.
func (s *Searcher) vectorsPartial(ctx context.Context) bool {
	vc, ok := s.Vectors.(vectorsCompleter)
	if !ok || vc.VectorsComplete(ctx) { // one read of meta: the common case
		return false
	}
	has, err := s.Vectors.HasVectors(ctx)
	return has && err == nil
}

// defaultMode is the mode of a query that names none, once vectors are
// usable: hybrid, or lexical while they are partial.
func (s *Searcher) defaultMode(ctx context.Context) string {
	if s.vectorsPartial(ctx) {
		return ModeLexical
	}
	return ModeHybrid
}

// markPartial sets resp.Vectors when the vectors were partial.
func markPartial(resp *Response, err error, partial bool) (*Response, error) {
	if resp != nil && partial {
		resp.Vectors = VectorsPartial
	}
	return resp, err
}
