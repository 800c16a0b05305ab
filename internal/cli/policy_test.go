package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/testutil"
)

// policyVaults makes three vaults with their own configs, as the issue
// describes: C sets nothing, D is read-only and denies everything, E
// denies every path. The servers are started with --enable-writes: a
// vault's own file may restrict writes but never turn them on
// (TestVaultConfigCannotEnableAgentWrites).
func policyVaults(t *testing.T) (c, d, e string) {
	t.Helper()
	base := t.TempDir()
	files := map[string]string{"n.md": "# N\n\nnote\n", "Inbox/i.md": "i\n"}
	for name, cfg := range map[string]string{
		"C": "exclude: [\"Archive/**\"]\n",
		"D": "writes: {read_only: true, deny_paths: [\"**\"]}\n",
		"E": "writes:\n  deny_paths: [\"**\"]\n",
	} {
		files := maps(files, map[string]string{".loci/config.yaml": cfg})
		testutil.WriteFiles(t, filepath.Join(base, name), files)
	}
	return filepath.Join(base, "C"), filepath.Join(base, "D"), filepath.Join(base, "E")
}

func maps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// tree snapshots a vault, leaving out the index files and the token,
// which the servers' syncs may write.
func tree(t *testing.T, root string) map[string]string {
	return testutil.Tree(t, root, func(rel string) bool {
		b := path.Base(rel)
		// loci's own bookkeeping: the index, the token, the calls log
		// (which records the refused calls too).
		return strings.HasPrefix(b, "index.") || b == "token" || strings.HasPrefix(b, "calls.log")
	})
}

func unchanged(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if d := testutil.TreeDiff(before, after); d != "" {
		t.Errorf("%s changed: %s", what, d)
	}
}

// mcpWrite calls write_note on a vault over an MCP session and returns the
// error code ("" when applied).
func mcpWrite(t *testing.T, cs *mcp.ClientSession, vault, content string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_note", Arguments: map[string]any{
		"vault": vault, "path": "n.md", "content": content, "overwrite": true, "apply": true}})
	if err != nil {
		t.Fatalf("write_note on %s: %v", vault, err)
	}
	if !res.IsError {
		return ""
	}
	e, _ := res.Meta["loci/error"].(map[string]any)
	code, _ := e["code"].(string)
	if code == "" {
		t.Fatalf("write_note on %s: error without a code: %+v", vault, res)
	}
	return code
}

// TestServeEachVaultOwnPolicy serves three vaults with different configs
// from one `loci serve` (in-process, real HTTP listener) and writes to each
// over MCP (Streamable HTTP, the SDK client) and REST: D (read-only) answers
// writes_disabled, E (deny all) path_denied, neither changes on disk, and
// C's write is applied. The banner states each vault's policy.
func TestServeEachVaultOwnPolicy(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	vc, vd, ve := policyVaults(t)
	var stdout, stderr bytes.Buffer
	g := &globals{vault: ".", format: "text", enableWrites: true, stdout: &stdout, stderr: &stderr}
	ctx := t.Context()
	s, _ := serveForTest(t, g, []string{vc, vd, ve}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn", noSync: true},
		func(s *serving) { s.printBanner(g, serveOptions{addr: "127.0.0.1:0"}) })

	banner := stdout.String()
	for _, want := range []string{
		"writes   C: on",
		"writes   D: off (read-only)",
		"deny_paths **",
		"writes   E: on",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	beforeD, beforeE := tree(t, vd), tree(t, ve)

	client := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: s.srv.URL() + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{s.token}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	advertised := false
	for _, tl := range tools.Tools {
		advertised = advertised || tl.Name == "write_note"
	}
	if !advertised {
		t.Error("write_note not advertised although vault C allows writes")
	}
	if code := mcpWrite(t, cs, "D", "mcp\n"); code != "writes_disabled" {
		t.Errorf("MCP write to read-only D: %q", code)
	}
	if code := mcpWrite(t, cs, "E", "mcp\n"); code != "path_denied" {
		t.Errorf("MCP write to deny-all E: %q", code)
	}
	if code := mcpWrite(t, cs, "C", "mcp\n"); code != "" {
		t.Errorf("MCP write to C: %q", code)
	}
	if b, _ := os.ReadFile(filepath.Join(vc, "n.md")); string(b) != "mcp\n" {
		t.Errorf("C after the MCP write: %q", b)
	}

	rest := func(vault string) (int, string) {
		body := `{"vault":"` + vault + `","path":"n.md","content":"rest\n","overwrite":true,"apply":true}`
		req, _ := http.NewRequest("POST", s.srv.URL()+"/v1/ops/write_note", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &out)
		return resp.StatusCode, out.Error.Code
	}
	if st, code := rest("D"); st != 403 || code != "writes_disabled" {
		t.Errorf("REST write to D: %d %s", st, code)
	}
	if st, code := rest("E"); st != 403 || code != "path_denied" {
		t.Errorf("REST write to E: %d %s", st, code)
	}
	if st, code := rest("C"); st != 200 || code != "" {
		t.Errorf("REST write to C: %d %s", st, code)
	}
	if b, _ := os.ReadFile(filepath.Join(vc, "n.md")); string(b) != "rest\n" {
		t.Errorf("C after the REST write: %q", b)
	}
	unchanged(t, "vault D", beforeD, tree(t, vd))
	unchanged(t, "vault E", beforeE, tree(t, ve))
}

// TestMCPStdioEachVaultOwnPolicy: the case exactly, through a real
// `loci mcp C D E` process spoken to over stdio by the SDK client.
func TestMCPStdioEachVaultOwnPolicy(t *testing.T) {
	bin := testutil.LociBinary(t)
	vc, vd, ve := policyVaults(t)
	beforeD, beforeE := tree(t, vd), tree(t, ve)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "mcp", vc, vd, ve, "--no-sync", "--enable-writes")
	cmd.Env = append(os.Environ(), "LOCI_ENABLE_WRITES=", "LOCI_READ_ONLY=", "LOCI_CONFIG=")
	cmd.Stderr = &stderr
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	if code := mcpWrite(t, cs, "D", "agent\n"); code != "writes_disabled" {
		t.Errorf("write to read-only D: %q", code)
	}
	if code := mcpWrite(t, cs, "E", "agent\n"); code != "path_denied" {
		t.Errorf("write to deny-all E: %q", code)
	}
	if code := mcpWrite(t, cs, "C", "agent\n"); code != "" {
		t.Errorf("write to C: %q", code)
	}
	cs.Close()
	cmd.Wait()
	if b, _ := os.ReadFile(filepath.Join(vc, "n.md")); string(b) != "agent\n" {
		t.Errorf("C: %q", b)
	}
	unchanged(t, "vault D", beforeD, tree(t, vd))
	unchanged(t, "vault E", beforeE, tree(t, ve))
	// The log states each vault's policy.
	log := stderr.String()
	for _, want := range []string{"vault=C writes=on", "vault=D writes=read-only", `deny_paths=**`, "vault=E writes=on"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
}

// TestServeEnvPerVaultSettings: each served vault's own config governs its
// excludes and its AI runtime (provider, allow/deny globs), not the first
// vault's.
func TestServeEnvPerVaultSettings(t *testing.T) {
	t.Setenv("LOCI_CONFIG", "")
	t.Setenv("LOCI_AI_PROVIDER", "")
	base := t.TempDir()
	notes := map[string]string{"n.md": "# N\n\nplain\n", "Private/p.md": "# P\n\nzebraword\n"}
	testutil.WriteFiles(t, filepath.Join(base, "C"), maps(notes, map[string]string{
		".loci/config.yaml": "exclude: [\"Private/**\"]\nai:\n  provider: embeddings\n  deny_globs: [\"Journal/**\"]\n"}))
	testutil.WriteFiles(t, filepath.Join(base, "D"), notes)
	g := &globals{vault: ".", format: "text", stdout: io.Discard, stderr: io.Discard}
	ctx := context.Background()
	env, err := g.openServeEnv(ctx, []string{filepath.Join(base, "C"), filepath.Join(base, "D")})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	reg := registry()
	for _, vh := range env.Vaults {
		if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	found := func(vault string) bool {
		res := reg.Call(ctx, env, ops.Caller{Surface: "test"}, "search_notes", json.RawMessage(`{"query":"zebraword","vault":"`+vault+`","mode":"lexical"}`))
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		b, _ := json.Marshal(res.Output)
		return strings.Contains(string(b), "Private/p.md")
	}
	if found("C") || !found("D") {
		t.Errorf("excludes: C (excludes Private/**) found=%v, D found=%v", found("C"), found("D"))
	}
	c, d := env.Vaults[0], env.Vaults[1]
	if rt := env.AIFor(c); !rt.Enabled() || strings.Join(rt.Settings.DenyGlobs, ",") != "Journal/**" {
		t.Errorf("C's AI: %+v", rt.Settings)
	}
	if rt := env.AIFor(d); rt.Enabled() {
		t.Errorf("D has no ai section but AI is on: %+v", rt.Settings)
	}
}

// TestVaultConfigCannotEnableAgentWrites: a planted vault whose own file
// says writes.enabled: true is served with writes off — the write tools
// are not listed, a REST write is writes_disabled, the file is unchanged —
// and the banner, `loci config validate` and `loci config show` say why.
// The user's own config turns them on.
func TestVaultConfigCannotEnableAgentWrites(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	for _, k := range []string{"LOCI_CONFIG", "LOCI_ENABLE_WRITES", "LOCI_READ_ONLY"} {
		t.Setenv(k, "")
	}
	v := filepath.Join(t.TempDir(), "P")
	testutil.WriteFiles(t, v, map[string]string{"n.md": "# N\n", ".loci/config.yaml": "writes:\n  enabled: true\n"})
	cfg := filepath.Join(v, ".loci", "config.yaml")
	before := tree(t, v)

	serve := func() (*serving, string, func()) {
		var stdout bytes.Buffer
		g := &globals{vault: ".", format: "text", stdout: &stdout, stderr: io.Discard}
		ctx, cancel := context.WithCancel(context.Background())
		s, err := g.startServe(ctx, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 2, logLevel: "warn", noSync: true})
		if err != nil {
			t.Fatal(err)
		}
		s.printBanner(g, serveOptions{addr: "127.0.0.1:0"})
		done := make(chan error, 1)
		go func() { done <- s.run(ctx) }()
		return s, stdout.String(), func() { cancel(); <-done }
	}
	write := func(s *serving) (int, string) {
		req, _ := http.NewRequest("POST", s.srv.URL()+"/v1/ops/write_note", strings.NewReader(`{"path":"n.md","content":"agent\n","overwrite":true,"apply":true}`))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Error.Code
	}

	s, banner, stop := serve()
	for _, want := range []string{"writes   P: off", "note     P: writes.enabled: true is not honoured from a vault's own config"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	if st, code := write(s); st != 403 || code != "writes_disabled" {
		t.Errorf("REST write to a vault that enables its own writes: %d %s", st, code)
	}
	stop()
	unchanged(t, "vault P", before, tree(t, v))

	if out, _, code := run(t, "config", "validate", v); code != 0 || !strings.Contains(out, "note: "+cfg+":2: writes.enabled: true is not honoured") {
		t.Errorf("validate: %d %q", code, out)
	}
	if out, _, _ := run(t, "config", "show", v); !strings.Contains(out, "servers: false # default") || !strings.Contains(out, "not_honoured:") {
		t.Errorf("show:\n%s", out)
	}

	// The user's own config may turn agent writes on.
	user := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(user, []byte("writes: {enabled: true}\n"), 0o600)
	t.Setenv("LOCI_CONFIG", user)
	s, banner, stop = serve()
	defer stop()
	if !strings.Contains(banner, "writes   P: on") || strings.Contains(banner, "note ") {
		t.Errorf("banner with the user's config:\n%s", banner)
	}
	if st, code := write(s); st != 200 || code != "" {
		t.Errorf("REST write enabled by the user's config: %d %s", st, code)
	}
}
