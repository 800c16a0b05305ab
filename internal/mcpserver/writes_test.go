package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

// bearer adds the token to every request of the MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// writeServer serves a vault with writes enabled the way `loci serve
// --enable-writes` does: internal/server (token, Host and Origin checks)
// in front of the MCP and REST handlers, on a real 127.0.0.1 listener.
func writeServer(t *testing.T, files map[string]string, sessions int) (url, token, root string, env *ops.Env) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, root, files)
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, root, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env = &ops.Env{Vaults: []*ops.VaultHandle{vh}, Writes: ops.WriteSettings{Enabled: true}}
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := catalog.All()
	srv := mcpserver.New(reg, env, mcpserver.Options{MaxSessions: sessions})
	token = "test-token-0123456789abcdef"
	hs, err := server.New(server.Options{Addr: "127.0.0.1:0", Token: token, MCP: srv.HTTPHandler(), API: api.New(reg, env, api.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(hs.Handler())
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
		env.Close()
	})
	return ts.URL, token, vh.Vault.Root, env
}

func connectWith(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "loci-writer", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestConcurrentGuardedEditsOverMCP: 16 MCP sessions over HTTP each make 200
// etag-guarded edits of the same note (read_note, then edit_note with
// if_match). Every edit that reports success must be in the final file,
// every other one must have failed with etag_mismatch, and nothing else
// may be in the file: no lost update, no duplicate, no torn write.
func TestConcurrentGuardedEditsOverMCP(t *testing.T) {
	goroutines, edits := 16, 200
	if testing.Short() {
		edits = 25
	}
	url, token, root, env := writeServer(t, map[string]string{"Shared.md": "# Shared\n"}, goroutines+4)
	start := time.Now()
	type outcome struct {
		ok       []string
		mismatch int
	}
	results := make([]outcome, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		cs := connectWith(t, url, token)
		wg.Go(func() {
			ctx := context.Background()
			for i := range edits {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_note", Arguments: map[string]any{"path": "Shared.md"}})
				if err != nil || res.IsError {
					t.Errorf("read_note: %v %v", err, res)
					return
				}
				var rn struct {
					Etag       string `json:"etag"`
					TotalLines int    `json:"total_lines"`
				}
				b, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(b, &rn)
				line := fmt.Sprintf("edit g%02d-%03d", g, i)
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "edit_note", Arguments: map[string]any{
					"path": "Shared.md", "if_match": rn.Etag, "apply": true,
					"patches": []any{map[string]any{"op": "insert_lines", "line": rn.TotalLines + 1, "content": line}},
				}})
				if err != nil {
					t.Errorf("edit_note: protocol error %v", err)
					return
				}
				if !res.IsError {
					var w struct {
						Applied bool   `json:"applied"`
						Etag    string `json:"etag"`
					}
					b, _ := json.Marshal(res.StructuredContent)
					json.Unmarshal(b, &w)
					if !w.Applied || len(w.Etag) != 64 {
						t.Errorf("success without an applied write: %s", b)
					}
					results[g].ok = append(results[g].ok, line)
					continue
				}
				e, _ := res.Meta["loci/error"].(map[string]any)
				if code, _ := e["code"].(string); code != "etag_mismatch" {
					t.Errorf("edit %s failed with %v, want etag_mismatch", line, e)
					continue
				}
				results[g].mismatch++
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	b, err := os.ReadFile(filepath.Join(root, "Shared.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != "# Shared" {
		t.Fatalf("the note lost its heading: %q", lines[0])
	}
	inFile := map[string]int{}
	for _, l := range lines[1:] {
		inFile[l]++
	}
	var ok, mismatch int
	for g, r := range results {
		ok += len(r.ok)
		mismatch += r.mismatch
		// Each session's successes appear in its own order.
		prev := -1
		for _, l := range r.ok {
			if inFile[l] != 1 {
				t.Errorf("successful edit %q appears %d times in the file", l, inFile[l])
			}
			at := slices.Index(lines, l)
			if at < prev {
				t.Errorf("session %d: %q is before an earlier success", g, l)
			}
			prev = at
			delete(inFile, l)
		}
	}
	for l := range inFile {
		t.Errorf("line %q in the file was never reported as a success", l)
	}
	if ok+mismatch != goroutines*edits {
		t.Errorf("%d successes + %d etag_mismatch != %d edits", ok, mismatch, goroutines*edits)
	}
	if ok == 0 || mismatch == 0 {
		t.Errorf("no contention was exercised: %d successes, %d mismatches", ok, mismatch)
	}
	// Every success was journaled and audited once; the index holds the final note.
	w, err := env.Writer(env.Vaults[0])
	if err != nil {
		t.Fatal(err)
	}
	if es, _ := w.Journal(); len(es) != ok {
		t.Errorf("journal: %d entries, %d successes", len(es), ok)
	}
	audit, _ := os.ReadFile(w.AuditPath())
	if n := strings.Count(string(audit), "\n"); n != ok {
		t.Errorf("audit: %d lines, %d successes", n, ok)
	}
	n, err := env.Vaults[0].Index.NoteByPath(context.Background(), "Shared.md")
	if err != nil || n.Etag != vault.Etag(b) {
		t.Errorf("index etag %v, file %s (%v)", n, vault.Etag(b), err)
	}
	t.Logf("%d sessions × %d guarded edits over MCP HTTP: %d applied, %d etag_mismatch, in %s (%.0f calls/s)",
		goroutines, edits, ok, mismatch, elapsed.Round(time.Millisecond), float64(2*goroutines*edits)/elapsed.Seconds())
}

// TestWriteToolsOverMCP checks the write tools' advertisement and
// annotations, and a preview → apply → undo round trip with the SDK client.
func TestWriteToolsOverMCP(t *testing.T) {
	url, token, root, _ := writeServer(t, map[string]string{"A.md": "# A\n", "B.md": "[[A]]\n"}, 4)
	cs := connectWith(t, url, token)
	ctx := context.Background()
	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	for _, op := range catalog.All().List() {
		if op.Toolset == ops.ToolsetAI {
			continue // advertised only with AI configured (internal/ops ai tests)
		}
		tool := tools[op.Name]
		if tool == nil {
			t.Errorf("%s not advertised with writes on", op.Name)
			continue
		}
		a := tool.Annotations
		if a.ReadOnlyHint != op.Annotations.ReadOnly || *a.DestructiveHint != op.Annotations.Destructive {
			t.Errorf("%s: annotations %+v", op.Name, a)
		}
	}
	for _, name := range []string{"delete_note", "edit_note", "relocate_note", "undo", "delete_block"} {
		if tools[name] != nil && !*tools[name].Annotations.DestructiveHint {
			t.Errorf("%s is not marked destructive", name)
		}
	}
	if tools["capture_note"] != nil && *tools["capture_note"].Annotations.DestructiveHint {
		t.Error("capture_note only adds, it is not destructive")
	}
	call := func(name string, args map[string]any, out any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if out != nil && !res.IsError {
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, out)
		}
		return res
	}
	var pre, done struct {
		Applied bool   `json:"applied"`
		Path    string `json:"path"`
		UndoID  string `json:"undo_id"`
		Changes []struct {
			Path string `json:"path"`
			Diff string `json:"diff"`
		} `json:"changes"`
	}
	call("relocate_note", map[string]any{"path": "A.md", "to": "Z/A2.md"}, &pre)
	if pre.Applied || len(pre.Changes) != 2 {
		t.Fatalf("preview %+v", pre)
	}
	call("relocate_note", map[string]any{"path": "A.md", "to": "Z/A2.md", "apply": true}, &done)
	if b, _ := os.ReadFile(filepath.Join(root, "B.md")); string(b) != "[[A2]]\n" || done.UndoID == "" {
		t.Fatalf("relocate over MCP: %q %+v", b, done)
	}
	var hist struct {
		Entries []struct {
			Session string `json:"session"`
			Surface string `json:"surface"`
		} `json:"entries"`
	}
	call("write_history", map[string]any{}, &hist)
	if len(hist.Entries) != 1 || hist.Entries[0].Surface != "mcp" || hist.Entries[0].Session != cs.ID() {
		t.Errorf("history %+v (session %s)", hist, cs.ID())
	}
	// undo without arguments reverts this session's last change.
	if res := call("undo", map[string]any{"apply": true}, nil); res.IsError {
		t.Fatalf("undo: %s", text(res))
	}
	if b, _ := os.ReadFile(filepath.Join(root, "B.md")); string(b) != "[[A]]\n" {
		t.Errorf("after undo: %q", b)
	}
	// Another session has nothing of its own to undo.
	other := connectWith(t, url, token)
	res, _ := other.CallTool(ctx, &mcp.CallToolParams{Name: "undo", Arguments: map[string]any{"apply": true}})
	if e, _ := res.Meta["loci/error"].(map[string]any); e["code"] != "undo_not_found" {
		t.Errorf("undo from another session: %s", text(res))
	}
}
