package ops

import (
	"context"
	"encoding/json"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

// Caller identifies who is calling, for audit and policy.
type Caller struct {
	Surface string // "cli", "mcp", "rest", "web"
	Session string
	// Principal is who authenticated (internal/auth); nil is the owner:
	// the CLI and stdio run as the user's own process.
	Principal *auth.Principal
}

// Subject is the caller's principal name, as logs record it.
func (c Caller) Subject() string { return c.Principal.Label() }

type callerKey struct{}

// WithCaller returns a context carrying the caller; the dispatch pipeline
// sets it so that handlers (the write pipeline's audit and undo journal)
// know who is calling.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller set by WithCaller (zero if none).
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// IsWrite reports whether an operation changes the vault: every operation
// not annotated read-only. Write operations are gated by the write
// settings of the vault they write (Env.WritesFor).
func (op *Op) IsWrite() bool { return !op.Annotations.ReadOnly }

// gate is the dispatch pipeline's cheap pre-check of a write operation,
// before its input is decoded: it refuses at once when no served vault
// allows writes, and otherwise checks the vault the input's "vault" field
// names (the default vault when empty, as every write operation resolves
// it). The authoritative check is per vault, where every write goes
// through once its vault is resolved (RunWrite, idempotent replays, and the
// AI operations' apply).
func (e *Env) gate(op *Op, raw json.RawMessage) *errs.Error {
	if !op.IsWrite() || op.Toolset == ToolsetAI {
		// AI operations only propose unless apply is set; their
		// handlers check the vault's write settings then (aiops:
		// requireWrites).
		return nil
	}
	var named struct {
		Vault string `json:"vault"`
	}
	if json.Unmarshal(raw, &named) != nil || len(e.Vaults) == 0 {
		if e.AnyWritesAllowed() {
			return nil // undecodable input: the decoder answers
		}
		var def *VaultHandle
		if len(e.Vaults) > 0 {
			def = e.Vaults[0]
		}
		return e.CheckWrites(def, op.Name)
	}
	vh, err := e.Vault(named.Vault)
	if err != nil {
		if e.AnyWritesAllowed() {
			return nil // an unknown vault is the handler's vault_not_found
		}
		return e.CheckWrites(e.Vaults[0], op.Name)
	}
	return e.CheckWrites(vh, op.Name)
}

// AuditRecord describes one dispatched call. It never holds note contents,
// arguments or results: only who, what and how it ended.
type AuditRecord struct {
	Time       time.Time `json:"time"`
	Surface    string    `json:"surface"`
	Session    string    `json:"session,omitempty"`
	Principal  string    `json:"principal,omitempty"`
	Operation  string    `json:"operation"`
	Code       string    `json:"code,omitempty"` // error code, "" on success
	DurationMs float64   `json:"duration_ms"`
}

// Result is the outcome of one dispatch.
type Result struct {
	Output   any
	Err      *errs.Error
	Duration time.Duration
	// Bytes is the size of Output as JSON (the size governor measures it;
	// the calls log and the trace record it as bytes_out).
	Bytes int
}

// DefaultMaxResultBytes bounds any single result.
const DefaultMaxResultBytes = 4 << 20

// Call runs one operation through the shared pipeline, one home for each
// cross-cutting check, in this order: authorize (scope, vault, toolset) →
// admit (rate limit and concurrency) → write gate → decode and validate →
// the call's own scope (ScopeFor) → human confirmation of destructive
// calls → handler → response-size governor; the calls log, metrics and
// the trace observe every outcome. Every surface calls this and nothing
// else.
func (r *Registry) Call(ctx context.Context, env *Env, caller Caller, name string, raw json.RawMessage) (res Result) {
	start := time.Now()
	ctx, obs := env.observeStart(ctx, r, caller, name, raw)
	defer func() {
		env.audit(caller, name, start, res)
		obs.end(res)
	}()
	fail := func(err *errs.Error) Result { return Result{Err: err, Duration: time.Since(start)} }
	op, ok := r.Get(name)
	if !ok {
		return fail(errs.New(errs.CodeUnknownOp, "unknown operation %q", name))
	}
	stage := obs.stage(ctx, "authorize")
	err := env.authorize(caller, op, raw)
	stage()
	if err != nil {
		return fail(err)
	}
	release, err := env.admit(caller, op)
	if err != nil {
		return fail(err)
	}
	defer release()
	if err := env.gate(op, raw); err != nil {
		return fail(err)
	}
	ctx = WithCaller(ctx, caller)
	raw, confirmID, err := splitConfirmation(op, raw)
	if err != nil {
		return fail(err)
	}
	stage = obs.stage(ctx, "decode")
	in, derr := op.Decode(raw)
	stage()
	if derr != nil {
		return fail(errs.As(derr))
	}
	scope := op.CallScope(ctx, env, in)
	if p := caller.Principal; p != nil && !p.IsOwner() {
		if err := scopeError(p, op, scope); err != nil {
			return fail(err)
		}
	}
	if scope == auth.ScopeDestructive {
		stage = obs.stage(ctx, "confirm")
		err := env.confirmGate(ctx, r, caller, op, raw, in, confirmID)
		stage()
		if err != nil {
			return fail(err)
		}
	}
	stage = obs.stage(ctx, "handler")
	res = r.invoke(ctx, env, op, in, start)
	stage()
	return res
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
	n := 0
	if b, err := json.Marshal(out); err == nil {
		if len(b) > limit {
			return Result{Err: errs.New(errs.CodeTooLarge, "result of %s is %d bytes, over the %d-byte limit; narrow the request (limit, max_chars, a line range or a cursor)", op.Name, len(b), limit).
				With("bytes", len(b)).With("limit", limit), Duration: time.Since(start)}
		}
		n = len(b)
	}
	return Result{Output: out, Duration: time.Since(start), Bytes: n}
}

func (e *Env) audit(c Caller, op string, start time.Time, res Result) {
	if e.Audit == nil {
		return
	}
	rec := AuditRecord{Time: start.UTC(), Surface: c.Surface, Session: c.Session, Principal: c.Subject(), Operation: op,
		DurationMs: float64(time.Since(start).Microseconds()) / 1000}
	if res.Err != nil {
		rec.Code = res.Err.Code
	}
	e.Audit(rec)
}

type streamKey struct{}

// WithStream makes streaming AI operations (ai_ask, ai_summarize) report
// progress to fn: "ai.partial" {text}, "ai.citation", "ai.usage". The
// final result is the operation's normal output.
func WithStream(ctx context.Context, fn func(event string, data any)) context.Context {
	return context.WithValue(ctx, streamKey{}, fn)
}

// StreamFrom returns the progress callback WithStream set (nil if none).
func StreamFrom(ctx context.Context) func(event string, data any) {
	fn, _ := ctx.Value(streamKey{}).(func(string, any))
	return fn
}
