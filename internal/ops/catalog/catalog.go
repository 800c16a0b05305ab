// Package catalog assembles loci's registry from the families of
// operations. It is the one package that knows every family: internal/ops
// (the registry, the dispatch pipeline, Env and the helpers the families
// share) knows none of them, and no family imports another.
package catalog

import (
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/aiops"
	"github.com/loci-dev/loci/internal/ops/logseq"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/ops/write"
)

// All returns a registry with every loci operation.
func All() *ops.Registry {
	r := ops.NewRegistry()
	r.Register("read", read.Ops()...)
	r.Register("logseq", logseq.Ops()...)
	r.Register("write", write.Ops()...)
	r.Register("aiops", aiops.Ops()...)
	return r
}
