package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestTokenCreateListRevoke: `loci token create` prints the token as the
// last line of stdout (and nothing else there), stores only its hash in
// the 0600 principals file, refuses a bad name, a duplicate, an unknown
// scope or toolset; list never shows a token or hash; revoke removes it.
func TestTokenCreateListRevoke(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOCI_CONFIG_DIR", dir)
	out, errOut, code := run(t, "token", "create", "research-agent", "--scopes", "read", "--toolsets", "read")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	tok := lines[len(lines)-1]
	if code != 0 || !strings.HasPrefix(tok, auth.TokenPrefix) || len(lines) != 1 || !strings.Contains(errOut, "shown once") {
		t.Fatalf("token create: exit %d stdout %q stderr %q", code, out, errOut)
	}
	file := filepath.Join(dir, auth.PrincipalsFile)
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("principals file: %v %v", st, err)
	}
	b, _ := os.ReadFile(file)
	if strings.Contains(string(b), tok) || !strings.Contains(string(b), auth.HashToken(tok)) {
		t.Fatalf("the principals file holds the token, or not its hash:\n%s", b)
	}
	p, err := auth.NewStore(dir).Lookup(tok)
	if err != nil || p == nil || p.Name != "research-agent" || !slices.Equal(p.Toolsets, []string{"read"}) || p.Has(auth.ScopeWrite) {
		t.Fatalf("lookup: %+v %v", p, err)
	}

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"token", "create", "research-agent", "--scopes", "read"}, "exists"},
		{[]string{"token", "create", "owner", "--scopes", "read"}, "owner"},
		{[]string{"token", "create", "bad name", "--scopes", "read"}, "only letters"},
		{[]string{"token", "create", "x", "--scopes", "read,sudo"}, `unknown scope "sudo"`},
		{[]string{"token", "create", "x", "--scopes", "read", "--toolsets", "writes"}, `unknown toolset "writes"`},
		{[]string{"token", "create", "x", "--scopes", "read", "--confirm", "maybe"}, "confirmation policy"},
		{[]string{"token", "revoke", "nobody"}, "no principal"},
	} {
		out, errOut, code := run(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d stdout %q stderr %q, want exit 2 and %q", c.args, code, out, errOut, c.msg)
		}
	}

	_, _, code = run(t, "token", "create", "editor", "--scopes", "read,write,destructive", "--vault", "Notes")
	if code != 0 {
		t.Fatal("create editor failed")
	}
	out, _, code = run(t, "token", "list", "--format", "json")
	if code != 0 || strings.Contains(out, tok) || strings.Contains(out, auth.HashToken(tok)) {
		t.Fatalf("token list: exit %d, or it shows a token or hash:\n%s", code, out)
	}
	var listed struct {
		Principals []struct {
			Name    string
			Scopes  []string
			Vaults  []string
			Confirm string
		}
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed.Principals) != 2 || listed.Principals[0].Name != "editor" ||
		listed.Principals[0].Confirm != auth.PolicyConfirm || !slices.Equal(listed.Principals[0].Vaults, []string{"Notes"}) {
		t.Fatalf("token list: %+v %v", listed, err)
	}
	if _, errOut, code := run(t, "token", "revoke", "research-agent"); code != 0 || !strings.Contains(errOut, "revoked") {
		t.Fatalf("revoke: %d %s", code, errOut)
	}
	if p, err := auth.NewStore(dir).Lookup(tok); err != nil || p != nil {
		t.Fatalf("a revoked token still resolves: %+v %v", p, err)
	}
}

// TestServeToolsetsAndFacade: server.toolsets and server.facade from the
// user's config reach `loci serve`: MCP lists the three facade tools, and
// find_capability offers only read operations, even to the owner; the
// banner says so. --toolsets overrides the config and is validated.
func TestServeToolsetsAndFacade(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	userDir := t.TempDir()
	t.Setenv("LOCI_CONFIG_DIR", userDir)
	testutil.WriteFiles(t, userDir, map[string]string{"config.yaml": "server:\n  toolsets: [read]\n  facade: true\n"})
	v := demoCopy(t)
	var stdout, stderr bytes.Buffer
	g := &globals{vault: ".", format: "text", stdout: &stdout, stderr: &stderr}
	ctx := t.Context()
	s, _ := serveForTest(t, g, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn", noSync: true},
		func(s *serving) { s.printBanner(g, serveOptions{addr: "127.0.0.1:0"}) })
	if b := stdout.String(); !strings.Contains(b, "toolsets read only") || !strings.Contains(b, "facade   on") {
		t.Errorf("banner:\n%s", b)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: s.srv.URL() + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{s.token}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"call_capability", "describe_capability", "find_capability"}) {
		t.Fatalf("tools: %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find_capability", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("find_capability: %v %+v", err, res)
	}
	var found struct {
		Capabilities []struct{ Name, Toolset string }
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &found)
	if len(found.Capabilities) == 0 {
		t.Fatal("find_capability found nothing")
	}
	for _, c := range found.Capabilities {
		if c.Toolset != "read" {
			t.Errorf("server toolsets [read] offer %s (%s)", c.Name, c.Toolset)
		}
	}

	// The flag is validated and wins over the config.
	g2 := &globals{vault: ".", format: "text", stdout: &stdout, stderr: &stderr}
	if _, err := g2.startServe(ctx, []string{v}, serveOptions{addr: "127.0.0.1:0", logLevel: "warn", noSync: true,
		offer: offerOptions{toolsets: []string{"read,sudo"}}}); err == nil || !strings.Contains(err.Error(), `unknown toolset "sudo"`) {
		t.Errorf("--toolsets read,sudo: %v", err)
	}
	if _, errOut, code := run(t, "mcp", v, "--toolsets", "bogus"); code != 2 || !strings.Contains(errOut, `unknown toolset "bogus"`) {
		t.Errorf("loci mcp --toolsets bogus: exit %d %q", code, errOut)
	}
}
