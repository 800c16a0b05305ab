package ops

import (
	"context"
	"encoding/json"
)

// callObs observes one call: the calls log, metrics and the trace.
type callObs struct{}

// observeStart begins observing a call.
//
// TODO(observe): calls log, Prometheus metrics, OpenTelemetry spans.
func (e *Env) observeStart(ctx context.Context, c Caller, name string, raw json.RawMessage) (context.Context, *callObs) {
	return ctx, &callObs{}
}

// stage starts a pipeline stage; the returned function ends it.
func (o *callObs) stage(ctx context.Context, name string) func() { return func() {} }

// end records the call's outcome.
func (o *callObs) end(res Result) {}
