package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/telemetry"
)

const obsSecretQuery = "quetzal-turmeric-4417"

// TestServeObservability runs `loci serve` in-process with two principals
// and a metrics token, and checks who may read /metrics, that its counts
// move with calls over MCP and REST, that the MCP session gauge follows the
// sessions, and that the calls log holds a line per call with the
// principal and nothing of the arguments.
func TestServeObservability(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	userDir := t.TempDir()
	t.Setenv("LOCI_CONFIG_DIR", userDir)
	const metricsToken = "metrics-only-token-0123456789"
	t.Setenv("LOCI_TEST_METRICS_TOKEN", metricsToken)
	os.WriteFile(filepath.Join(userDir, "config.yaml"), []byte("server:\n  metrics_token_env: LOCI_TEST_METRICS_TOKEN\n"), 0o600)
	store := auth.NewStore(userDir)
	readerTok, err := store.Create(auth.Principal{Name: "reader", Scopes: []auth.Scope{auth.ScopeRead}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	adminTok, err := store.Create(auth.Principal{Name: "ops", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeAdmin}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	v := demoCopy(t)
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Fatalf("index: %s", errOut)
	}
	var stdout, stderr bytes.Buffer
	g := &globals{vault: ".", format: "text", stdout: &stdout, stderr: &stderr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := g.startServe(ctx, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn", noSync: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	base := s.srv.URL()

	get := func(path, tok string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		name, path, tok string
		status          int
		has             string
	}{
		{"no token", "/metrics", "", 401, `"unauthorized"`},
		{"a wrong token", "/metrics", "not-a-token-at-all-0123456789", 401, `"unauthorized"`},
		{"reader", "/metrics", readerTok, 403, `"missing_scopes":["admin"]`},
		{"admin", "/metrics", adminTok, 200, "loci_index_notes"},
		{"metrics token", "/metrics", metricsToken, 200, "loci_mcp_sessions 0"},
		{"owner", "/metrics", s.token, 200, "go_goroutines"},
		{"metrics token elsewhere", "/v1/status", metricsToken, 401, `"unauthorized"`},
	} {
		status, body := get(c.path, c.tok)
		if status != c.status || !strings.Contains(body, c.has) {
			t.Errorf("%s: GET %s = %d, want %d with %q:\n%.300s", c.name, c.path, status, c.status, c.has, body)
		}
	}

	// Calls over MCP (as reader) and REST move the counts.
	client := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{readerTok}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": obsSecretQuery}})
		if err != nil || res.IsError {
			t.Fatalf("search over MCP: %v %+v", err, res)
		}
	}
	req, _ := http.NewRequest("POST", base+"/v1/ops/read_note", strings.NewReader(`{"path":"Nowhere/`+obsSecretQuery+`.md"}`))
	req.Header.Set("Authorization", "Bearer "+readerTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("read of a missing note: %d", resp.StatusCode)
	}
	_, text := get("/metrics", metricsToken)
	for _, c := range []struct {
		series string
		want   float64
	}{
		{`loci_calls_total{code="ok",op="search_notes",principal="reader"}`, 2},
		{`loci_calls_total{code="note_not_found",op="read_note",principal="reader"}`, 1},
		{`loci_call_duration_seconds_count{op="search_notes"}`, 2},
		{`loci_mcp_sessions`, 1},
	} {
		if got, ok := series(text, c.series); !ok || got != c.want {
			t.Errorf("%s = %v (found %v), want %v", c.series, got, ok, c.want)
		}
	}
	if n, ok := series(text, `loci_index_notes{vault="vault"}`); !ok || n < 10 {
		t.Errorf("index notes = %v %v", n, ok)
	}
	if strings.Contains(text, obsSecretQuery) {
		t.Error("/metrics shows the query")
	}
	cs.Close()
	_, text = get("/metrics", metricsToken)
	if n, _ := series(text, "loci_mcp_sessions"); n != 0 {
		t.Errorf("sessions after close = %v", n)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Shutdown flushed the calls log.
	raw, err := os.ReadFile(filepath.Join(v, ".loci", telemetry.CallsLogName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), obsSecretQuery) || strings.Contains(string(raw), readerTok) || strings.Contains(string(raw), "Nowhere") {
		t.Errorf("the calls log holds arguments or tokens:\n%s", raw)
	}
	var got []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var r telemetry.CallRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, strings.Join([]string{r.Principal, r.Via, r.Surface, r.Op, r.Code, r.Vault}, " "))
	}
	want := []string{
		"reader token mcp search_notes  vault",
		"reader token mcp search_notes  vault",
		"reader token rest read_note note_not_found vault",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A one-shot CLI call is logged too, as the owner.
	if _, errOut, code := run(t, "--vault", v, "search", "zettel"); code != 0 {
		t.Fatalf("search: %s", errOut)
	}
	raw, _ = os.ReadFile(filepath.Join(v, ".loci", telemetry.CallsLogName))
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if last := lines[len(lines)-1]; len(lines) != 4 || !strings.Contains(last, `"principal":"owner","via":"local","surface":"cli","op":"search_notes"`) {
		t.Errorf("after a CLI search (%d lines): %s", len(lines), last)
	}
}

// series finds one series' value in a Prometheus text exposition.
func series(text, name string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}
