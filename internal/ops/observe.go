package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/telemetry"
)

// Observer watches every call the pipeline dispatches: one line in the
// calls log of the call's vault, the Prometheus call metrics, and a span
// per call with a child per pipeline stage. Each part is optional; a nil
// Observer (Env.Obs unset) costs one nil check per call.
type Observer struct {
	// Calls is the calls log (nil: none).
	Calls *telemetry.CallsLog
	// Metrics are the server's metrics (nil: none).
	Metrics *telemetry.Metrics
	// Tracer makes the spans (nil: no tracing; nothing is allocated for
	// it then).
	Tracer trace.Tracer

	closers []func()
}

// ObserveOptions say what NewObserver sets up.
type ObserveOptions struct {
	// CallsLog turns the calls log on, rotated past CallsLogMaxBytes
	// (default 16 MiB).
	CallsLog         bool
	CallsLogMaxBytes int64
	// OnCallsLogError hears about lines that could not be written.
	OnCallsLogError func(error)
	// Metrics turns the Prometheus metrics on: calls, latency, rate-limit
	// refusals, the calls log's losses, and each vault's index and watcher
	// figures.
	Metrics bool
	// Tracing, when set, makes a span per call.
	Tracing *telemetry.Tracing
}

// NewObserver sets up the observation of env's calls; set the result as
// env.Obs. Env.Close flushes the calls log and ends the tracing.
func NewObserver(env *Env, o ObserveOptions) *Observer {
	obs := &Observer{}
	if o.CallsLog {
		obs.Calls = telemetry.NewCallsLog(telemetry.CallsLogOptions{
			MaxBytes: o.CallsLogMaxBytes, Place: env.callPlacement, OnError: o.OnCallsLogError,
		})
		obs.closers = append(obs.closers, obs.Calls.Close)
	}
	if o.Metrics {
		obs.Metrics = telemetry.NewMetrics()
		obs.Metrics.Vaults(env.VaultFigures)
		if c := obs.Calls; c != nil {
			obs.Metrics.CounterFunc("loci_calls_log_dropped_total", "Calls log lines lost to a full queue.",
				func() float64 { return float64(c.Dropped()) })
			obs.Metrics.CounterFunc("loci_calls_log_failed_total", "Calls log lines a write refused (see the server log).",
				func() float64 { return float64(c.Failed()) })
		}
	}
	if t := o.Tracing; t != nil {
		obs.Tracer = t.Tracer
		obs.closers = append(obs.closers, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			t.Shutdown(ctx)
		})
	}
	return obs
}

// Close writes the calls log's queued lines and ends the tracing.
func (o *Observer) Close() {
	if o == nil {
		return
	}
	for _, c := range o.closers {
		c()
	}
	o.closers = nil
}

// callObs observes one call.
type callObs struct {
	o      *Observer
	caller Caller
	name   string
	raw    json.RawMessage
	start  time.Time
	span   trace.Span
	reg    *Registry
}

// noStage ends a stage that is not traced.
func noStage() {}

// observeStart begins observing a call: the call's span, when tracing.
// With no Observer it returns a nil *callObs, whose methods do nothing.
func (e *Env) observeStart(ctx context.Context, r *Registry, c Caller, name string, raw json.RawMessage) (context.Context, *callObs) {
	o := e.Obs
	if o == nil {
		return ctx, nil
	}
	co := &callObs{o: o, caller: c, name: name, raw: raw, start: time.Now(), reg: r}
	if o.Tracer != nil {
		vault, _ := e.callVault(raw)
		ctx, co.span = o.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("loci.op", name),
			attribute.String("loci.principal", c.Subject()),
			attribute.String("loci.surface", c.Surface),
			attribute.String("loci.vault", vault),
		))
	}
	return ctx, co
}

// stage starts a pipeline stage (a child span when tracing); the returned
// function ends it.
func (o *callObs) stage(ctx context.Context, name string) func() {
	if o == nil || o.span == nil {
		return noStage
	}
	_, sp := o.o.Tracer.Start(ctx, name)
	return func() { sp.End() }
}

// end records the call's outcome: its metrics, its calls log line, and
// the end of its span.
func (o *callObs) end(res Result) {
	if o == nil {
		return
	}
	code := ""
	if res.Err != nil {
		code = res.Err.Code
	}
	principal := o.caller.Subject()
	dur := res.Duration
	if dur == 0 {
		dur = time.Since(o.start)
	}
	if m := o.o.Metrics; m != nil {
		m.ObserveCall(o.name, principal, code, o.class(res), dur)
	}
	if l := o.o.Calls; l != nil {
		via := auth.ViaLocal
		if p := o.caller.Principal; p != nil {
			via = p.Via
		}
		l.Log(telemetry.CallRecord{
			Time: o.start.UTC(), Principal: principal, Via: via, Surface: o.caller.Surface, Session: o.caller.Session,
			Op: o.name, Code: code, DurationMs: float64(dur.Microseconds()) / 1000, BytesOut: res.Bytes,
		}, o.raw)
	}
	if sp := o.span; sp != nil {
		sp.SetAttributes(attribute.String("loci.code", code), attribute.Int("loci.bytes_out", res.Bytes))
		if res.Err != nil {
			sp.SetStatus(codes.Error, res.Err.Code)
		}
		sp.End()
	}
}

// class is the call's rate-limit class for the rate_limited metric: the
// one the refusal names in its details, else the operation's (ai, write
// or read).
func (o *callObs) class(res Result) string {
	if res.Err == nil || res.Err.Code != "rate_limited" {
		return ""
	}
	if c, ok := res.Err.Details["class"].(string); ok && c != "" {
		return c
	}
	op, ok := o.reg.Get(o.name)
	switch {
	case !ok:
		return ""
	case op.Toolset == ToolsetAI:
		return "ai"
	case op.IsWrite():
		return "write"
	}
	return "read"
}

// callVault is the vault a call's arguments name: their "vault" field,
// else the default vault. found is false when the name matches no served
// vault (the name is then returned as given).
func (e *Env) callVault(raw json.RawMessage) (name string, vh *VaultHandle) {
	if len(e.Vaults) == 0 {
		return "", nil
	}
	if bytes.Contains(raw, []byte(`"vault"`)) {
		var named struct {
			Vault string `json:"vault"`
		}
		if json.Unmarshal(raw, &named) == nil && named.Vault != "" {
			for _, v := range e.Vaults {
				if v.Name == named.Vault {
					return v.Name, v
				}
			}
			return named.Vault, nil
		}
	}
	return e.Vaults[0].Name, e.Vaults[0]
}

// callPlacement puts a call's calls log line in its vault's index folder;
// a call naming no served vault goes to the default vault's, under the
// name it gave.
func (e *Env) callPlacement(args []byte) (telemetry.Placement, bool) {
	name, vh := e.callVault(args)
	if vh == nil {
		if len(e.Vaults) == 0 {
			return telemetry.Placement{}, false
		}
		vh = e.Vaults[0]
	}
	return telemetry.Placement{Vault: name, Dir: vh.Index.Loc}, true
}

// VaultFigures are each served vault's index and watcher figures for
// /metrics, from the state index_status reports.
func (e *Env) VaultFigures() []telemetry.VaultFigures {
	now := time.Now()
	out := make([]telemetry.VaultFigures, 0, len(e.Vaults))
	for _, vh := range e.Vaults {
		st := vh.State()
		f := telemetry.VaultFigures{Vault: vh.Name, Notes: -1, Syncing: st.Running, SyncFailed: st.LastError != "",
			LastSync: st.LastSyncDuration}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if n, err := vh.Index.NoteCount(ctx); err == nil {
			f.Notes = n
		}
		cancel()
		if j := vh.Index.EmbedJobState(); j != nil {
			ef := &telemetry.EmbedFigures{Running: j.Running, Failed: j.LastError != "", Rate: j.Rate}
			if j.Running {
				ef.Pending = max(j.Todo-j.Done, 0)
			}
			f.Embed = ef
		}
		if w := vh.WatchState(); w != nil {
			wf := &telemetry.WatcherFigures{Up: w.State == "watching" || w.State == "degraded", Queue: w.Queue,
				Events: w.Events, Batches: w.Batches, Overflows: w.Overflows}
			if !w.PendingSince.IsZero() && w.Queue > 0 {
				wf.Lag = now.Sub(w.PendingSince)
			}
			if !w.Heartbeat.IsZero() {
				wf.HeartbeatAge = now.Sub(w.Heartbeat)
			}
			f.Watcher = wf
		}
		out = append(out, f)
	}
	return out
}
