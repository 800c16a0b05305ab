package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/server"
)

// testClock is a settable clock for the server's confirmations and limits.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// toolError is the {code, message, details} of a failed MCP tool call.
func toolError(t *testing.T, res *mcp.CallToolResult) (string, map[string]any) {
	t.Helper()
	if !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		t.Fatalf("want a tool error, got %s", b)
	}
	b, _ := json.Marshal(res.Meta["loci/error"])
	var e struct {
		Code    string         `json:"code"`
		Details map[string]any `json:"details"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Code == "" {
		t.Fatalf("tool error without loci/error meta: %s", b)
	}
	return e.Code, e.Details
}

// TestConfirmationEndToEnd: an agent (MCP SDK client over the real HTTP
// server, a principal whose policy is confirm) deletes a note; a human
// confirms in the web UI (login with the owner token, the Pending page,
// its form with the CSRF token); the retried call applies exactly once.
// Then expiry, mismatched arguments, another principal's use of the id,
// denial, `loci confirm` and the limits over the same server.
func TestConfirmationEndToEnd(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	cfgDir := t.TempDir()
	t.Setenv(config.EnvConfigDir, cfgDir)
	conf := "writes: {enabled: true}\nserver:\n  limits:\n    read: {per_minute: 60, burst: 3}\n    concurrency: 8\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	store := auth.NewStore(cfgDir)
	editorScopes := []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeDestructive}
	editorTok, err := store.Create(auth.Principal{Name: "editor", Scopes: editorScopes}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherTok, err := store.Create(auth.Principal{Name: "other", Scopes: editorScopes}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	v := demoCopy(t)
	var stdout, stderr bytes.Buffer
	g := &globals{vault: v, format: "text", stdout: &stdout, stderr: &stderr}
	ctx := t.Context()
	clk := &testClock{t: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)}
	s, synced := serveForTest(t, g, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn"}, func(s *serving) {
		// server.limits of the user's file is in effect; the test swaps in the
		// same limits on its own clock, and a clock for the confirmations.
		want := ops.LimitSettings{Read: ops.Rate{PerMinute: 60, Burst: 3}, Concurrency: 8}
		if s.env.Limits == nil || s.env.Limits.Settings() != want {
			t.Fatalf("limits from config: %+v", s.env.Limits)
		}
		s.env.Limits = ops.NewLimiter(want, clk.Now)
		s.env.Confirmations = ops.NewConfirmations(clk.Now)
	})
	select {
	case <-synced:
	case <-time.After(30 * time.Second):
		t.Fatal("the background sync published nothing")
	}
	base := s.srv.URL()

	connect := func(tok string) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{tok}}}, nil)
		if err != nil {
			t.Fatalf("MCP connect: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	agent := connect(editorTok)
	call := func(cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	ask := func(path string) string {
		t.Helper()
		code, d := toolError(t, call(agent, "delete_note", map[string]any{"path": path, "apply": true}))
		if code != "confirmation_required" {
			t.Fatalf("delete %s: %s %v", path, code, d)
		}
		return d["confirmation_id"].(string)
	}
	retry := func(cs *mcp.ClientSession, path, id string) *mcp.CallToolResult {
		return call(cs, "delete_note", map[string]any{"path": path, "apply": true, "confirmation_id": id})
	}

	// 1. The agent asks; nothing happens yet.
	_, d := toolError(t, call(agent, "delete_note", map[string]any{"path": "Inbox/Unsorted.md", "apply": true}))
	id, _ := d["confirmation_id"].(string)
	if !strings.HasPrefix(id, "cf_") || !strings.Contains(d["summary"].(string), "Inbox/Unsorted.md") || d["preview"] == nil {
		t.Fatalf("confirmation_required details: %v", d)
	}
	if _, err := os.Stat(filepath.Join(v, "Inbox", "Unsorted.md")); err != nil {
		t.Fatal("the note went before a human confirmed")
	}

	// 2. A human confirms through the web UI.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(c *http.Client, path string) (int, string) {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(c *http.Client, form url.Values) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/ui/confirm", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location") + string(b)
	}
	if st, _ := get(browser, "/?token="+url.QueryEscape(s.token)); st != http.StatusSeeOther {
		t.Fatalf("login: %d", st)
	}
	st, page := get(browser, "/ui/pending")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if st != 200 || m == nil || !strings.Contains(page, id) || !strings.Contains(page, "Inbox/Unsorted.md") || !strings.Contains(page, "editor") {
		t.Fatalf("pending page: %d\n%s", st, page)
	}
	csrf := m[1]
	if st, body := get(browser, "/ui/pending.json"); st != 200 || !strings.Contains(body, id) {
		t.Errorf("pending.json: %d %s", st, body)
	}
	// A form without the CSRF token, and the agent itself in the UI, are refused.
	if st, _ := post(browser, url.Values{"id": {id}, "decision": {"confirm"}}); st != http.StatusForbidden {
		t.Errorf("confirm without CSRF: %d", st)
	}
	agentJar, _ := cookiejar.New(nil)
	agentBrowser := &http.Client{Jar: agentJar, CheckRedirect: browser.CheckRedirect}
	get(agentBrowser, "/?token="+url.QueryEscape(editorTok))
	if st, _ := get(agentBrowser, "/ui/pending"); st != http.StatusForbidden {
		t.Errorf("the agent's own Pending page: %d", st)
	}
	// Retrying before the decision still waits (same id).
	if code, d := toolError(t, retry(agent, "Inbox/Unsorted.md", id)); code != "confirmation_required" || d["confirmation_id"] != id {
		t.Errorf("retry before the decision: %s %v", code, d)
	}
	if st, loc := post(browser, url.Values{"csrf": {csrf}, "id": {id}, "decision": {"confirm"}}); st != http.StatusSeeOther || !strings.Contains(loc, "/ui/pending?done=Confirmed") {
		t.Fatalf("confirm in the web UI: %d %s", st, loc)
	}

	// 3. The agent repeats the call with the id: applied once.
	res := retry(agent, "Inbox/Unsorted.md", id)
	if res.IsError {
		t.Fatalf("confirmed retry: %+v", res.Content[0])
	}
	if _, err := os.Stat(filepath.Join(v, "Inbox", "Unsorted.md")); !os.IsNotExist(err) {
		t.Errorf("note still there: %v", err)
	}
	trashed, _ := filepath.Glob(filepath.Join(v, ".trash", "Inbox", "Unsorted*"))
	if len(trashed) != 1 {
		t.Errorf("trash holds %v", trashed)
	}
	if code, d := toolError(t, retry(agent, "Inbox/Unsorted.md", id)); code != "confirmation_invalid" || d["reason"] != "used" {
		t.Errorf("second retry: %s %v", code, d)
	}
	if trashed, _ := filepath.Glob(filepath.Join(v, ".trash", "Inbox", "Unsorted*")); len(trashed) != 1 {
		t.Errorf("after the second retry the trash holds %v", trashed)
	}

	// 4. Expiry: confirmed with `loci confirm`, retried after 5 minutes.
	id2 := ask("Ideas/Zettelkasten.md")
	out, errOut, code := run(t, "confirm", id2, "--addr", s.srv.Addr(), "--vault", v)
	if code != 0 || !strings.Contains(out, "confirmed "+id2) || !strings.Contains(out, "editor may repeat delete_note once") {
		t.Fatalf("loci confirm: %d %s %s", code, out, errOut)
	}
	clk.Add(5 * time.Minute)
	if code, d := toolError(t, retry(agent, "Ideas/Zettelkasten.md", id2)); code != "confirmation_invalid" || d["reason"] != "expired" {
		t.Errorf("retry after 5 minutes: %s %v", code, d)
	}

	// 5. Mismatched arguments, and another principal using the id.
	id3 := ask("Ideas/Zettelkasten.md")
	req, _ := http.NewRequest("POST", base+"/v1/confirmations/"+id3, strings.NewReader(`{"decision":"confirm"}`))
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("REST confirm: %v %v", err, resp)
	}
	resp.Body.Close()
	if code, d := toolError(t, retry(agent, "Ideas/Spaced repetition.md", id3)); code != "confirmation_invalid" || d["mismatch"] != "arguments" {
		t.Errorf("other arguments: %s %v", code, d)
	}
	other := connect(otherTok)
	if code, d := toolError(t, retry(other, "Ideas/Zettelkasten.md", id3)); code != "confirmation_invalid" || d["mismatch"] != "principal" {
		t.Errorf("another principal: %s %v", code, d)
	}
	if _, err := os.Stat(filepath.Join(v, "Ideas", "Zettelkasten.md")); err != nil {
		t.Error("a mismatched retry deleted the note")
	}

	// 6. Denied with `loci confirm --deny`; listed before with --list.
	id4 := ask("Ideas/Spaced repetition.md")
	out, _, code = run(t, "confirm", "--list", "--addr", s.srv.Addr(), "--vault", v)
	if code != 0 || !strings.Contains(out, id4) || !strings.Contains(out, "delete Ideas/Spaced repetition.md") {
		t.Errorf("loci confirm --list: %d %s", code, out)
	}
	if out, _, code := run(t, "confirm", id4, "--deny", "--addr", s.srv.Addr(), "--vault", v); code != 0 || !strings.Contains(out, "denied "+id4) {
		t.Errorf("loci confirm --deny: %d %s", code, out)
	}
	if code, d := toolError(t, retry(agent, "Ideas/Spaced repetition.md", id4)); code != "confirmation_invalid" || d["reason"] != "denied" {
		t.Errorf("retry after deny: %s %v", code, d)
	}
	if _, errOut, code := run(t, "confirm", "cf_unknown", "--addr", s.srv.Addr(), "--vault", v); code == 0 || !strings.Contains(errOut, "confirmation_invalid") {
		t.Errorf("loci confirm of an unknown id: %d %s", code, errOut)
	}

	// 7. Limits over the same server: the other principal's read bucket
	// (3) runs dry; MCP answers rate_limited, REST 429 with Retry-After.
	for range 3 {
		if res := call(other, "index_status", map[string]any{}); res.IsError {
			t.Fatalf("read within the limit: %+v", res.Content[0])
		}
	}
	if code, d := toolError(t, call(other, "index_status", map[string]any{})); code != "rate_limited" || d["class"] != "read" || d["retry_after_seconds"] != 1.0 {
		t.Errorf("over the read limit over MCP: %s %v", code, d)
	}
	req, _ = http.NewRequest("GET", base+"/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+otherTok)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("over the read limit over REST: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	clk.Add(time.Second)
	if res := call(other, "index_status", map[string]any{}); res.IsError {
		t.Errorf("a second later: %+v", res.Content[0])
	}
}
