package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/testutil"
)

// matrixServer is a real `loci serve` (in-process, 127.0.0.1:0) over two
// vaults A and B with writes on, and principals made by the principals
// file in a private config folder.
type matrixServer struct {
	t      *testing.T
	s      *serving
	base   string
	tokens map[string]string // principal → token ("owner" is the vault token)
	vaults map[string]string // vault name → folder
}

// matrixPrincipals are the principals of the matrix: each is a row.
var matrixPrincipals = []auth.Principal{
	{Name: "reader", Scopes: []auth.Scope{auth.ScopeRead}},
	{Name: "writer", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}},
	{Name: "destroyer", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeDestructive}, Confirm: auth.PolicyAllow},
	{Name: "thinker", Scopes: []auth.Scope{auth.ScopeAI}},
	{Name: "b-only", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, Vaults: []string{"B"}},
	{Name: "auditor", Scopes: []auth.Scope{auth.ScopeAdmin}},
	{Name: "careful", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeDestructive}, Confirm: auth.PolicyConfirm},
}

func startMatrix(t *testing.T) *matrixServer {
	t.Helper()
	t.Setenv(server.EnvToken, "")
	cfgDir := t.TempDir()
	t.Setenv(config.EnvConfigDir, cfgDir)
	root := t.TempDir()
	m := &matrixServer{t: t, tokens: map[string]string{}, vaults: map[string]string{}}
	for _, name := range []string{"A", "B"} {
		dir := filepath.Join(root, name)
		files := map[string]string{"alpha.md": "# Alpha\n\nalpha words in vault " + name + "\n"}
		for _, p := range append(matrixPrincipals, auth.Principal{Name: "owner"}) {
			for _, surf := range []string{"rest", "mcp"} {
				files[fmt.Sprintf("del/%s-%s.md", p.Name, surf)] = "# Doomed\n\nto be deleted\n"
			}
		}
		testutil.WriteFiles(t, dir, files)
		if _, errOut, code := run(t, "index", dir, "-q"); code != 0 {
			t.Fatalf("index %s: %s", name, errOut)
		}
		m.vaults[name] = dir
	}
	st := auth.NewStore(cfgDir)
	for _, p := range matrixPrincipals {
		tok, err := st.Create(p, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		m.tokens[p.Name] = tok
	}
	var stdout, stderr bytes.Buffer
	g := &globals{vault: ".", format: "text", enableWrites: true, stdout: &stdout, stderr: &stderr}
	s, _ := serveForTest(t, g, []string{m.vaults["A"], m.vaults["B"]}, serveOptions{addr: "127.0.0.1:0", maxSessions: 16, logLevel: "warn", noSync: true})
	m.s, m.base = s, s.srv.URL()
	m.tokens["owner"] = s.token
	return m
}

// rest calls an operation over REST and returns the error code ("" on
// success) and the HTTP status.
func (m *matrixServer) rest(principal, op string, in map[string]any) (string, int) {
	m.t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest("POST", m.base+"/v1/ops/"+op, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+m.tokens[principal])
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var env struct {
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(body, &env)
	if res.StatusCode == 200 {
		return "", 200
	}
	if env.Error == nil {
		m.t.Fatalf("REST %s as %s: %d without an error: %s", op, principal, res.StatusCode, body)
	}
	return env.Error.Code, res.StatusCode
}

func (m *matrixServer) mcpSession(principal string) *mcp.ClientSession {
	m.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "matrix-" + principal, Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: m.base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{m.tokens[principal]}},
	}, nil)
	if err != nil {
		m.t.Fatalf("MCP connect as %s: %v", principal, err)
	}
	m.t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpCall calls a tool and returns its error code ("" on success).
func mcpCall(t *testing.T, cs *mcp.ClientSession, op string, in map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: op, Arguments: in})
	if err != nil {
		// A tool the server does not list (for this principal, or at
		// all: the AI tools while AI is off) is refused by the SDK.
		if strings.Contains(err.Error(), "unknown tool") {
			return "unlisted"
		}
		t.Fatalf("MCP %s: %v", op, err)
	}
	if !res.IsError {
		return ""
	}
	e, _ := res.Meta["loci/error"].(map[string]any)
	code, _ := e["code"].(string)
	if code == "" {
		t.Fatalf("MCP %s: error without a code: %+v", op, res)
	}
	return code
}

// matrixCell is one operation call of the matrix, on one vault.
type matrixCell struct {
	op    string
	vault string
	in    func(principal, surface string) map[string]any
}

func matrixCells() []matrixCell {
	var cells []matrixCell
	for _, v := range []string{"A", "B"} {
		v := v
		cells = append(cells,
			matrixCell{"search_notes", v, func(string, string) map[string]any {
				return map[string]any{"query": "alpha", "vault": v}
			}},
			matrixCell{"read_note", v, func(string, string) map[string]any {
				return map[string]any{"path": "alpha.md", "vault": v}
			}},
			matrixCell{"capture_note", v, func(p, s string) map[string]any {
				return map[string]any{"title": "cap " + p + " " + s, "content": "captured", "apply": true, "vault": v}
			}},
			matrixCell{"delete_note", v, func(p, s string) map[string]any {
				return map[string]any{"path": "del/" + p + "-" + s + ".md", "apply": true, "vault": v}
			}},
			matrixCell{"ai_status", v, func(string, string) map[string]any {
				return map[string]any{"vault": v}
			}},
			matrixCell{"inspect_acl", v, func(string, string) map[string]any {
				return map[string]any{"path": "alpha.md", "vault": v}
			}},
		)
	}
	return cells
}

// allowed is the matrix's oracle: the principal holds every scope the
// operation needs and may use the vault.
func allowed(reg *ops.Registry, p auth.Principal, op, vault string) bool {
	if p.Name == "owner" {
		return true
	}
	o, ok := reg.Get(op)
	if !ok {
		panic(op)
	}
	pp := p
	return len(pp.Missing(ops.Needs(o.Scope)...)) == 0 && pp.MayUse(vault)
}

// TestPrincipalMatrix runs principals × operations × surfaces (REST and MCP
// over Streamable HTTP with the SDK client) against one real server and
// checks each cell: allowed calls succeed, the others are forbidden (403
// over REST) and change nothing.
func TestPrincipalMatrix(t *testing.T) {
	m := startMatrix(t)
	reg := catalog.All()
	rows := append([]auth.Principal{{Name: "owner"}}, matrixPrincipals...)
	for _, p := range rows {
		cs := m.mcpSession(p.Name)
		for _, c := range matrixCells() {
			want := allowed(reg, p, c.op, c.vault)
			code, status := m.rest(p.Name, c.op, c.in(p.Name, "rest"))
			mcode := mcpCall(t, cs, c.op, c.in(p.Name, "mcp"))
			for _, got := range []struct {
				surface, code string
			}{{"rest", code}, {"mcp", mcode}} {
				if got.surface == "mcp" && got.code == "unlisted" {
					if o, _ := reg.Get(c.op); !want || o.Toolset == ops.ToolsetAI {
						continue // not offered to this principal (or to anyone: AI is off)
					}
				}
				wantCode := ""
				if o, _ := reg.Get(c.op); want && o.Scope == auth.ScopeDestructive && p.MustConfirm() {
					wantCode = "confirmation_required" // a person confirms first
				}
				switch {
				case want && got.code != wantCode:
					t.Errorf("%s %s on %s over %s: want allowed, got %s", p.Name, c.op, c.vault, got.surface, got.code)
				case !want && got.code != "forbidden":
					t.Errorf("%s %s on %s over %s: want forbidden, got %q", p.Name, c.op, c.vault, got.surface, got.code)
				}
			}
			if !want && status != http.StatusForbidden {
				t.Errorf("%s %s on %s over REST: status %d, want 403", p.Name, c.op, c.vault, status)
			}
			if c.op == "delete_note" {
				for _, s := range []string{"rest", "mcp"} {
					_, err := os.Stat(filepath.Join(m.vaults[c.vault], "del", p.Name+"-"+s+".md"))
					if gone := err != nil; gone != (want && !p.MustConfirm()) {
						t.Errorf("%s delete_note on %s over %s: deleted=%v, want %v", p.Name, c.vault, s, gone, want)
					}
				}
			}
		}
	}
}

// TestUnknownTokenIsUnauthorized: a token that is not the owner's and not
// in the principals file is 401 on every surface, and a revoked one stops
// working at the next request of the running server.
func TestUnknownTokenIsUnauthorized(t *testing.T) {
	m := startMatrix(t)
	m.tokens["nobody"] = auth.TokenPrefix + strings.Repeat("A", 43)
	if code, status := m.rest("nobody", "search_notes", map[string]any{"query": "alpha"}); code != "unauthorized" || status != 401 {
		t.Errorf("unknown token: %s %d", code, status)
	}
	if code, _ := m.rest("reader", "search_notes", map[string]any{"query": "alpha"}); code != "" {
		t.Fatalf("reader before revoke: %s", code)
	}
	if _, errOut, code := run(t, "token", "revoke", "reader"); code != 0 {
		t.Fatalf("revoke: %s", errOut)
	}
	if code, status := m.rest("reader", "search_notes", map[string]any{"query": "alpha"}); code != "unauthorized" || status != 401 {
		t.Errorf("revoked token: %s %d", code, status)
	}
}

// TestPrincipalMatrixWeb is the web UI's column of the matrix: each
// principal searches through the UI with its bearer token (as a scripted
// client does); those with the read scope on the default vault see the
// note, the others get the refusal and no note text.
func TestPrincipalMatrixWeb(t *testing.T) {
	m := startMatrix(t)
	reg := catalog.All()
	rows := append([]auth.Principal{{Name: "owner"}}, matrixPrincipals...)
	for _, p := range rows {
		req, _ := http.NewRequest("GET", m.base+"/?q=alpha&mode=lexical", nil)
		req.Header.Set("Authorization", "Bearer "+m.tokens[p.Name])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		page := string(body)
		shows := strings.Contains(page, "alpha.md")
		if want := allowed(reg, p, "search_notes", "A"); shows != want {
			t.Errorf("web search as %s: shows the note = %v, want %v (status %d)\n%.400s", p.Name, shows, want, res.StatusCode, page)
		}
	}
}

// TestCompletionHidesOtherVaults: completing the vault of a resource URI
// offers a principal only the vaults it may use.
func TestCompletionHidesOtherVaults(t *testing.T) {
	m := startMatrix(t)
	for who, want := range map[string]int{"owner": 2, "reader": 2, "b-only": 1} {
		cs := m.mcpSession(who)
		cr, err := cs.Complete(context.Background(), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "loci://{vault}/{+path}"},
			Argument: mcp.CompleteParamsArgument{Name: "vault", Value: ""},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := cr.Completion.Values; len(got) != want {
			t.Errorf("%s completes the vaults %v, want %d of them", who, got, want)
		}
	}
}

// TestStatusHidesServerPaths: index_status tells an agent neither where
// the server keeps its files nor which vaults it may not use; the owner
// sees both.
func TestStatusHidesServerPaths(t *testing.T) {
	m := startMatrix(t)
	for _, who := range []string{"owner", "reader", "b-only"} {
		b, _ := json.Marshal(map[string]any{"vault": "B"})
		req, _ := http.NewRequest("POST", m.base+"/v1/ops/index_status", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+m.tokens[who])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", who, res.StatusCode, body)
		}
		showsRoot := strings.Contains(string(body), m.vaults["B"])
		showsA := strings.Contains(string(body), `"name":"A"`)
		if who == "owner" && (!showsRoot || !showsA) {
			t.Errorf("owner: root shown %v, vault A listed %v: %s", showsRoot, showsA, body)
		}
		if who != "owner" && showsRoot {
			t.Errorf("%s sees the server's folder %s: %s", who, m.vaults["B"], body)
		}
		if who == "b-only" && showsA {
			t.Errorf("b-only is told of vault A: %s", body)
		}
	}
}
