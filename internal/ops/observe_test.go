package ops_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/telemetry"
)

const (
	secretNote  = "Okapi-Marmalade-7731 lives in this note's body"
	secretQuery = "zanzibar-quokka-query"
)

var (
	reader = &auth.Principal{Name: "reader-bot", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken}
	writer = &auth.Principal{Name: "writer-bot", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, Via: auth.ViaToken}
)

func observedEnv(t *testing.T, o ops.ObserveOptions) *ops.Env {
	t.Helper()
	env := opstest.WriteEnv(t, map[string]string{"a.md": "# A\n\n" + secretNote + "\n", "b.md": "# B\n\nplain\n"})
	env.Obs = ops.NewObserver(env, o)
	return env
}

func call(env *ops.Env, p *auth.Principal, surface, name, input string) ops.Result {
	return opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: surface, Session: "sess-1", Principal: p}, name, json.RawMessage(input))
}

// callsLog reads the calls log of env's first vault (after a flush).
func callsLog(t *testing.T, env *ops.Env, file string) (raw string, recs []telemetry.CallRecord) {
	t.Helper()
	env.Obs.Calls.Flush()
	b, err := os.ReadFile(filepath.Join(env.Vaults[0].Index.Loc.Path(), file))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r telemetry.CallRecord
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return string(b), recs
}

func TestCallsLogRecordsEveryCall(t *testing.T) {
	env := observedEnv(t, ops.ObserveOptions{CallsLog: true})
	search := `{"query":"` + secretQuery + `","limit":5}`
	if res := call(env, reader, "rest", "search_notes", search); res.Err != nil {
		t.Fatal(res.Err)
	}
	readRes := call(env, reader, "mcp", "read_note", `{"path":"a.md"}`)
	if readRes.Err != nil {
		t.Fatal(readRes.Err)
	}
	if res := call(env, reader, "mcp", "read_note", `{"path":"missing.md"}`); res.Err == nil {
		t.Fatal("read of a missing note succeeded")
	}
	if res := call(env, reader, "mcp", "write_note", `{"path":"c.md","content":"`+secretNote+`","apply":true}`); res.Err == nil || res.Err.Code != errs.CodeForbidden {
		t.Fatalf("reader wrote: %+v", res.Err)
	}
	if res := call(env, writer, "web", "write_note", `{"path":"c.md","content":"`+secretNote+`","apply":true}`); res.Err != nil {
		t.Fatal(res.Err)
	}
	if res := call(env, nil, "cli", "index_status", `{}`); res.Err != nil {
		t.Fatal(res.Err)
	}
	raw, recs := callsLog(t, env, telemetry.CallsLogName)
	want := []struct{ principal, via, surface, op, code string }{
		{"reader-bot", "token", "rest", "search_notes", ""},
		{"reader-bot", "token", "mcp", "read_note", ""},
		{"reader-bot", "token", "mcp", "read_note", errs.CodeNotFound},
		{"reader-bot", "token", "mcp", "write_note", errs.CodeForbidden},
		{"writer-bot", "token", "web", "write_note", ""},
		{"owner", "local", "cli", "index_status", ""},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(recs), len(want), raw)
	}
	vault := env.Vaults[0].Name
	for i, w := range want {
		r := recs[i]
		if r.Principal != w.principal || r.Via != w.via || r.Surface != w.surface || r.Op != w.op || r.Code != w.code ||
			r.Vault != vault || r.Session != "sess-1" || r.Time.IsZero() || r.DurationMs < 0 || len(r.ArgsSHA256) != 64 {
			t.Errorf("line %d = %+v, want %+v in vault %s", i, r, w, vault)
		}
	}
	if recs[0].ArgsSHA256 != telemetry.ArgsSHA256([]byte(search)) {
		t.Errorf("args hash %s is not the hash of the search's arguments", recs[0].ArgsSHA256)
	}
	if recs[1].BytesOut != readRes.Bytes || recs[1].BytesOut < len(secretNote) {
		t.Errorf("bytes_out = %d, want the read's %d", recs[1].BytesOut, readRes.Bytes)
	}
	if recs[2].BytesOut != 0 {
		t.Errorf("a failed call has bytes_out %d", recs[2].BytesOut)
	}
	// Nothing of the arguments, the note or the result is written.
	for _, s := range []string{secretQuery, "Okapi", "Marmalade", "missing.md", "c.md", "a.md"} {
		if strings.Contains(raw, s) {
			t.Errorf("the calls log holds %q:\n%s", s, raw)
		}
	}
}

func TestCallsLogVaultAndCanonicalHash(t *testing.T) {
	env := observedEnv(t, ops.ObserveOptions{CallsLog: true})
	name := env.Vaults[0].Name
	// The same arguments in another order and spacing hash the same.
	a := call(env, nil, "cli", "read_note", `{"path":"a.md","vault":"`+name+`"}`)
	b := call(env, nil, "cli", "read_note", "{ \"vault\": \""+name+"\",\n \"path\": \"a.md\" }")
	if a.Err != nil || b.Err != nil {
		t.Fatal(a.Err, b.Err)
	}
	// A vault that is not served is logged, under its name, in the default
	// vault's log.
	call(env, nil, "cli", "read_note", `{"path":"a.md","vault":"elsewhere"}`)
	_, recs := callsLog(t, env, telemetry.CallsLogName)
	if len(recs) != 3 {
		t.Fatalf("%d lines", len(recs))
	}
	if recs[0].ArgsSHA256 != recs[1].ArgsSHA256 {
		t.Errorf("reordered arguments hash differently: %s %s", recs[0].ArgsSHA256, recs[1].ArgsSHA256)
	}
	if recs[0].Vault != name || recs[2].Vault != "elsewhere" || recs[2].Code != errs.CodeVaultNotFound {
		t.Errorf("vaults: %+v", recs)
	}
}

func TestCallsLogRotates(t *testing.T) {
	const max = 600
	env := observedEnv(t, ops.ObserveOptions{CallsLog: true, CallsLogMaxBytes: max})
	for range 12 {
		call(env, nil, "cli", "index_status", `{}`)
	}
	call(env, nil, "cli", "read_note", `{"path":"b.md"}`)
	raw, recs := callsLog(t, env, telemetry.CallsLogName)
	old, olds := callsLog(t, env, telemetry.CallsLogName+".1")
	if len(raw) > max || len(old) > max {
		t.Errorf("calls.log is %d bytes and calls.log.1 %d, over %d", len(raw), len(old), max)
	}
	if len(recs) == 0 || len(olds) == 0 {
		t.Fatalf("rotation kept %d and %d lines", len(olds), len(recs))
	}
	if last := recs[len(recs)-1]; last.Op != "read_note" {
		t.Errorf("the newest line is %+v", last)
	}
}

// TestCallsLogCloseFlushes: lines queued when the environment closes are
// written, not lost.
func TestCallsLogCloseFlushes(t *testing.T) {
	env := observedEnv(t, ops.ObserveOptions{CallsLog: true})
	for range 50 {
		call(env, reader, "mcp", "index_status", `{}`)
	}
	env.Obs.Close()
	b, err := os.ReadFile(filepath.Join(env.Vaults[0].Index.Loc.Path(), telemetry.CallsLogName))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 50 {
		t.Errorf("%d lines after close, want 50", n)
	}
	// A call after close is dropped and counted, never a crash.
	call(env, reader, "mcp", "index_status", `{}`)
	if d := env.Obs.Calls.Dropped(); d != 1 {
		t.Errorf("dropped = %d", d)
	}
}

func TestCallMetrics(t *testing.T) {
	env := observedEnv(t, ops.ObserveOptions{Metrics: true})
	m := env.Obs.Metrics
	call(env, reader, "rest", "search_notes", `{"query":"plain"}`)
	call(env, reader, "rest", "search_notes", `{"query":"plain"}`)
	call(env, reader, "rest", "write_note", `{"path":"x.md","content":"x","apply":true}`)
	if n := value(t, m, "loci_calls_total", "op", "search_notes", "principal", "reader-bot", "code", "ok"); n != 2 {
		t.Errorf("search_notes ok = %v", n)
	}
	if n := value(t, m, "loci_calls_total", "op", "write_note", "principal", "reader-bot", "code", errs.CodeForbidden); n != 1 {
		t.Errorf("write_note forbidden = %v", n)
	}
	if n := value(t, m, "loci_call_duration_seconds", "op", "search_notes"); n != 2 {
		t.Errorf("search_notes latency count = %v", n)
	}
	if n := value(t, m, "loci_index_notes", "vault", env.Vaults[0].Name); n != 2 {
		t.Errorf("notes = %v", n)
	}
	n, err := testutil.GatherAndCount(m.Registry(), "loci_call_duration_seconds", "loci_index_notes")
	if err != nil || n != 3 { // two latency series (search_notes, write_note), one vault
		t.Errorf("series = %d, %v", n, err)
	}
}

func value(t *testing.T, m *telemetry.Metrics, name string, labels ...string) float64 {
	t.Helper()
	v, ok := telemetry.Value(m.Registry(), name, labels...)
	if !ok {
		t.Errorf("no %s%v", name, labels)
	}
	return v
}

// TestTraceSpans: with a tracer, each call is a span with the call's
// attributes and a child span per pipeline stage.
func TestTraceSpans(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	env := observedEnv(t, ops.ObserveOptions{Tracing: telemetry.NewTracing(tp)})
	call(env, reader, "mcp", "search_notes", `{"query":"`+secretQuery+`"}`)
	call(env, reader, "mcp", "read_note", `{"path":"missing.md"}`)
	call(env, nil, "mcp", "delete_note", `{"path":"b.md"}`)
	spans := sr.Ended()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	root := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d %s spans; spans: %v", len(byName[name]), name, names(spans))
		}
		return byName[name][0]
	}
	children := func(parent sdktrace.ReadOnlySpan) []string {
		var out []string
		for _, s := range spans {
			if s.Parent().SpanID() == parent.SpanContext().SpanID() {
				out = append(out, s.Name())
			}
		}
		return out
	}
	search := root("search_notes")
	if got := strings.Join(children(search), ","); got != "authorize,decode,handler" {
		t.Errorf("search_notes children = %s", got)
	}
	attrs := map[string]string{}
	for _, a := range search.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs["loci.op"] != "search_notes" || attrs["loci.principal"] != "reader-bot" || attrs["loci.surface"] != "mcp" ||
		attrs["loci.vault"] != env.Vaults[0].Name || attrs["loci.code"] != "" || attrs["loci.bytes_out"] == "0" {
		t.Errorf("attributes = %v", attrs)
	}
	for _, s := range spans {
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.Emit(), secretQuery) {
				t.Errorf("span %s holds the query in %s", s.Name(), a.Key)
			}
		}
	}
	failed := root("read_note")
	if failed.Status().Description != errs.CodeNotFound {
		t.Errorf("failed call status = %+v", failed.Status())
	}
	// A destructive call passes the confirmation stage.
	if got := strings.Join(children(root("delete_note")), ","); got != "authorize,decode,confirm,handler" {
		t.Errorf("delete_note children = %s", got)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// TestObserverOff: with no observer nothing is written.
func TestObserverOff(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"a.md": "# A\n"})
	call(env, reader, "mcp", "index_status", `{}`)
	if _, err := os.Stat(filepath.Join(env.Vaults[0].Index.Loc.Path(), telemetry.CallsLogName)); !os.IsNotExist(err) {
		t.Errorf("calls.log without an observer: %v", err)
	}
}
