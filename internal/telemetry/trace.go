package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names loci's tracer (the instrumentation scope).
const TracerName = "github.com/loci-dev/loci"

// Tracing is a tracer provider loci set up, and how to stop it.
type Tracing struct {
	Tracer   trace.Tracer
	provider *sdktrace.TracerProvider
}

// TracingEnabled reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, or the traces-only
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and OTEL_SDK_DISABLED is not true.
func TracingEnabled(getenv func(string) string) bool {
	if getenv("OTEL_SDK_DISABLED") == "true" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// StartTracing sets up OTLP/HTTP trace export when TracingEnabled, and
// returns nil otherwise: then nothing of OpenTelemetry is initialised and
// the pipeline skips every span. The exporter (otlpClient, binary protobuf
// over HTTP) reads the standard OTEL_EXPORTER_OTLP_* variables (endpoint,
// headers, timeout, compression, TLS); spans are batched. Nothing is
// registered globally.
func StartTracing(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	if !TracingEnabled(getenv) {
		return nil, nil
	}
	cfg, err := otlpConfigFromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry trace exporter: %w", err)
	}
	cfg.userAgent = "loci/" + version
	return startTracingWith(ctx, cfg, version)
}

func startTracingWith(ctx context.Context, cfg otlpConfig, version string) (*Tracing, error) {
	exp, err := otlptrace.New(ctx, newOTLPClient(cfg))
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "loci"), attribute.String("service.version", version)),
		resource.WithFromEnv()) // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	if err != nil {
		res = resource.Default()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return NewTracing(tp), nil
}

// NewTracing wraps a tracer provider (tests pass one with an in-memory
// exporter).
func NewTracing(tp *sdktrace.TracerProvider) *Tracing {
	return &Tracing{Tracer: tp.Tracer(TracerName), provider: tp}
}

// Shutdown exports the spans still batched and stops the provider.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
