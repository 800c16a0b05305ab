package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestReadFencesEndToEnd runs `loci serve` in-process over a vault whose own
// config fences HR/** (deny_read_paths) and a principal from the principals
// file narrowed to Public/**. Over MCP (the SDK client over HTTP: tools,
// resources/list, resources/read, subscribe), REST and the web UI's pages,
// the principal never sees a word of HR/ or Private/; the owner sees
// Private/ but not HR/.
func TestReadFencesEndToEnd(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	t.Setenv(config.EnvConfig, "")
	cfgDir := t.TempDir()
	t.Setenv(config.EnvConfigDir, cfgDir)
	const secret, private = "quokkasecret", "wombatprivate"
	files := map[string]string{
		".loci/config.yaml": "deny_read_paths: [\"HR/**\"]\n",
		"HR/Salaries.md":    "---\nsalary_band: " + secret + "\n---\n# Salaries\n\nzebraword " + secret + ", see [[hub]]. #payroll\n",
		"Private/Diary.md":  "# Diary\n\nzebraword " + private + ", see [[hub]]. #diarytag\n",
		"Public/hub.md":     "# Hub\n\nzebraword hub #pub\n",
	}
	for i := 1; i <= 6; i++ {
		files[fmt.Sprintf("Public/p%d.md", i)] = fmt.Sprintf("# P%d\n\nzebraword public %d, see [[hub]]\n", i, i)
	}
	v := t.TempDir() + "/vault"
	testutil.WriteFiles(t, v, files)
	agentTok, err := auth.NewStore(cfgDir).Create(auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead}, ReadPaths: []string{"Public/**"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	g := &globals{vault: ".", format: "text", stdout: &stdout, stderr: &stderr}
	ctx := t.Context()
	s, synced := serveForTest(t, g, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn"})
	select {
	case <-synced:
	case <-time.After(30 * time.Second):
		t.Fatal("the background sync published nothing")
	}
	base := s.srv.URL()
	hrWords := []string{secret, "HR/", "Salaries", "salary_band", "payroll"}
	privWords := []string{private, "Private/", "Diary", "diarytag"}
	check := func(who, what, body string, words []string) {
		t.Helper()
		for _, w := range words {
			if strings.Contains(body, w) {
				t.Errorf("%s: %s leaks %q: %.400s", who, what, w, body)
			}
		}
	}

	for _, who := range []struct {
		name, tok string
		hidden    []string
		sees      []string
	}{
		{"agent", agentTok, append(hrWords, privWords...), []string{"Public/p1.md"}},
		{"owner", s.token, hrWords, []string{"Private/Diary.md"}},
	} {
		// MCP tools and resources with the SDK client.
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "fence-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{who.tok}}, MaxRetries: -1,
		}, nil)
		if err != nil {
			t.Fatalf("%s: MCP connect: %v", who.name, err)
		}
		var all strings.Builder
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"search_notes", map[string]any{"query": "zebraword", "mode": "lexical", "limit": 50}},
			{"search_notes", map[string]any{"query": "zebraword " + secret + " " + private, "limit": 50}},
			{"search_notes", map[string]any{"query": "salaries diary hub", "mode": "semantic", "limit": 50}},
			{"get_context", map[string]any{"query": "zebraword", "expand_links": true, "preview_chars": 300, "limit": 20}},
			{"read_note", map[string]any{"path": "HR/Salaries.md"}},
			{"read_note", map[string]any{"note": "Salaries"}},
			{"resolve_note", map[string]any{"note": "Sal"}},
			{"get_links", map[string]any{"path": "Public/hub.md", "depth": 3}},
			{"get_vault_tree", map[string]any{"depth": 4}},
			{"list_tags", map[string]any{}},
			{"list_frontmatter_keys", map[string]any{}},
		} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			if err != nil {
				t.Fatalf("%s: %s: %v", who.name, c.tool, err)
			}
			b, _ := json.Marshal(res)
			body := string(b)
			// An error may echo the input; nothing else may show.
			in, _ := json.Marshal(c.args)
			var words []string
			for _, w := range who.hidden {
				if !strings.Contains(string(in), w) {
					words = append(words, w)
				}
			}
			check(who.name, "MCP "+c.tool+string(in), body, words)
			all.WriteString(body)
		}
		if !strings.Contains(all.String(), who.sees[0]) {
			t.Errorf("%s: MCP tools never showed %s", who.name, who.sees[0])
		}
		var listed []string
		cursor := ""
		for page := 0; page < 50; page++ {
			lr, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(lr)
			check(who.name, "resources/list", string(b), who.hidden)
			for _, r := range lr.Resources {
				listed = append(listed, r.Name)
			}
			if cursor = lr.NextCursor; cursor == "" {
				break
			}
		}
		want := 7 // Public
		if who.name == "owner" {
			want = 8 // and Private
		}
		if len(listed) != want {
			t.Errorf("%s: resources/list = %v, want %d notes", who.name, listed, want)
		}
		host := s.env.Vaults[0].Name // "vault": already a valid URI host
		for _, p := range []string{"HR/Salaries.md", "hr/salaries.md"} {
			uri := "loci://" + host + "/" + p
			if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
				t.Errorf("%s: resources/read %s = %+v", who.name, p, rr)
			} else {
				check(who.name, "resources/read "+p, err.Error(), []string{secret})
			}
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil {
				t.Errorf("%s: subscribed to fenced %s", who.name, p)
			}
		}
		if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://" + host + "/Public/hub.md"}); err != nil || !strings.Contains(rr.Contents[0].Text, "zebraword hub") {
			t.Errorf("%s: resources/read of a visible note: %v", who.name, err)
		}
		cs.Close()

		// REST and the web UI's pages, with the bearer token.
		get := func(method, path, body string) string {
			req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+who.tok)
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		check(who.name, "REST search", get("POST", "/v1/ops/search_notes", `{"query":"zebraword","limit":50}`), who.hidden)
		check(who.name, "REST read_note", get("POST", "/v1/ops/read_note", `{"path":"Public/hub.md"}`), who.hidden)
		page := get("GET", "/?q=zebraword", "")
		if !strings.Contains(page, "Public/p1.md") {
			t.Errorf("%s: web search shows no result: %.300s", who.name, page)
		}
		check(who.name, "web search", page, who.hidden)
		page = get("GET", "/ui/note?path=Public/hub.md", "") // its backlinks come from every folder
		if !strings.Contains(page, "Public/p1.md") {
			t.Errorf("%s: web note page lacks a visible backlink: %.300s", who.name, page)
		}
		check(who.name, "web note page", page, who.hidden)
		check(who.name, "web fenced note", get("GET", "/ui/note?path=HR/Salaries.md", ""), []string{secret, "salary_band"})
		check(who.name, "web status", get("GET", "/ui/status", ""), who.hidden)
	}

	// inspect_acl for the agent, asked by the owner over REST.
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/ops/inspect_acl", strings.NewReader(`{"path":"Private/Diary.md","principal":"agent"}`))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"setting":"principal.read_paths"`) || !strings.Contains(string(b), `"allowed":false`) {
		t.Errorf("inspect_acl = %s", b)
	}
}

// TestTokenCreateReadFence: --read-path and --deny-read-path store a
// principal's own read fence; a bad glob is refused.
func TestTokenCreateReadFence(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(config.EnvConfigDir, dir)
	out, errOut, code := run(t, "token", "create", "reader", "--scopes", "read", "--read-path", "Public/**", "--deny-read-path", "Public/Drafts/**")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), auth.TokenPrefix) {
		t.Fatalf("token create: %d %q %q", code, out, errOut)
	}
	list, err := auth.NewStore(dir).List()
	if err != nil || len(list) != 1 || strings.Join(list[0].ReadPaths, ",") != "Public/**" || strings.Join(list[0].DenyReadPaths, ",") != "Public/Drafts/**" {
		t.Errorf("stored = %+v %v", list, err)
	}
	if _, errOut, code := run(t, "token", "create", "bad", "--scopes", "read", "--read-path", "Public/[**"); code == 0 || !strings.Contains(errOut, "invalid glob") {
		t.Errorf("bad glob: %d %q", code, errOut)
	}
}
