package aiops

import (
	"context"
	"encoding/json"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/ops"
)

// idempotentAI wraps an AI handler: a call with an idempotency_key runs
// at most once per key (ops.RunKeyed: the vault's idempotency store, the
// key's lock serializing calls that share it). A retry with the same key
// and input gets the first result back (warning idempotent_replay, usage
// 0) without calling the model or writing; another input is
// idempotency_key_reused. A call that writes (an apply) is checked
// against the vault's write settings before it runs and before a stored
// result is replayed. Calls without a key, or with AI off, run as they
// are.
func idempotentAI[In any, Out any, PI interface {
	*In
	opts() *AIOpts
}, PO interface {
	*Out
	meta() *AIMeta
}](op string, h func(context.Context, *ops.Env, *In) (*Out, error)) func(context.Context, *ops.Env, *In) (*Out, error) {
	return func(ctx context.Context, env *ops.Env, in *In) (*Out, error) {
		o := PI(in).opts()
		if err := ops.CheckIdempotencyKey(o.IdempotencyKey); err != nil {
			return nil, err
		}
		vh, err := env.Vault(o.Vault)
		if o.IdempotencyKey == "" || err != nil || !env.AIFor(vh).Enabled() {
			return h(ctx, env, in) // the handler reports an unknown vault, or AI off
		}
		return ops.RunKeyed(ctx, env, vh, ops.Keyed[Out]{Op: op, Key: o.IdempotencyKey, Input: keyedInput(in), Writes: writes(in),
			Replayed: func(out *Out) {
				m := PO(out).meta()
				m.Usage = ai.Usage{}
				m.warn("idempotent_replay", "", "the stored result of the first call with this idempotency_key; nothing was generated or written now")
			},
			StoreFailed: func(out *Out, err error) {
				PO(out).meta().warn("idempotency_not_stored", "", "the result could not be stored for its idempotency_key (%v): a retry with this key would run again", err)
			},
		}, func() (*Out, error) { return h(ctx, env, in) })
	}
}

// keyedInput is what identifies an AI call for its idempotency key: the
// input without the key itself and stream (how the result is delivered).
func keyedInput(in any) map[string]any {
	b, _ := json.Marshal(in)
	var m map[string]any
	json.Unmarshal(b, &m)
	delete(m, "idempotency_key")
	delete(m, "stream")
	return m
}

// writer is an AI input that may write its result.
type writer interface{ writes() bool }

// writes reports whether the call writes to the vault.
func writes(in any) bool {
	w, ok := in.(writer)
	return ok && w.writes()
}
