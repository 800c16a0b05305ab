package ops

import (
	"context"
	"encoding/json"
	"time"

	"github.com/loci-dev/loci/internal/errs"
)

// Caller identifies who is calling, for audit and policy.
type Caller struct {
	Surface string // "cli", "mcp", "rest"
	Session string
	Subject string // authenticated principal, if any
}

// Result is the outcome of one dispatch.
type Result struct {
	Output   any
	Err      *errs.Error
	Duration time.Duration
}

// DefaultMaxResultBytes bounds any single result.
const DefaultMaxResultBytes = 4 << 20

// Call runs one operation through the shared pipeline: decode and validate
// the input, run the handler, and apply the response-size governor. Every
// surface calls this and nothing else.
func (r *Registry) Call(ctx context.Context, env *Env, caller Caller, name string, raw json.RawMessage) Result {
	start := time.Now()
	op, ok := r.Get(name)
	if !ok {
		return Result{Err: errs.New(errs.CodeUnknownOp, "unknown operation %q", name), Duration: time.Since(start)}
	}
	in, err := op.Decode(raw)
	if err != nil {
		return Result{Err: errs.As(err), Duration: time.Since(start)}
	}
	return r.invoke(ctx, env, op, in, start)
}

// CallTyped runs an op with an already-decoded input value (the CLI builds
// inputs from flags); validation of the Validate() hook still applies.
func (r *Registry) CallTyped(ctx context.Context, env *Env, caller Caller, op *Op, in any) Result {
	start := time.Now()
	raw, err := json.Marshal(in)
	if err != nil {
		return Result{Err: errs.Wrap(err, errs.CodeInvalidInput, "cannot encode input")}
	}
	dec, err := op.Decode(raw)
	if err != nil {
		return Result{Err: errs.As(err), Duration: time.Since(start)}
	}
	return r.invoke(ctx, env, op, dec, start)
}

func (r *Registry) invoke(ctx context.Context, env *Env, op *Op, in any, start time.Time) Result {
	out, err := op.handler(ctx, env, in)
	if err != nil {
		if ctx.Err() != nil {
			return Result{Err: errs.Wrap(ctx.Err(), "cancelled", "the operation was cancelled"), Duration: time.Since(start)}
		}
		return Result{Err: errs.As(err), Duration: time.Since(start)}
	}
	limit := env.MaxResultBytes
	if limit <= 0 {
		limit = DefaultMaxResultBytes
	}
	if b, err := json.Marshal(out); err == nil && len(b) > limit {
		return Result{Err: errs.New(errs.CodeTooLarge, "result of %s is %d bytes, over the %d-byte limit; narrow the request (limit, max_chars, a line range or a cursor)", op.Name, len(b), limit).
			With("bytes", len(b)).With("limit", limit), Duration: time.Since(start)}
	}
	return Result{Output: out, Duration: time.Since(start)}
}
