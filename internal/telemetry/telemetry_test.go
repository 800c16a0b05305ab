package telemetry

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/safefs"
)

func TestArgsSHA256Canonical(t *testing.T) {
	same := []string{`{"b":1,"a":{"y":[1,2],"x":"<&>"}}`, "{ \"a\" : {\"x\":\"<&>\", \"y\":[1, 2]},\n\"b\":1 }"}
	if ArgsSHA256([]byte(same[0])) != ArgsSHA256([]byte(same[1])) {
		t.Error("the same arguments hash differently")
	}
	if ArgsSHA256(nil) != ArgsSHA256([]byte("{}")) || ArgsSHA256([]byte("null")) != ArgsSHA256([]byte(" {} ")) {
		t.Error("missing arguments do not hash as {}")
	}
	if ArgsSHA256([]byte(`{"n":1.0}`)) == ArgsSHA256([]byte(`{"n":1}`)) {
		t.Error("numbers are not kept as written")
	}
	if ArgsSHA256([]byte(`{"a":1`)) == ArgsSHA256([]byte(`{"a":1}`)) {
		t.Error("broken JSON hashes like its repair")
	}
}

func loc(t *testing.T) safefs.Loc {
	dir := t.TempDir()
	return safefs.Loc{Root: safefs.Root(dir), Rel: ".loci"}
}

// TestCallsLogDropsWhenFull: a writer that cannot keep up never blocks the
// caller: lines beyond the queue are dropped and counted, and the ones
// queued are still written at Close.
func TestCallsLogDropsWhenFull(t *testing.T) {
	dst := loc(t)
	gate := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	l := NewCallsLog(CallsLogOptions{Queue: 4, Interval: time.Hour, Place: func([]byte) (Placement, bool) {
		once.Do(func() { close(entered) })
		<-gate // the writer is stuck on its first line
		return Placement{Vault: "v", Dir: dst}, true
	}})
	l.Log(CallRecord{Op: "first"}, nil)
	flushed := make(chan struct{})
	go func() { l.Flush(); close(flushed) }()
	<-entered
	for range 10 {
		l.Log(CallRecord{Op: "more"}, []byte(`{}`))
	}
	if d := l.Dropped(); d != 6 {
		t.Errorf("dropped %d, want 6 (10 lines, 4 queued)", d)
	}
	close(gate)
	<-flushed
	l.Close()
	b, err := os.ReadFile(filepath.Join(dst.Path(), CallsLogName))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 5 || l.Written() != 5 {
		t.Errorf("%d lines written (counted %d), want 5", n, l.Written())
	}
	l.Close() // twice is fine
	l.Flush() // and so is a flush after close
	l.Log(CallRecord{Op: "late"}, nil)
	if d := l.Dropped(); d != 7 {
		t.Errorf("a line after close: dropped %d, want 7", d)
	}
}

// TestCallsLogWakesWhenHalfFull: between its (here hour-long) intervals
// the writer is woken by a queue more than half full, so that a burst is
// written rather than dropped.
func TestCallsLogWakesWhenHalfFull(t *testing.T) {
	dst := loc(t)
	l := NewCallsLog(CallsLogOptions{Queue: 8, Interval: time.Hour, Place: func([]byte) (Placement, bool) {
		return Placement{Vault: "v", Dir: dst}, true
	}})
	defer l.Close()
	for range 5 {
		l.Log(CallRecord{Op: "x"}, nil)
	}
	deadline := time.Now().Add(30 * time.Second)
	for l.Written() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("the writer did not wake: %d written", l.Written())
		}
		runtime.Gosched()
	}
}

// TestCallsLogRefusesLink: a link planted at calls.log is never appended
// through; the line is counted as failed and reported.
func TestCallsLogRefusesLink(t *testing.T) {
	dst := loc(t)
	if err := dst.MkdirAll(0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("keep\n"), 0o600)
	if err := os.Symlink(target, filepath.Join(dst.Path(), CallsLogName)); err != nil {
		t.Skip(err)
	}
	var mu sync.Mutex
	var errsSeen []error
	l := NewCallsLog(CallsLogOptions{Place: func([]byte) (Placement, bool) { return Placement{Vault: "v", Dir: dst}, true },
		OnError: func(err error) { mu.Lock(); errsSeen = append(errsSeen, err); mu.Unlock() }})
	l.Log(CallRecord{Op: "x"}, nil)
	l.Close()
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("written through the link: %q", b)
	}
	if l.Failed() != 1 || len(errsSeen) == 0 {
		t.Errorf("failed = %d, errors %v", l.Failed(), errsSeen)
	}
}

func TestMetricsCounts(t *testing.T) {
	m := NewMetrics()
	m.ObserveCall("search_notes", "a", "", "", time.Millisecond)
	m.ObserveCall("search_notes", "a", "rate_limited", "read", time.Millisecond)
	m.ObserveCall("write_note", "b", "rate_limited", "write", time.Millisecond)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"loci_calls_total", []string{"op", "search_notes", "principal", "a", "code", "ok"}, 1},
		{"loci_calls_total", []string{"op", "search_notes", "principal", "a", "code", "rate_limited"}, 1},
		{"loci_rate_limited_total", []string{"principal", "a", "class", "read"}, 1},
		{"loci_rate_limited_total", []string{"principal", "b", "class", "write"}, 1},
		{"loci_call_duration_seconds", []string{"op", "search_notes"}, 2},
	} {
		if v, ok := Value(m.Registry(), c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (%v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	if _, ok := Value(m.Registry(), "loci_rate_limited_total", "principal", "a", "class", "write"); ok {
		t.Error("a series that never happened")
	}
}

func TestVaultFiguresExposed(t *testing.T) {
	m := NewMetrics()
	m.Vaults(func() []VaultFigures {
		return []VaultFigures{
			{Vault: "notes", Notes: 42, LastSync: 1500 * time.Millisecond,
				Watcher: &WatcherFigures{Up: true, Queue: 3, Lag: 2 * time.Second, Events: 9, Batches: 4},
				Embed:   &EmbedFigures{Running: true, Pending: 120, Rate: 3.5}},
			{Vault: "work", Notes: -1, Syncing: true},
		}
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	for _, line := range []string{
		`loci_index_notes{vault="notes"} 42`,
		`loci_index_last_sync_duration_seconds{vault="notes"} 1.5`,
		`loci_index_sync_running{vault="work"} 1`,
		`loci_watcher_queue{vault="notes"} 3`,
		`loci_watcher_lag_seconds{vault="notes"} 2`,
		`loci_watcher_events_total{vault="notes"} 9`,
		`loci_watcher_up{vault="notes"} 1`,
		`loci_embed_running{vault="notes"} 1`,
		`loci_embed_failed{vault="notes"} 0`,
		`loci_embed_pending{vault="notes"} 120`,
		`loci_embed_rate{vault="notes"} 3.5`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("missing %q", line)
		}
	}
	if strings.Contains(text, `loci_index_notes{vault="work"}`) || strings.Contains(text, `loci_watcher_up{vault="work"}`) || strings.Contains(text, `loci_embed_running{vault="work"}`) {
		t.Error("figures of what could not be read, or of no watcher, are shown")
	}
}

func TestTracingOffWithoutEndpoint(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	tr, err := StartTracing(context.Background(), get, "test")
	if tr != nil || err != nil {
		t.Fatalf("tracing without an endpoint: %v %v", tr, err)
	}
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:1"
	env["OTEL_SDK_DISABLED"] = "true"
	if TracingEnabled(get) {
		t.Error("OTEL_SDK_DISABLED ignored")
	}
	delete(env, "OTEL_SDK_DISABLED")
	if !TracingEnabled(get) {
		t.Error("endpoint ignored")
	}
	// With an endpoint the exporter is built (it connects only to send);
	// with no spans, shutdown sends nothing.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", env["OTEL_EXPORTER_OTLP_ENDPOINT"])
	tr, err = StartTracing(context.Background(), get, "test")
	if err != nil || tr == nil || tr.Tracer == nil {
		t.Fatalf("tracing with an endpoint: %v %v", tr, err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
