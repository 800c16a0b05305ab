package ops

import (
	"context"

	"github.com/loci-dev/loci/internal/errs"
)

// admit is the pipeline's rate limit and concurrency cap per principal
// and class (read, write, ai). It returns the function that ends the
// call's hold on a concurrency slot.
//
// TODO(limits): token buckets from config, rate_limited with Retry-After.
func (e *Env) admit(ctx context.Context, c Caller, op *Op) (func(), *errs.Error) {
	return func() {}, nil
}
