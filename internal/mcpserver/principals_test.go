package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/testutil"
)

// teamServer serves one vault with writes on behind internal/server, with a
// principals file holding a read-only "reader" and a read+write "editor"
// (plus the owner token) and "graph" (read, logseq toolset only), on a
// real 127.0.0.1 listener.
type teamServer struct {
	url, owner string
	tokens     map[string]string // principal → token
	env        *ops.Env
}

func newTeamServer(t *testing.T, opt mcpserver.Options, toolsets []string) *teamServer {
	t.Helper()
	root := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, root, map[string]string{
		"Alpha.md": "# Alpha\n\nThe alpha project plan.\n",
		"Beta.md":  "# Beta\n\nLinks to [[Alpha]].\n",
	})
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, root, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}, Writes: ops.WriteSettings{Enabled: true}, Toolsets: toolsets}
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	store := auth.NewStore(t.TempDir())
	ts := &teamServer{owner: "owner-token-0123456789abcdef", tokens: map[string]string{}, env: env}
	for name, scopes := range map[string][]auth.Scope{
		"reader": {auth.ScopeRead},
		"editor": {auth.ScopeRead, auth.ScopeWrite},
	} {
		tok, err := store.Create(auth.Principal{Name: name, Scopes: scopes}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ts.tokens[name] = tok
	}
	// "graph": may read, but only through the logseq toolset.
	tok, err := store.Create(auth.Principal{Name: "graph", Scopes: []auth.Scope{auth.ScopeRead}, Toolsets: []string{"logseq"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ts.tokens["graph"] = tok
	reg := catalog.All()
	srv := mcpserver.New(reg, env, opt)
	hs, err := server.New(server.Options{Addr: "127.0.0.1:0", Token: ts.owner, Auth: auth.NewAuthenticator(ts.owner, store, nil),
		MCP: srv.HTTPHandler(), API: api.New(reg, env, api.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(hs.Handler())
	t.Cleanup(func() {
		srv.Close()
		h.Close()
		env.Close()
	})
	ts.url = h.URL
	return ts
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

// errCode is the loci error code of a failed tool result ("" if it did
// not fail).
func errCode(res *mcp.CallToolResult) string {
	if !res.IsError {
		return ""
	}
	m, _ := res.Meta["loci/error"].(map[string]any)
	code, _ := m["code"].(string)
	return code
}

// TestToolsListByPrincipal: over MCP HTTP with the SDK client, tools/list
// shows each principal exactly the operations its scopes let it call; a
// hidden tool called anyway is forbidden; the owner sees every tool.
func TestToolsListByPrincipal(t *testing.T) {
	ts := newTeamServer(t, mcpserver.Options{}, nil)
	reg := catalog.All()
	want := func(p *auth.Principal) []string {
		var out []string
		for _, op := range reg.List() {
			if ts.env.Offered(op, p) {
				out = append(out, op.Name)
			}
		}
		sort.Strings(out)
		return out
	}
	owner := toolNames(t, connectWith(t, ts.url, ts.owner))
	reader := toolNames(t, connectWith(t, ts.url, ts.tokens["reader"]))
	editor := toolNames(t, connectWith(t, ts.url, ts.tokens["editor"]))
	if !slices.Equal(owner, want(nil)) {
		t.Errorf("owner sees %d tools, want %d", len(owner), len(want(nil)))
	}
	if !slices.Equal(reader, want(&auth.Principal{Name: "reader", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken})) {
		t.Errorf("reader sees %v", reader)
	}
	for _, name := range []string{"edit_note", "capture_note", "delete_note", "undo", "relocate_note"} {
		if slices.Contains(reader, name) {
			t.Errorf("reader is shown %s", name)
		}
	}
	if !slices.Contains(reader, "search_notes") || !slices.Contains(reader, "read_note") {
		t.Errorf("reader is not shown search_notes/read_note: %v", reader)
	}
	if !slices.Contains(editor, "edit_note") || slices.Contains(editor, "delete_note") || !slices.Contains(owner, "delete_note") {
		t.Errorf("editor: edit_note %v delete_note %v; owner delete_note %v", slices.Contains(editor, "edit_note"),
			slices.Contains(editor, "delete_note"), slices.Contains(owner, "delete_note"))
	}
	if !(len(reader) < len(editor) && len(editor) < len(owner)) {
		t.Errorf("reader %d, editor %d, owner %d tools: want fewer for fewer scopes", len(reader), len(editor), len(owner))
	}

	// Hidden is not callable: the pipeline refuses it.
	cs := connectWith(t, ts.url, ts.tokens["reader"])
	res := call(t, cs, "capture_note", map[string]any{"title": "Sneaky", "apply": true})
	if errCode(res) != "forbidden" || !strings.Contains(text(res), "write") {
		t.Errorf("reader calling hidden capture_note: %s", text(res))
	}
	if res := call(t, cs, "search_notes", map[string]any{"query": "alpha"}); res.IsError {
		t.Errorf("reader search_notes: %s", text(res))
	}
}

// TestServerToolsetsOverMCP: with server toolsets [read], even the owner
// is not shown (nor may call) the write tools.
func TestServerToolsetsOverMCP(t *testing.T) {
	ts := newTeamServer(t, mcpserver.Options{}, []string{"read"})
	cs := connectWith(t, ts.url, ts.owner)
	names := toolNames(t, cs)
	for _, name := range names {
		op, _ := catalog.All().Get(name)
		if op == nil || op.Group() != "read" {
			t.Errorf("server toolsets [read] list %s (group %v)", name, op.Group())
		}
	}
	if !slices.Contains(names, "search_notes") {
		t.Errorf("search_notes not listed: %v", names)
	}
	// capture_note is not a tool at all here: the SDK answers unknown tool.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "capture_note", Arguments: map[string]any{"title": "x", "apply": true}}); err == nil && !res.IsError {
		t.Errorf("owner ran capture_note under server toolsets [read]: %s", text(res))
	}
}

func decode(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool failed: %s", text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// TestFacade: in facade mode the SDK client sees three tools;
// find_capability finds search_notes, describe_capability shows its
// schema, call_capability runs it; a read-only principal calling edit_note
// through call_capability is forbidden, and is not shown it either.
func TestFacade(t *testing.T) {
	ts := newTeamServer(t, mcpserver.Options{Facade: true}, nil)
	for _, who := range []string{"owner", "reader"} {
		tok := ts.owner
		if who != "owner" {
			tok = ts.tokens[who]
		}
		cs := connectWith(t, ts.url, tok)
		if got := toolNames(t, cs); !slices.Equal(got, []string{"call_capability", "describe_capability", "find_capability"}) {
			t.Fatalf("%s: facade lists %v", who, got)
		}
		var found struct {
			Capabilities []struct{ Name, Title, Summary, Scope, Toolset string }
		}
		decode(t, call(t, cs, "find_capability", map[string]any{"query": "search notes"}), &found)
		if len(found.Capabilities) == 0 || found.Capabilities[0].Name != "search_notes" || found.Capabilities[0].Scope != "read" || found.Capabilities[0].Toolset != "read" {
			t.Errorf("%s: find_capability search notes: %+v", who, found.Capabilities)
		}
		var all struct{ Capabilities []struct{ Name string } }
		decode(t, call(t, cs, "find_capability", map[string]any{}), &all)
		var names []string
		for _, c := range all.Capabilities {
			names = append(names, c.Name)
		}
		if slices.Contains(names, "edit_note") != (who == "owner") {
			t.Errorf("%s: edit_note listed %v", who, slices.Contains(names, "edit_note"))
		}
		var writes struct {
			Capabilities []struct{ Name, Toolset string }
		}
		decode(t, call(t, cs, "find_capability", map[string]any{"toolset": "write"}), &writes)
		for _, c := range writes.Capabilities {
			if c.Toolset != "write" {
				t.Errorf("%s: toolset write lists %s (%s)", who, c.Name, c.Toolset)
			}
		}
		if (len(writes.Capabilities) > 0) != (who == "owner") {
			t.Errorf("%s: %d write operations found", who, len(writes.Capabilities))
		}

		var desc struct {
			Name        string
			Scope       string
			InputSchema map[string]any `json:"input_schema"`
			Example     map[string]any
		}
		decode(t, call(t, cs, "describe_capability", map[string]any{"name": "search_notes"}), &desc)
		if desc.Name != "search_notes" || desc.InputSchema["type"] != "object" || desc.Example == nil {
			t.Errorf("%s: describe_capability: %+v", who, desc)
		}

		var out struct {
			Results []struct{ Path string }
		}
		decode(t, call(t, cs, "call_capability", map[string]any{"name": "search_notes", "arguments": map[string]any{"query": "alpha"}}), &out)
		if len(out.Results) == 0 || out.Results[0].Path != "Alpha.md" {
			t.Errorf("%s: call_capability search_notes: %+v", who, out.Results)
		}
	}

	reader := connectWith(t, ts.url, ts.tokens["reader"])
	res := call(t, reader, "call_capability", map[string]any{"name": "edit_note",
		"arguments": map[string]any{"path": "Alpha.md", "edits": []any{}, "apply": true}})
	if errCode(res) != "forbidden" {
		t.Errorf("reader edit_note through call_capability: %s, want forbidden", text(res))
	}
	if res := call(t, reader, "describe_capability", map[string]any{"name": "edit_note"}); errCode(res) != "forbidden" {
		t.Errorf("reader describe edit_note: %s, want forbidden", text(res))
	}
	if res := call(t, reader, "call_capability", map[string]any{"name": "no_such_op"}); errCode(res) != "unknown_operation" {
		t.Errorf("unknown operation: %s", text(res))
	}
	if res := call(t, reader, "find_capability", map[string]any{"toolset": "writes"}); errCode(res) != "validation_failed" {
		t.Errorf("unknown toolset: %s", text(res))
	}
	// The file is untouched.
	var note struct{ Content string }
	decode(t, call(t, reader, "call_capability", map[string]any{"name": "read_note", "arguments": map[string]any{"path": "Alpha.md"}}), &note)
	if !strings.Contains(note.Content, "The alpha project plan.") {
		t.Errorf("Alpha.md changed: %q", note.Content)
	}
}

// TestResourcesAreRateLimited: resources/read and resources/list take a
// token of the principal's read bucket, as read_note does, so an agent
// cannot read past its limit through resources; the refusal is
// rate_limited with its details.
func TestResourcesAreRateLimited(t *testing.T) {
	ts := newTeamServer(t, mcpserver.Options{}, nil)
	now := time.Now()
	ts.env.Limits = ops.NewLimiter(ops.LimitSettings{Read: ops.Rate{PerMinute: 1, Burst: 2}}, func() time.Time { return now })
	cs := connectWith(t, ts.url, ts.tokens["reader"])
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Fatalf("first resources/list: %v", err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Alpha.md"}); err != nil {
		t.Fatalf("first resources/read: %v", err)
	}
	_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Alpha.md"})
	if err == nil || !strings.Contains(err.Error(), "rate_limited") || !strings.Contains(err.Error(), "retry in") {
		t.Fatalf("resources/read over the limit: %v, want rate_limited", err)
	}
	if _, err := cs.ListResources(ctx, nil); err == nil || !strings.Contains(err.Error(), "rate_limited") {
		t.Fatalf("resources/list over the limit: %v, want rate_limited", err)
	}
	// The owner's own session is limited too, but in its own bucket.
	if _, err := connectWith(t, ts.url, ts.owner).ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Alpha.md"}); err != nil {
		t.Errorf("owner resources/read: %v", err)
	}
}

// TestResourcesFollowToolsets: a principal whose toolsets leave out read
// may not read notes through resources either (read_note's rule).
func TestResourcesFollowToolsets(t *testing.T) {
	ts := newTeamServer(t, mcpserver.Options{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cs := connectWith(t, ts.url, ts.tokens["graph"])
	if res := call(t, cs, "read_note", map[string]any{"path": "Alpha.md"}); errCode(res) != "forbidden" {
		t.Fatalf("graph read_note: %s, want forbidden", text(res))
	}
	_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Alpha.md"})
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "toolset") {
		t.Fatalf("graph resources/read: %v, want forbidden naming the toolset", err)
	}
	if _, err := cs.ListResources(ctx, nil); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("graph resources/list: %v, want forbidden", err)
	}
	if _, err := connectWith(t, ts.url, ts.tokens["reader"]).ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Alpha.md"}); err != nil {
		t.Errorf("reader resources/read: %v", err)
	}
}
