package cli

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/telemetry"
)

// observation is what a long-running server (loci serve, loci mcp) sets up
// to be watched: the calls log of every vault, the metrics (serve only)
// and, when an OTLP endpoint is configured, traces.
type observation struct {
	obs *ops.Observer
	// metricsToken is the metrics-only token from the variable
	// server.metrics_token_env names ("" when none).
	metricsToken string
}

// observe sets env.Obs for a server. cfg is the server section of the
// user's config (any served vault's resolved config carries it).
func observe(ctx context.Context, env *ops.Env, cfg config.Server, metrics bool, logger *slog.Logger) (*observation, error) {
	tr, err := telemetry.StartTracing(ctx, os.Getenv, Version)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInvalidInput, "cannot set up OpenTelemetry tracing (OTEL_EXPORTER_OTLP_* variables)")
	}
	if tr != nil {
		logger.Info("tracing: spans go to the OTLP endpoint", "endpoint", firstNonEmpty(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")))
	}
	o := &observation{}
	if metrics && cfg.MetricsTokenEnv != "" {
		o.metricsToken = os.Getenv(cfg.MetricsTokenEnv)
		switch {
		case o.metricsToken == "":
			logger.Warn("server.metrics_token_env names an empty variable: only principals with the admin scope can read /metrics", "variable", cfg.MetricsTokenEnv)
		case len(o.metricsToken) < server.MinTokenLen:
			tr.Shutdown(ctx)
			return nil, errs.New(errs.CodeInvalidInput, "the metrics token in %s is too short (%d characters; at least %d)", cfg.MetricsTokenEnv, len(o.metricsToken), server.MinTokenLen).
				With("variable", cfg.MetricsTokenEnv)
		}
	}
	var failures atomic.Int64
	o.obs = ops.NewObserver(env, ops.ObserveOptions{
		CallsLog: true, CallsLogMaxBytes: cfg.CallsLogMaxBytes, Metrics: metrics, Tracing: tr,
		OnCallsLogError: func(err error) {
			// Log the 1st, 2nd, 4th, 8th... failure: a full disk must not
			// flood stderr.
			if n := failures.Add(1); n&(n-1) == 0 {
				logger.Warn("calls log: cannot write", "failures", n, "error", err)
			}
		},
	})
	env.Obs = o.obs
	return o, nil
}
