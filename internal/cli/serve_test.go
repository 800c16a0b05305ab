package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/server"
)

// bearerTransport adds the token to every request, as an MCP client
// configured with a header does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeEndToEnd starts `loci serve` in-process on 127.0.0.1:0 and talks
// to it as the clients do: MCP over Streamable HTTP with the SDK client, and
// REST.
func TestServeEndToEnd(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	v := demoCopy(t)
	var stdout, stderr bytes.Buffer
	g := &globals{vault: ".", format: "text", stdout: &stdout, stderr: &stderr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := g.startServe(ctx, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn"})
	if err != nil {
		t.Fatal(err)
	}
	s.printBanner(g, serveOptions{addr: "127.0.0.1:0"})
	// The background sync publishes the first index build on the change bus.
	synced := make(chan struct{})
	var once sync.Once
	unsub := s.env.Subscribe(func(ops.Change) { once.Do(func() { close(synced) }) })
	defer unsub()
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()

	base := s.srv.URL()
	banner := stdout.String()
	for _, want := range []string{base + "/mcp", base + "/v1/ ", base + "/openapi.json", s.token, "loci mcp-config claude-code --http"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	// The token was created in the vault's index directory, private.
	st, err := os.Stat(filepath.Join(v, ".loci", "token"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", st, err)
	}
	if s.tokenSource != filepath.Join(s.env.Vaults[0].Index.Dir, "token") || len(s.token) != 43 {
		t.Errorf("token %q from %q", s.token, s.tokenSource)
	}

	// MCP: initialize, list tools, call one.
	client := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{s.token}},
	}, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	if init := cs.InitializeResult(); init == nil || init.ServerInfo == nil || init.ServerInfo.Name != "loci" {
		t.Errorf("initialize: %+v", init)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if !names["search_notes"] || !names["read_note"] {
		t.Errorf("tools: %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_note", Arguments: map[string]any{"path": "Ideas/Zettelkasten.md"}})
	if err != nil || res.IsError {
		t.Fatalf("read_note over MCP: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"path":"Ideas/Zettelkasten.md"`) {
		t.Errorf("read_note structured content: %s", b)
	}
	cs.Close()

	// MCP without the token is refused.
	_, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, nil)
	if err == nil {
		t.Error("MCP connect without a token succeeded")
	}

	// REST, once the background sync has built the index.
	select {
	case <-synced:
	case <-time.After(30 * time.Second):
		t.Fatal("the background sync published nothing")
	}
	req, _ := http.NewRequest("POST", base+"/v1/ops/search_notes", strings.NewReader(`{"query":"spaced repetition","limit":1}`))
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"ok":true`) || !strings.Contains(string(body), "Ideas/Spaced repetition.md") {
		t.Errorf("REST search: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(base + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("REST without a token: %d", resp.StatusCode)
	}

	// A session left open (with its event stream) does not hold up shutdown.
	open, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{s.token}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if _, err := open.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(server.DefaultShutdownTimeout - time.Second):
		t.Fatal("shutdown waited for the open MCP session")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("still serving after shutdown")
	}
}

func TestServeRefusals(t *testing.T) {
	v := demoCopy(t)
	_, errOut, code := run(t, "serve", v, "--no-auth", "--addr", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errOut, "--no-auth is only allowed on a loopback address") {
		t.Errorf("--no-auth on 0.0.0.0: %d %s", code, errOut)
	}
	_, errOut, code = run(t, "serve", v, "--addr", "nonsense")
	if code != 2 || !strings.Contains(errOut, "invalid --addr") {
		t.Errorf("bad --addr: %d %s", code, errOut)
	}
	_, errOut, code = run(t, "serve", filepath.Join(v, "missing"))
	if code != 3 {
		t.Errorf("missing vault: %d %s", code, errOut)
	}
	// A token file readable by others stops the server from starting.
	t.Setenv(server.EnvToken, "")
	os.MkdirAll(filepath.Join(v, ".loci"), 0o755)
	os.WriteFile(filepath.Join(v, ".loci", "token"), []byte(strings.Repeat("a", 43)), 0o644)
	os.Chmod(filepath.Join(v, ".loci", "token"), 0o644)
	_, errOut, code = run(t, "serve", v, "--addr", "127.0.0.1:0")
	if code != 4 || !strings.Contains(errOut, "--rotate") {
		t.Errorf("leaky token file: %d %s", code, errOut)
	}
}

func TestTokenCommand(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	v := demoCopy(t)
	out, errOut, code := run(t, "token", v)
	tok := strings.TrimSpace(out)
	if code != 0 || len(tok) != 43 || !strings.Contains(errOut, "new token written to") {
		t.Fatalf("token: %d %q %q", code, out, errOut)
	}
	p := filepath.Join(v, ".loci", "token")
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	out, errOut, _ = run(t, "token", "--vault", v)
	if strings.TrimSpace(out) != tok || errOut != "" {
		t.Errorf("second token: %q %q", out, errOut)
	}
	out, _, _ = run(t, "token", v, "--rotate")
	rot := strings.TrimSpace(out)
	if rot == tok || len(rot) != 43 {
		t.Errorf("rotate: %q", rot)
	}
	b, _ := os.ReadFile(p)
	if strings.TrimSpace(string(b)) != rot {
		t.Errorf("rotated file holds %q", b)
	}
	out, _, _ = run(t, "token", v, "--format", "json")
	var j struct {
		Token, Source string
	}
	if json.Unmarshal([]byte(out), &j) != nil || j.Token != rot || j.Source != p {
		t.Errorf("json: %s", out)
	}
	t.Setenv(server.EnvToken, "env-token-0123456789")
	out, errOut, _ = run(t, "token", v)
	if strings.TrimSpace(out) != "env-token-0123456789" || !strings.Contains(errOut, "LOCI_TOKEN") {
		t.Errorf("LOCI_TOKEN: %q %q", out, errOut)
	}
	_, _, code = run(t, "token", filepath.Join(v, "missing"))
	if code != 3 {
		t.Errorf("missing vault: %d", code)
	}
}

func TestMCPConfig(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	v := demoCopy(t)
	exe, err := executable()
	if err != nil {
		t.Fatal(err)
	}
	tokOut, _, _ := run(t, "token", v)
	tok := strings.TrimSpace(tokOut)

	type jsonCfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	for _, client := range []string{"claude-desktop", "cursor"} {
		out, errOut, code := run(t, "mcp-config", client, v)
		var c jsonCfg
		if code != 0 || json.Unmarshal([]byte(out), &c) != nil {
			t.Fatalf("%s: %d %q %q", client, code, out, errOut)
		}
		e := c.MCPServers["loci"]
		if e.Command != exe || len(e.Args) != 2 || e.Args[0] != "mcp" || e.Args[1] != v {
			t.Errorf("%s stdio: %+v", client, e)
		}
		out, _, code = run(t, "mcp-config", client, "--http", "--vault", v)
		c = jsonCfg{}
		if code != 0 || json.Unmarshal([]byte(out), &c) != nil {
			t.Fatalf("%s --http: %d %q", client, code, out)
		}
		e = c.MCPServers["loci"]
		switch client {
		case "cursor":
			if e.URL != "http://127.0.0.1:8765/mcp" || e.Headers["Authorization"] != "Bearer "+tok {
				t.Errorf("cursor --http: %+v", e)
			}
		case "claude-desktop":
			if e.Command != "npx" || !strings.Contains(strings.Join(e.Args, " "), "mcp-remote http://127.0.0.1:8765/mcp --header Authorization:${LOCI_AUTH_HEADER}") ||
				e.Env["LOCI_AUTH_HEADER"] != "Bearer "+tok {
				t.Errorf("claude-desktop --http: %+v", e)
			}
		}
	}

	out, _, code := run(t, "mcp-config", "claude-code", v)
	want := "claude mcp add loci -- " + shellQuote(exe) + " mcp " + shellQuote(v) + "\n"
	if code != 0 || out != want {
		t.Errorf("claude-code stdio:\n%q\nwant\n%q", out, want)
	}
	out, _, _ = run(t, "mcp-config", "claude-code", "--http", "--addr", "127.0.0.1:9000", v)
	want = "claude mcp add --transport http loci http://127.0.0.1:9000/mcp --header 'Authorization: Bearer " + tok + "'\n"
	if out != want {
		t.Errorf("claude-code http:\n%q\nwant\n%q", out, want)
	}

	out, _, _ = run(t, "mcp-config", "codex", v)
	for _, line := range []string{"[mcp_servers.loci]", "command = " + tomlString(exe), `args = ["mcp", ` + tomlString(v) + `]`} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("codex stdio lacks %q:\n%s", line, out)
		}
	}
	out, _, _ = run(t, "mcp-config", "codex", "--http", v)
	for _, line := range []string{"[mcp_servers.loci]", `url = "http://127.0.0.1:8765/mcp"`, `bearer_token_env_var = "LOCI_TOKEN"`, "export LOCI_TOKEN=" + tok} {
		if !strings.Contains(out, line) {
			t.Errorf("codex http lacks %q:\n%s", line, out)
		}
	}
	// Each TOML line is a table header, a comment or key = value.
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "[") && !strings.Contains(l, " = ") {
			t.Errorf("codex: odd TOML line %q", l)
		}
	}

	_, errOut, code := run(t, "mcp-config", "vim", v)
	if code != 2 || !strings.Contains(errOut, "unknown client") {
		t.Errorf("unknown client: %d %s", code, errOut)
	}
	_, _, code = run(t, "mcp-config", "cursor", filepath.Join(v, "missing"))
	if code != 3 {
		t.Errorf("missing vault: %d", code)
	}
}

func TestQuoting(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/loci": "/usr/bin/loci", "/My Notes": "'/My Notes'", "it's": `'it'\''s'`, "": "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
	if got := tomlString(`C:\Notes "x"` + "\n"); got != `"C:\\Notes \"x\"\u000A"` {
		t.Errorf("tomlString: %s", got)
	}
	if tomlKey("loci") != "loci" || tomlKey("my loci") != `"my loci"` {
		t.Error("tomlKey")
	}
}
