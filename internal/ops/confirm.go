package ops

import (
	"context"
	"encoding/json"

	"github.com/loci-dev/loci/internal/errs"
)

// confirmGate holds a destructive call of a principal whose policy is
// confirm until a human confirmed it.
//
// TODO(confirm): confirmation_required with a one-time id and a preview;
// confirmation_invalid on a mismatch.
func (e *Env) confirmGate(ctx context.Context, r *Registry, c Caller, op *Op, raw json.RawMessage, in any, id string) *errs.Error {
	return nil
}
