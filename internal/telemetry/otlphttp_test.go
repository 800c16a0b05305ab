package telemetry

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// collector is a real OTLP/HTTP receiver on 127.0.0.1: it decodes each
// ExportTraceServiceRequest and keeps what it got.
type collector struct {
	mu       sync.Mutex
	requests []*http.Request
	spans    []*tracepb.ResourceSpans
	refuse   int // answer 503 to this many requests first
	status   int // then answer this (0: 200)
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r)
	if c.refuse > 0 {
		c.refuse--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if c.status != 0 {
		http.Error(w, "bad request body", c.status)
		return
	}
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		rd = zr
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			http.Error(w, "not an ExportTraceServiceRequest", 400)
			return
		}
		b = b[n:]
		m, n := protowire.ConsumeBytes(b)
		if n < 0 {
			http.Error(w, "truncated", 400)
			return
		}
		b = b[n:]
		rs := &tracepb.ResourceSpans{}
		if err := proto.Unmarshal(m, rs); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		c.spans = append(c.spans, rs)
	}
}

func TestTracingExportsOverHTTP(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "") // the resource reads these from the process
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	for _, gz := range []bool{false, true} {
		col := &collector{refuse: 1}
		srv := httptest.NewServer(col)
		env := map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL + "/base",
			"OTEL_EXPORTER_OTLP_HEADERS":  "authorization=Bearer%20abc, x-team = notes ,broken,=novalue",
		}
		if gz {
			env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
		}
		get := func(k string) string { return env[k] }
		cfg, err := otlpConfigFromEnv(get)
		if err != nil {
			t.Fatal(err)
		}
		cfg.backoffBase = time.Millisecond
		cfg.userAgent = "loci/test"
		tr, err := startTracingWith(context.Background(), cfg, "test")
		if err != nil {
			t.Fatal(err)
		}
		_, span := tr.Tracer.Start(context.Background(), "search_notes")
		span.End()
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatalf("shutdown (gzip %v): %v", gz, err)
		}
		srv.Close()
		if len(col.requests) != 2 {
			t.Fatalf("gzip %v: %d requests, want 2 (one refused with 503, one retried)", gz, len(col.requests))
		}
		r := col.requests[1]
		if r.URL.Path != "/base/v1/traces" || r.Method != "POST" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("request %s %s %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		if r.Header.Get("Authorization") != "Bearer abc" || r.Header.Get("X-Team") != "notes" || r.Header.Get("User-Agent") != "loci/test" {
			t.Errorf("headers %v", r.Header)
		}
		if len(col.spans) != 1 {
			t.Fatalf("%d resource spans", len(col.spans))
		}
		rs := col.spans[0]
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		if service != "loci" {
			t.Errorf("service.name %q", service)
		}
		if len(rs.ScopeSpans) != 1 || rs.ScopeSpans[0].GetScope().GetName() != TracerName ||
			len(rs.ScopeSpans[0].Spans) != 1 || rs.ScopeSpans[0].Spans[0].GetName() != "search_notes" {
			t.Errorf("spans %v", rs.ScopeSpans)
		}
	}
}

func TestOTLPRefusedRequestIsNotRetried(t *testing.T) {
	col := &collector{status: http.StatusBadRequest}
	srv := httptest.NewServer(col)
	defer srv.Close()
	cfg, err := otlpConfigFromEnv(func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" {
			return srv.URL
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newOTLPClient(cfg)
	err = c.UploadTraces(context.Background(), []*tracepb.ResourceSpans{{}})
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "bad request body") {
		t.Errorf("error %v", err)
	}
	if len(col.requests) != 1 || col.requests[0].URL.Path != "/" {
		t.Errorf("%d requests", len(col.requests))
	}
}

func TestOTLPGivesUpAtTimeout(t *testing.T) {
	col := &collector{refuse: 1 << 30}
	srv := httptest.NewServer(col)
	defer srv.Close()
	cfg, err := otlpConfigFromEnv(func(k string) string {
		switch k {
		case "OTEL_EXPORTER_OTLP_ENDPOINT":
			return srv.URL
		case "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT":
			return "60000"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	// The export's deadline is the configured timeout; the wait before the
	// third retry stands for that deadline passing (no wall-clock race).
	cfg.backoffBase = time.Millisecond
	var waits []time.Duration
	cfg.sleep = func(ctx context.Context, d time.Duration) error {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Minute {
			t.Errorf("export context deadline %v, %v: want at most the 60 s timeout", dl, ok)
		}
		waits = append(waits, d)
		if len(waits) == 3 {
			return context.DeadlineExceeded
		}
		return nil
	}
	err = newOTLPClient(cfg).UploadTraces(context.Background(), []*tracepb.ResourceSpans{{}})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "gave up") {
		t.Errorf("error %v", err)
	}
	if len(col.requests) != 3 {
		t.Errorf("%d requests, want 3 (one, then a retry after each of the first two waits)", len(col.requests))
	}
	if want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}; fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("waits %v, want doubling %v", waits, want)
	}
}

func TestOTLPConfigFromEnv(t *testing.T) {
	cases := []struct {
		env     map[string]string
		url     string
		timeout time.Duration
		gzip    bool
		err     string
	}{
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318"}, url: "http://h:4318/v1/traces", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h/otlp/"}, url: "https://h/otlp/v1/traces", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:9/t"}, url: "http://b:9/t", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h", "OTEL_EXPORTER_OTLP_INSECURE": "true"}, url: "http://h/v1/traces", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "GZIP"}, url: "http://h/v1/traces", timeout: 2500 * time.Millisecond, gzip: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "h:4318"}, err: "want an http"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://h"}, err: "want an http"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_TIMEOUT": "-1"}, err: "milliseconds"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, err: "gzip or none"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, err: "CERTIFICATE"},
		{env: map[string]string{}, err: "no OTLP endpoint"},
	}
	for _, c := range cases {
		cfg, err := otlpConfigFromEnv(func(k string) string { return c.env[k] })
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil || cfg.url != c.url || cfg.timeout != c.timeout || cfg.gzip != c.gzip {
			t.Errorf("%v: %+v %v", c.env, cfg, err)
		}
	}
	// StartTracing reports a bad configuration instead of exporting nowhere.
	if _, err := StartTracing(context.Background(), func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return "localhost:4318"
		}
		return ""
	}, "test"); err == nil {
		t.Error("an endpoint without a scheme was accepted")
	}
}

func TestParseOTLPHeaders(t *testing.T) {
	got := parseOTLPHeaders("a=1,b = x%2Cy , c, =d, e=%zz, f=, g=h=i")
	want := map[string]string{"a": "1", "b": "x,y", "f": "", "g": "h=i"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func FuzzParseOTLPHeaders(f *testing.F) {
	for _, s := range []string{"", "a=b", "a=b,c=d", "%=", "a=%2", ",,=,", "k=v=w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for k := range parseOTLPHeaders(s) {
			if k == "" {
				t.Fatalf("empty key from %q", s)
			}
		}
	})
}
