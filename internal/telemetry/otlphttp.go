package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpClient sends spans to an OTLP/HTTP collector as binary protobuf
// (POST <endpoint>, Content-Type application/x-protobuf), the transport
// otlptracehttp implements. It is loci's own so that the binary does not
// link otlptracehttp, whose configuration and generated collector service
// pull in gRPC and grpc-gateway (their package inits ran in every loci
// process, traced or not). It implements otlptrace.Client.
type otlpClient struct {
	cfg    otlpConfig
	client *http.Client
}

// otlpConfig is what the standard OTEL_EXPORTER_OTLP_* variables say.
type otlpConfig struct {
	url         string
	headers     map[string]string
	gzip        bool
	timeout     time.Duration
	tls         *tls.Config // nil: the defaults
	userAgent   string
	backoffBase time.Duration // first wait before a retry
	// sleep waits d before a retry, or returns ctx's cause when ctx ends
	// first; nil is a real timer (tests give their own, so the give-up
	// path is checked without racing a wall clock).
	sleep func(ctx context.Context, d time.Duration) error
}

// otlpTracesPath is appended to OTEL_EXPORTER_OTLP_ENDPOINT (not to the
// traces-only endpoint, which is used as given).
const otlpTracesPath = "v1/traces"

// otlpConfigFromEnv reads the OTLP exporter's variables, the
// traces-specific ones (OTEL_EXPORTER_OTLP_TRACES_*) winning over the
// general ones: ENDPOINT, HEADERS (key=value pairs separated by commas,
// percent-decoded), TIMEOUT (milliseconds, default 10 s), COMPRESSION
// (gzip or none), INSECURE (true: plain http), CERTIFICATE (a PEM file of
// CAs to trust), CLIENT_CERTIFICATE and CLIENT_KEY (PEM files).
func otlpConfigFromEnv(getenv func(string) string) (otlpConfig, error) {
	get := func(name string) string {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
	}
	cfg := otlpConfig{timeout: 10 * time.Second, backoffBase: 500 * time.Millisecond}
	var u *url.URL
	var err error
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		if u, err = parseOTLPURL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", v); err != nil {
			return cfg, err
		}
		if u.Path == "" {
			u.Path = "/"
		}
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		if u, err = parseOTLPURL("OTEL_EXPORTER_OTLP_ENDPOINT", v); err != nil {
			return cfg, err
		}
		u.Path = path.Join("/", u.Path, otlpTracesPath)
	} else {
		return cfg, errors.New("no OTLP endpoint is set")
	}
	if b, err := strconv.ParseBool(get("INSECURE")); err == nil && b {
		u.Scheme = "http"
	}
	cfg.url = u.String()
	cfg.headers = parseOTLPHeaders(get("HEADERS"))
	switch c := strings.ToLower(get("COMPRESSION")); c {
	case "", "none":
	case "gzip":
		cfg.gzip = true
	default:
		return cfg, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION %q: want gzip or none", c)
	}
	if v := get("TIMEOUT"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return cfg, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT %q: want a positive number of milliseconds", v)
		}
		cfg.timeout = time.Duration(ms) * time.Millisecond
	}
	if u.Scheme == "https" {
		tc, err := otlpTLS(get("CERTIFICATE"), get("CLIENT_CERTIFICATE"), get("CLIENT_KEY"))
		if err != nil {
			return cfg, err
		}
		cfg.tls = tc
	}
	return cfg, nil
}

func parseOTLPURL(name, v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: want an http:// or https:// URL", name, v)
	}
	return u, nil
}

// parseOTLPHeaders reads "k1=v1,k2=v2" (W3C baggage-like, as the OTLP
// exporter specification says), percent-decoding keys and values; a pair
// without '=', with an empty key, or that does not decode is skipped.
func parseOTLPHeaders(s string) map[string]string {
	h := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		k, errK := url.PathUnescape(strings.TrimSpace(k))
		v, errV := url.PathUnescape(strings.TrimSpace(v))
		if errK != nil || errV != nil || k == "" {
			continue
		}
		h[k] = v
	}
	return h
}

func otlpTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE %s: no PEM certificate", caFile)
		}
		tc.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/CLIENT_KEY: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

func newOTLPClient(cfg otlpConfig) *otlpClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.tls != nil {
		tr.TLSClientConfig = cfg.tls
	}
	return &otlpClient{cfg: cfg, client: &http.Client{Transport: tr}}
}

func (c *otlpClient) Start(context.Context) error { return nil }

func (c *otlpClient) Stop(context.Context) error {
	c.client.CloseIdleConnections()
	return nil
}

// encodeExportRequest encodes an ExportTraceServiceRequest: its only field
// (1, resource_spans) repeated.
func encodeExportRequest(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	for _, rs := range spans {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}

// UploadTraces sends one export request, retrying a refused one (429, 502,
// 503, 504, or no connection) with doubling waits (or the server's
// Retry-After) until the configured timeout has passed since the first
// attempt.
func (c *otlpClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := encodeExportRequest(spans)
	if err != nil {
		return fmt.Errorf("OTLP export: %w", err)
	}
	if c.cfg.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("OTLP export: %w", err)
		}
		body = buf.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	wait := c.cfg.backoffBase
	for {
		retryAfter, err := c.send(ctx, body)
		if err == nil {
			return nil
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return err
		}
		if retryAfter > 0 {
			wait = retryAfter
		}
		sleep := c.cfg.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if cause := sleep(ctx, wait); cause != nil {
			return fmt.Errorf("%w (gave up: %v)", err, cause)
		}
		wait *= 2
	}
}

// sleepCtx waits d, or returns ctx's cause if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

type permanentError struct{ error }

// send posts body once; a retryable failure comes with how long the server
// asked to wait (0: it did not say).
func (c *otlpClient) send(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.url, bytes.NewReader(body))
	if err != nil {
		return 0, permanentError{fmt.Errorf("OTLP export: %w", err)}
	}
	for k, v := range c.cfg.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if c.cfg.userAgent != "" {
		req.Header.Set("User-Agent", c.cfg.userAgent)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("OTLP export: %w", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, nil
	}
	err = fmt.Errorf("OTLP export to %s: %s: %q", c.cfg.url, resp.Status, msg)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		var after time.Duration
		if s, e := strconv.Atoi(resp.Header.Get("Retry-After")); e == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return after, err
	}
	return 0, permanentError{err}
}
