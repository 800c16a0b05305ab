package aiops

import (
	"context"
	"encoding/json"
	"time"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// aiCall is one AI invocation in progress.
type aiCall struct {
	env    *ops.Env
	vh     *ops.VaultHandle
	rt     *ai.Runtime
	op     string
	meta   *AIMeta
	notes  []*scopeNote
	byPath map[string]*scopeNote
	start  time.Time
	hit    bool
	// applied lists the notes written.
	applied []string
	stream  func(event string, data any)
	// priced is set once the price_unknown warning was considered.
	priced bool
	// fence is the caller's read fence: a note it hides never reaches a
	// prompt.
	fence *ops.Fence
}

// beginAI starts an AI call; needChat says whether the op needs a chat model.
// The vault's own AI runtime (Env.AIFor) runs the call: its provider,
// allow/deny globs, cache and cost ledger.
func beginAI(ctx context.Context, env *ops.Env, op, vault string, needChat bool, meta *AIMeta) (*aiCall, error) {
	vh, err := env.Vault(vault)
	if err != nil {
		if !env.AnyAI((*ai.Runtime).Enabled) {
			return nil, ai.Unavailable("chat")
		}
		return nil, err
	}
	rt := env.AIFor(vh)
	if !rt.Enabled() {
		return nil, ai.Unavailable("chat")
	}
	if needChat && !rt.HasChat() {
		return nil, ai.Unavailable("chat")
	}
	meta.Scope, meta.Citations, meta.Warnings = []string{}, []Citation{}, []AIWarning{}
	if rt.HasChat() {
		meta.Provider, meta.Model = rt.Chat.Name(), rt.Chat.Model()
	}
	c := &aiCall{env: env, vh: vh, rt: rt, op: op, meta: meta, byPath: map[string]*scopeNote{}, start: time.Now(), fence: env.ReadFence(ctx, vh)}
	c.stream = ops.StreamFrom(ctx)
	return c, nil
}

// finish writes the audit record of the call.
func (c *aiCall) finish(err error) {
	if c == nil {
		return
	}
	inv := ai.Invocation{Time: c.start.UTC(), Operation: c.op, Provider: c.meta.Provider, Model: c.meta.Model, Paths: c.meta.Scope,
		Notes: len(c.meta.Scope), Citations: len(c.meta.Citations), Usage: c.meta.Usage, CacheHit: c.hit,
		DurationMs: float64(time.Since(c.start).Microseconds()) / 1000, Applied: c.applied}
	if err != nil {
		inv.Code = errs.Code(err)
	}
	c.rt.Record(inv)
	c.env.Emit(ops.Event{Kind: ops.EventAIInvocation, Vault: c.vh.Name, Data: map[string]any{
		"operation": inv.Operation, "provider": inv.Provider, "model": inv.Model, "paths": inv.Paths, "notes": inv.Notes,
		"citations": inv.Citations, "input_tokens": inv.Usage.InputTokens, "output_tokens": inv.Usage.OutputTokens,
		"cost_usd": inv.Usage.CostUSD, "cache_hit": inv.CacheHit, "code": inv.Code, "duration_ms": inv.DurationMs, "applied": inv.Applied}})
}

// generate asks the model for JSON matching schema and decodes it into
// dst; text that is not such JSON gets one repair round. With text, a
// streamed call sends the text of those fields as it grows (ai.partial).
//
// No request goes out over the input budget: a prompt over it is
// ai_input_too_large (the callers fit their notes to it first), and the
// repair round resends the bad reply only when it fits too.
func (c *aiCall) generate(ctx context.Context, name string, schema map[string]any, system, user string, dst any, text *partialSpec) error {
	if n := tokens(system, user); n > c.inputBudget() {
		return c.tooLarge("the prompt", n)
	}
	req := ai.Request{Messages: []ai.Message{{Role: "system", Content: system}, {Role: "user", Content: user}}, Schema: schema, SchemaName: name}
	if text != nil && c.stream != nil {
		req.OnDelta = newPartial(text, func(s string) { c.stream("ai.partial", map[string]string{"text": s}) }).feed
	}
	resp, err := c.rt.Complete(ctx, req)
	if err != nil {
		return err
	}
	c.account(resp)
	perr := decodeModelJSON(resp.Text, schema, dst)
	if perr == nil {
		return nil
	}
	invalid := func(err error) error {
		return errs.New(errs.CodeAIProvider, "the model's output is not valid JSON for %s, even after a repair attempt: %v", name, err).With("provider", c.meta.Provider)
	}
	req.OnDelta = nil
	fix := "Your previous reply is not valid: " + truncRunes(perr.Error(), 500) + ". Reply again with only the JSON object, matching the schema."
	switch {
	case tokens(system, user, resp.Text, fix) <= c.inputBudget():
		req.Messages = append(req.Messages, ai.Message{Role: "assistant", Content: resp.Text}, ai.Message{Role: "user", Content: fix})
	case tokens(system, user, fix) <= c.inputBudget():
		// The bad reply does not fit again: the repair asks without it.
		req.Messages = append(req.Messages, ai.Message{Role: "user", Content: fix})
	default:
		return errs.New(errs.CodeAIProvider, "the model's output is not valid JSON for %s (%v), and the prompt leaves no room in the input budget for a repair round", name, perr).With("provider", c.meta.Provider)
	}
	resp, err = c.rt.Complete(ctx, req)
	if err != nil {
		return err
	}
	c.account(resp)
	if err := decodeModelJSON(resp.Text, schema, dst); err != nil {
		return invalid(err)
	}
	return nil
}

func (c *aiCall) account(resp *ai.Response) {
	c.meta.Usage.Add(resp.Usage)
	if s := &c.rt.Settings; !c.priced {
		c.priced = true
		if s.CeilingBlind() {
			c.meta.Warnings = append(c.meta.Warnings, priceUnknown(s))
		}
	}
	if resp.FinishReason == "length" {
		c.meta.warn("truncated", "", "the model stopped at the output token limit")
	}
	if c.stream != nil {
		c.stream("ai.usage", c.meta.Usage)
	}
}

// decodeModelJSON extracts, schema-checks and decodes the model's JSON.
func decodeModelJSON(text string, schema map[string]any, dst any) error {
	raw, err := ai.ExtractJSON(text)
	if err != nil {
		return err
	}
	if schema != nil {
		if err := validateAgainst(schema, raw); err != nil {
			return err
		}
	}
	return json.Unmarshal(raw, dst)
}

// cached runs gen unless the cache holds the result for this input over
// the same note versions; out is the output (with its AIMeta) to fill.
func cached[T any, PT interface {
	*T
	meta() *AIMeta
}](ctx context.Context, c *aiCall, in any, use bool, out PT, gen func() error) error {
	if c.rt.HasChat() {
		fp := make([][2]string, 0, len(c.notes))
		for _, n := range c.notes {
			fp = append(fp, [2]string{n.Path, n.Etag})
		}
		s := c.rt.Settings
		key := ai.Key(c.op, s.Provider, s.Model, s.Temperature, s.Seed, s.MaxOutputTokens, normalizedInput(in), fp, c.vh.Name)
		if use {
			var hit T
			if c.rt.CacheGet(ctx, key, &hit) {
				*out = hit
				m := PT(out).meta()
				m.Usage = ai.Usage{}
				m.warn("ai_cache_hit", "", "served from the AI cache: the same input over the same note versions was answered before")
				c.meta, c.hit = m, true
				return nil
			}
		}
		if err := gen(); err != nil {
			return err
		}
		c.rt.CachePut(ctx, key, c.op, out)
		return nil
	}
	return gen()
}

// normalizedInput drops the fields that do not change the generation.
func normalizedInput(in any) map[string]any {
	b, _ := json.Marshal(in)
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"apply", "idempotency_key", "cache", "stream", "if_match", "vault"} {
		delete(m, k)
	}
	return m
}

// requireWrites refuses an apply when the call's vault does not allow
// writes (checked again in RunWrite; this answers before the model runs).
func (c *aiCall) requireWrites() error {
	if err := c.env.CheckWrites(c.vh, c.op); err != nil {
		return err
	}
	return nil
}

// priceUnknown is the warning that a daily ceiling cannot hold: the chat
// model has no price, so its calls are booked at $0.
func priceUnknown(s *ai.Settings) AIWarning {
	return AIWarning{Code: "price_unknown", Message: s.CeilingBlindMessage()}
}
