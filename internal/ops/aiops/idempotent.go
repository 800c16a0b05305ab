package aiops

import (
	"context"
	"encoding/json"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// idempotentAI wraps an AI handler: a call with an idempotency_key is
// answered from the stored first result when key and input match (within
// the cache TTL), and refused with idempotency_key_reused when the input
// differs. Calls without a key, or with AI off, run as they are.
func idempotentAI[In any, Out any, PI interface {
	*In
	opts() *AIOpts
}, PO interface {
	*Out
	meta() *AIMeta
}](op string, h func(context.Context, *ops.Env, *In) (*Out, error)) func(context.Context, *ops.Env, *In) (*Out, error) {
	return func(ctx context.Context, env *ops.Env, in *In) (*Out, error) {
		key := PI(in).opts().IdempotencyKey
		vh, _ := env.Vault(PI(in).opts().Vault)
		rt := env.AIFor(vh)
		if key == "" || !rt.Enabled() {
			return h(ctx, env, in)
		}
		if len(key) > 200 {
			return nil, errs.New(errs.CodeInvalidInput, "idempotency_key is longer than 200 characters")
		}
		b, _ := json.Marshal(in)
		var m map[string]any
		json.Unmarshal(b, &m)
		delete(m, "idempotency_key")
		delete(m, "stream")
		hash := ai.Key(m)
		slot := ai.Key("idempotency", op, PI(in).opts().Vault, key)
		var rec struct {
			Hash   string          `json:"hash"`
			Output json.RawMessage `json:"output"`
		}
		if rt.CacheGet(ctx, slot, &rec) {
			if rec.Hash != hash {
				return nil, errs.New(errs.CodeIdempotencyReuse, "idempotency_key %q was used for a different %s call; use a new key for a new call", key, op).
					With("idempotency_key", key).With("operation", op)
			}
			out := new(Out)
			if err := json.Unmarshal(rec.Output, out); err != nil {
				return nil, errs.Wrap(err, errs.CodeInternal, "the stored result of this idempotency_key is damaged")
			}
			m := PO(out).meta()
			m.Usage = ai.Usage{}
			m.warn("idempotent_replay", "", "the stored result of the first call with this idempotency_key; nothing was generated or written now")
			return out, nil
		}
		out, err := h(ctx, env, in)
		if err != nil {
			return nil, err
		}
		ob, _ := json.Marshal(out)
		rec.Hash, rec.Output = hash, ob
		rt.CachePut(ctx, slot, op+":idempotency", rec)
		return out, nil
	}
}
