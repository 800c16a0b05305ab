package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/errs"
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

var updateGolden = flag.Bool("update", false, "rewrite internal/cli/testdata/mcpconfig from the current output")

// TestMCPConfig checks every client's stdio and --http output against a
// golden file (the vault path, the executable and the token replaced by
// placeholders), and that each parses as the format its client reads: JSON
// with the client's shape, TOML for Codex, a shell command for Claude Code.
func TestMCPConfig(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	v := demoCopy(t)
	const exe = "/opt/loci bin/loci" // a space, to see the quoting
	old := stdioExecutable
	stdioExecutable = func() (string, error) { return exe, nil }
	t.Cleanup(func() { stdioExecutable = old })
	tokOut, _, _ := run(t, "token", v)
	tok := strings.TrimSpace(tokOut)

	type entry struct {
		Type      string            `json:"type"`
		Source    string            `json:"source"`
		Command   string            `json:"command"`
		Args      []string          `json:"args"`
		Env       map[string]string `json:"env"`
		URL       string            `json:"url"`
		ServerURL string            `json:"serverUrl"`
		HTTPURL   string            `json:"httpUrl"`
		Headers   map[string]string `json:"headers"`
	}
	type jsonCfg struct {
		MCPServers     map[string]entry `json:"mcpServers"`
		Servers        map[string]entry `json:"servers"`
		ContextServers map[string]entry `json:"context_servers"`
		Inputs         []struct {
			Type, ID, Description string
			Password              bool
		} `json:"inputs"`
	}
	const url = "http://127.0.0.1:8765/mcp"
	bearer := "Bearer " + tok
	stdioArgs := []string{"mcp", v}
	for _, client := range mcpClients {
		for _, http := range []bool{false, true} {
			args := []string{"mcp-config", client.name, v}
			kind := "stdio"
			if http {
				args = append(args, "--http")
				kind = "http"
			}
			out, errOut, code := run(t, args...)
			if code != 0 || !strings.HasPrefix(errOut, "loci: "+client.name+": ") {
				t.Fatalf("%s %s: exit %d, stderr %q", client.name, kind, code, errOut)
			}
			golden(t, client.name+"."+kind, strings.NewReplacer(v, "/VAULT", tok, "TOKEN").Replace(out))

			var c jsonCfg
			var e entry
			switch client.name {
			case "claude-code":
				continue // checked below
			case "codex":
				var tc struct {
					MCPServers map[string]struct {
						Command, URL      string
						Args              []string
						BearerTokenEnvVar string `toml:"bearer_token_env_var"`
					} `toml:"mcp_servers"`
				}
				if _, err := toml.Decode(out, &tc); err != nil {
					t.Fatalf("codex %s: not TOML: %v\n%s", kind, err, out)
				}
				ce := tc.MCPServers["loci"]
				if http && (ce.URL != url || ce.BearerTokenEnvVar != server.EnvToken) || !http && (ce.Command != exe || !slices.Equal(ce.Args, stdioArgs)) {
					t.Errorf("codex %s: %+v", kind, ce)
				}
				continue
			}
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				t.Fatalf("%s %s: %v\n%s", client.name, kind, err, out)
			}
			switch client.name {
			case "vscode":
				e = c.Servers["loci"]
			case "zed":
				e = c.ContextServers["loci"]
			default:
				e = c.MCPServers["loci"]
			}
			if !http {
				want := entry{Command: exe, Args: stdioArgs}
				switch client.name {
				case "vscode":
					want.Type = "stdio"
				case "zed":
					want.Source, want.Env = "custom", map[string]string{}
				}
				if !reflect.DeepEqual(e, want) {
					t.Errorf("%s stdio: %+v, want %+v", client.name, e, want)
				}
				continue
			}
			var want entry
			switch client.name {
			case "claude-desktop":
				want = entry{Command: "npx", Args: []string{"-y", "mcp-remote", url, "--header", "Authorization:${LOCI_AUTH_HEADER}"},
					Env: map[string]string{"LOCI_AUTH_HEADER": bearer}}
			case "cursor", "zed":
				want = entry{URL: url, Headers: map[string]string{"Authorization": bearer}}
			case "windsurf":
				want = entry{ServerURL: url, Headers: map[string]string{"Authorization": bearer}}
			case "gemini":
				want = entry{HTTPURL: url, Headers: map[string]string{"Authorization": bearer}}
			case "vscode":
				want = entry{Type: "http", URL: url, Headers: map[string]string{"Authorization": "Bearer ${input:loci-token}"}}
				if len(c.Inputs) != 1 || c.Inputs[0].ID != "loci-token" || !c.Inputs[0].Password || c.Inputs[0].Type != "promptString" || strings.Contains(out, tok) {
					t.Errorf("vscode http: the token must be a password input, not in the file:\n%s", out)
				}
			}
			if !reflect.DeepEqual(e, want) {
				t.Errorf("%s http: %+v, want %+v", client.name, e, want)
			}
		}
	}

	out, _, code := run(t, "mcp-config", "claude-code", v)
	want := "claude mcp add loci -- '/opt/loci bin/loci' mcp " + shellQuote(v) + "\n"
	if code != 0 || out != want {
		t.Errorf("claude-code stdio:\n%q\nwant\n%q", out, want)
	}
	out, _, _ = run(t, "mcp-config", "claude-code", "--http", "--addr", "127.0.0.1:9000", v)
	want = "claude mcp add --transport http loci http://127.0.0.1:9000/mcp --header 'Authorization: Bearer " + tok + "'\n"
	if out != want {
		t.Errorf("claude-code http:\n%q\nwant\n%q", out, want)
	}
	out, _, _ = run(t, "mcp-config", "codex", "--http", v)
	if !strings.Contains(out, "export LOCI_TOKEN="+tok) {
		t.Errorf("codex http does not say how to set the token:\n%s", out)
	}

	// No client: the list, one line per client with where it goes.
	out, _, code = run(t, "mcp-config")
	if code != 0 || len(strings.Split(strings.TrimSpace(out), "\n")) != len(mcpClients)+3 {
		t.Errorf("list: %d\n%s", code, out)
	}
	for _, line := range []string{"vscode  ", ".vscode/mcp.json", "zed  ", "Zed settings.json", "windsurf  ", "mcp_config.json", "gemini  ", ".gemini/settings.json", "via npx mcp-remote"} {
		if !strings.Contains(out, line) {
			t.Errorf("list lacks %q:\n%s", line, out)
		}
	}

	_, errOut, code := run(t, "mcp-config", "vim", v)
	if code != 2 || !strings.Contains(errOut, "unknown client") || !strings.Contains(errOut, "vscode") {
		t.Errorf("unknown client: %d %s", code, errOut)
	}
	_, _, code = run(t, "mcp-config", "cursor", filepath.Join(v, "missing"))
	if code != 3 {
		t.Errorf("missing vault: %d", code)
	}
	// Flag help names no bogus value type (cobra reads `...` in a usage as one).
	out, _, _ = run(t, "mcp-config", "--help")
	if strings.Contains(out, "--addr loci") || strings.Contains(out, "--http loci") {
		t.Errorf("flag help:\n%s", out)
	}
}

// golden compares got with testdata/mcpconfig/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "mcpconfig", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestMCPConfig -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s:\n%s\nwant\n%s", name, got, want)
	}
}

// TestMCPConfigAfterGoRun: a loci running from a go-build folder or the
// build cache names the loci on PATH instead, or refuses with a note to
// install it first; an installed loci names itself.
func TestMCPConfigAfterGoRun(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "gocache")
	env := func(k string) string {
		if k == "GOCACHE" {
			return cache
		}
		return ""
	}
	installed := "/home/me/go/bin/loci"
	onPath := func(string) (string, error) { return installed, nil }
	notOnPath := func(string) (string, error) { return "", exec.ErrNotFound }
	goRun := filepath.Join(os.TempDir(), "go-build1234", "b001", "exe", "loci")
	inCache := filepath.Join(cache, "ab", "loci")
	elsewhere := "/srv/go-build77/exe/loci" // a go-build folder outside the temp dir

	for _, c := range []struct {
		exe      string
		lookPath func(string) (string, error)
		want     string // "" = refused
	}{
		{"/usr/local/bin/loci", notOnPath, "/usr/local/bin/loci"},
		{"/usr/local/bin/loci", onPath, "/usr/local/bin/loci"},
		{goRun, onPath, installed},
		{goRun, notOnPath, ""},
		{inCache, onPath, installed},
		{inCache, notOnPath, ""},
		{elsewhere, onPath, installed},
		// The loci on PATH is itself a throwaway build: refused too.
		{goRun, func(string) (string, error) { return inCache, nil }, ""},
	} {
		got, err := pickExecutable(c.exe, env, c.lookPath)
		if c.want == "" {
			if err == nil || errs.Code(err) != errs.CodeInvalidInput || !strings.Contains(err.Error(), "go install ./cmd/loci") {
				t.Errorf("%s: %q, %v; want a refusal saying to go install", c.exe, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.exe, got, err, c.want)
		}
	}

	// End to end: the test binary itself is a go-build product; with no loci
	// on PATH, mcp-config refuses with exit 2 and prints no snippet.
	t.Setenv("PATH", t.TempDir())
	v := demoCopy(t)
	out, errOut, code := run(t, "mcp-config", "cursor", v)
	if code != 2 || out != "" || !strings.Contains(errOut, "go install") {
		t.Errorf("from the test binary: exit %d, out %q, err %q", code, out, errOut)
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
