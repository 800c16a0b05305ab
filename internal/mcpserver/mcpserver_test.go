package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

// waitFor bounds every wait on a notification; nothing here sleeps.
const waitFor = 10 * time.Second

func demoCopy(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	testutil.CopyTree(t, testutil.DemoVault(), dst)
	return dst
}

// indexedEnv opens root as the only vault of an Env (its index in
// root/.loci) and indexes it; the caller closes it, after its servers.
func indexedEnv(t *testing.T, root string) *ops.Env {
	t.Helper()
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, root, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		env.Close()
		t.Fatal(err)
	}
	return env
}

func TestMain(m *testing.M) { os.Exit(testutil.RunMain(m)) }

// lociBinary is the real binary (built once per test run).
func lociBinary(t *testing.T) string { return testutil.LociBinary(t) }

// lockedBuffer collects a child's stderr safely.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// call runs a tool and returns its result, failing on protocol errors.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// ok checks a successful result: structured content valid against the tool's
// advertised output schema (as a validating client would check it), and a
// text content holding the same JSON. It decodes the output into out.
func ok(t *testing.T, tools map[string]*mcp.Tool, name string, res *mcp.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s failed: %s", name, text(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); !jsonEqual([]byte(got), raw) {
		t.Errorf("%s: text content differs from structured content:\n%s\n%s", name, got, raw)
	}
	validate(t, tools[name], raw)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func validate(t *testing.T, tool *mcp.Tool, raw []byte) {
	t.Helper()
	sb, err := json.Marshal(tool.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(sb, &schema); err != nil {
		t.Fatalf("%s: output schema: %v", tool.Name, err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: output schema does not resolve: %v", tool.Name, err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if err := resolved.Validate(v); err != nil {
		t.Errorf("%s: output does not match its output schema: %v\n%s", tool.Name, err, raw)
	}
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// failed checks an error result and returns its code.
func failed(t *testing.T, name string, res *mcp.CallToolResult) string {
	t.Helper()
	if !res.IsError {
		t.Fatalf("%s: expected an error, got %s", name, text(res))
	}
	e, _ := res.Meta["loci/error"].(map[string]any)
	code, _ := e["code"].(string)
	if code == "" || !strings.HasPrefix(text(res), code+": ") {
		t.Errorf("%s: error text %q does not start with its code %q (meta %v)", name, text(res), code, res.Meta)
	}
	if res.StructuredContent != nil {
		if m, _ := res.StructuredContent.(map[string]any); m["error"] == nil {
			t.Errorf("%s: error structured content is not an error envelope: %v", name, res.StructuredContent)
		}
	}
	return code
}

// listTools checks that every registry op is a tool with its schemas and
// annotations, and returns the tools by name.
func listTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	// These servers run with writes off: write operations are not advertised.
	var advertised []*ops.Op
	for _, op := range catalog.All().List() {
		if (&ops.Env{}).Advertised(op) {
			advertised = append(advertised, op)
		}
	}
	if len(tools) != len(advertised) {
		t.Errorf("%d tools, %d read operations", len(tools), len(advertised))
	}
	for _, op := range advertised {
		tool := tools[op.Name]
		if tool == nil {
			t.Errorf("operation %s is not a tool", op.Name)
			continue
		}
		if tool.Title != op.Title || tool.Description != op.Description {
			t.Errorf("%s: title/description differ", op.Name)
		}
		in, _ := tool.InputSchema.(map[string]any)
		if in["type"] != "object" || in["properties"] == nil {
			t.Errorf("%s: input schema %v", op.Name, tool.InputSchema)
		}
		want, _ := json.Marshal(op.InputSchema)
		got, _ := json.Marshal(tool.InputSchema)
		if !jsonEqual(want, got) {
			t.Errorf("%s: input schema differs from the registry's:\n%s\n%s", op.Name, got, want)
		}
		want, _ = json.Marshal(op.OutputSchema)
		got, _ = json.Marshal(tool.OutputSchema)
		if out, _ := tool.OutputSchema.(map[string]any); out["type"] != "object" || !jsonEqual(want, got) {
			t.Errorf("%s: output schema %s, want %s", op.Name, got, want)
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != op.Annotations.ReadOnly || a.IdempotentHint != op.Annotations.Idempotent ||
			a.DestructiveHint == nil || *a.DestructiveHint != op.Annotations.Destructive ||
			a.OpenWorldHint == nil || *a.OpenWorldHint != op.Annotations.OpenWorld {
			t.Errorf("%s: annotations %+v, want %+v", op.Name, a, op.Annotations)
		}
	}
	return tools
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// exerciseTools runs the read operations on the demo vault and checks results.
func exerciseTools(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	tools := listTools(t, cs)

	var sr struct {
		Results []struct {
			Path        string   `json:"path"`
			Title       string   `json:"title"`
			Line        int      `json:"line"`
			HeadingPath []string `json:"heading_path"`
			Snippet     string   `json:"snippet"`
		} `json:"results"`
		Mode string `json:"mode"`
	}
	ok(t, tools, "search_notes", call(t, cs, "search_notes", map[string]any{"query": "spaced repetition", "limit": 2}), &sr)
	if len(sr.Results) != 2 || sr.Results[0].Path != "Ideas/Spaced repetition.md" || sr.Results[0].Snippet == "" || sr.Mode != "hybrid" {
		t.Errorf("search_notes: %+v", sr)
	}
	ok(t, tools, "search_notes", call(t, cs, "search_notes", map[string]any{"query": "知识"}), &sr)
	if len(sr.Results) == 0 || sr.Results[0].Path != "Notes/知识管理.md" {
		t.Errorf("search_notes (CJK): %+v", sr)
	}
	ok(t, tools, "search_notes", call(t, cs, "search_notes", map[string]any{"query": "zzqqxx"}), &sr)
	if len(sr.Results) != 0 {
		t.Errorf("search_notes with no match: %+v", sr)
	}

	var rn struct {
		Path, Etag, Content string
		TotalLines          int `json:"total_lines"`
	}
	ok(t, tools, "read_note", call(t, cs, "read_note", map[string]any{"path": "Ideas/Zettelkasten.md"}), &rn)
	if !strings.HasPrefix(rn.Content, "---\naliases: [slip box]") || len(rn.Etag) != 64 || rn.TotalLines == 0 {
		t.Errorf("read_note: %+v", rn)
	}
	ok(t, tools, "read_note", call(t, cs, "read_note", map[string]any{"path": "Ideas/Spaced repetition.md", "heading": "Why it works"}), &rn)
	if !strings.HasPrefix(rn.Content, "## Why it works") {
		t.Errorf("read_note heading: %q", rn.Content)
	}

	var links struct {
		Backlinks []struct {
			Source string `json:"source"`
			Line   int    `json:"line"`
		} `json:"backlinks"`
		TypedOut []struct {
			Key      string `json:"key"`
			Resolved string `json:"resolved"`
		} `json:"typed_out"`
	}
	ok(t, tools, "get_links", call(t, cs, "get_links", map[string]any{"path": "Projects/Project Atlas.md"}), &links)
	if len(links.Backlinks) != 4 {
		t.Errorf("get_links backlinks: %+v", links.Backlinks)
	}

	var tags struct {
		Tags []struct {
			Tag   string `json:"tag"`
			Notes int    `json:"notes"`
		} `json:"tags"`
	}
	ok(t, tools, "list_tags", call(t, cs, "list_tags", map[string]any{}), &tags)
	if !slices.ContainsFunc(tags.Tags, func(x struct {
		Tag   string `json:"tag"`
		Notes int    `json:"notes"`
	}) bool {
		return x.Tag == "learning/memory"
	}) {
		t.Errorf("list_tags: %+v", tags)
	}

	var st map[string]any
	ok(t, tools, "index_status", call(t, cs, "index_status", nil), &st)
	if st["notes"] != float64(16) {
		t.Errorf("index_status: %v", st)
	}

	okOthers := 0
	// Every other operation runs too, with the arguments of its example when
	// it has one, and must either succeed with schema-valid output or fail
	// with a typed error (never a protocol error).
	for name := range tools {
		switch name {
		case "search_notes", "read_note", "get_links", "list_tags", "index_status":
			continue
		}
		op, _ := catalog.All().Get(name)
		if !op.Annotations.ReadOnly {
			continue // writes are exercised by their own tests
		}
		var args map[string]any
		if ex := exampleOf(op); ex != "" {
			json.Unmarshal([]byte(ex), &args)
		}
		res := call(t, cs, name, args)
		if res.IsError {
			t.Logf("%s %v: %s", name, args, text(res))
			failed(t, name, res)
			continue
		}
		ok(t, tools, name, res, nil)
		okOthers++
	}
	t.Logf("%d tools; %d others succeeded with schema-valid output", len(tools), okOthers)

	// Errors come back as tool results with a stable code.
	for _, c := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"search_notes", map[string]any{"query": 5}, "validation_failed"},
		{"search_notes", map[string]any{"query": "x", "nope": true}, "validation_failed"},
		{"search_notes", map[string]any{"query": "x", "limit": 1000}, "validation_failed"},
		{"search_notes", map[string]any{}, "validation_failed"},
		{"read_note", map[string]any{"path": "../x.md"}, "path_denied"},
		{"read_note", map[string]any{"path": "/etc/passwd"}, "path_denied"},
		{"read_note", map[string]any{"path": ".obsidian/app.json"}, "path_denied"},
		{"read_note", map[string]any{"path": "Nope.md"}, "note_not_found"},
		{"read_note", map[string]any{"path": "Ideas/Zettelkasten.md", "vault": "nope"}, "vault_not_found"},
	} {
		if got := failed(t, c.tool, call(t, cs, c.tool, c.args)); got != c.code {
			t.Errorf("%s %v: code %q, want %q", c.tool, c.args, got, c.code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Error("unknown tool: no error")
	}
}

// exampleOf returns an op's Example field when the registry has one (by
// reflection, so this test does not depend on the field existing).
func exampleOf(op *ops.Op) string {
	if f := reflect.ValueOf(op).Elem().FieldByName("Example"); f.IsValid() && f.Kind() == reflect.String {
		return f.String()
	}
	return ""
}

// TestStdioBinary drives the real binary over stdio with the SDK client.
func TestStdioBinary(t *testing.T) {
	bin := lociBinary(t)
	v := demoCopy(t, "vault")
	if out, err := exec.Command(bin, "index", v, "-q").CombinedOutput(); err != nil {
		t.Fatalf("loci index: %v\n%s", err, out)
	}
	for _, version := range []string{"", "2025-06-18"} {
		t.Run("protocol="+version, func(t *testing.T) {
			var stderr lockedBuffer
			cmd := exec.Command(bin, "mcp", v, "--log-level", "debug", "--resync", "50ms")
			cmd.Stderr = &stderr
			updated := make(chan string, 16)
			client := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, &mcp.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
					updated <- r.Params.URI
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
			}
			init := cs.InitializeResult()
			if init.ServerInfo == nil || init.ServerInfo.Name != "loci" || !strings.Contains(init.Instructions, "search_notes") ||
				init.Capabilities.Tools == nil || init.Capabilities.Resources == nil || !init.Capabilities.Resources.Subscribe ||
				init.Capabilities.Prompts == nil || init.Capabilities.Logging == nil {
				t.Errorf("initialize: %+v (caps %+v)", init, init.Capabilities)
			}
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Errorf("logging/setLevel: %v", err)
			}
			t.Logf("negotiated protocol %s", init.ProtocolVersion)
			exerciseTools(t, cs)

			// The background re-sync picks up an edit and notifies the subscriber.
			uri := "loci://vault/Inbox/Unsorted.md"
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(filepath.Join(v, "Inbox", "Unsorted.md"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, "\nedited over %q\n", version)
			f.Close()
			if got := await(t, updated, "notifications/resources/updated over stdio"); got != uri {
				t.Errorf("updated %s", got)
			}
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Notes/Caf%C3%A9%20culture.md"})
			if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "Café") {
				t.Errorf("read resource over stdio: %v %+v", err, res)
			}
			if err := cs.Close(); err != nil {
				t.Errorf("close (stdin EOF): %v\nstderr:\n%s", err, stderr.String())
			}
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
				t.Errorf("exit after stdin EOF: %v", cmd.ProcessState)
			}
			log := stderr.String()
			if !strings.Contains(log, "serving over stdio") || !strings.Contains(log, "stopped") {
				t.Errorf("stderr log:\n%s", log)
			}
		})
	}
}

// TestStdioSIGTERM: the server stops cleanly (exit 0, index closed) on SIGTERM.
func TestStdioSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	bin := lociBinary(t)
	v := demoCopy(t, "vault")
	var stderr lockedBuffer
	cmd := exec.Command(bin, "mcp", v)
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	// A fresh vault: the first call is answered while the background sync runs.
	if res := call(t, cs, "index_status", nil); res.IsError {
		t.Fatalf("index_status: %s", text(res))
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("server did not stop on SIGTERM")
	}
	cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("exit after SIGTERM: %v\n%s", cmd.ProcessState, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// httpFixture serves two vaults over Streamable HTTP on a real listener:
// a demo copy (the default vault) and a "Big Notes" vault with more notes
// than one resources/list page.
type httpFixture struct {
	env    *ops.Env
	srv    *mcpserver.Server
	ts     *httptest.Server
	demo   string
	big    string
	bigN   int
	demoVH *ops.VaultHandle
	bigVH  *ops.VaultHandle
}

func newHTTPFixture(t *testing.T, opt mcpserver.Options) *httpFixture {
	t.Helper()
	f := &httpFixture{demo: demoCopy(t, "vault"), big: filepath.Join(t.TempDir(), "Big Notes"), bigN: 2*mcpserver.ResourcePageSize + 50}
	files := map[string]string{}
	for i := range f.bigN {
		files[fmt.Sprintf("n%03d/Note %03d.md", i%7, i)] = fmt.Sprintf("# Note %d\n\nbody %d\n", i, i)
	}
	testutil.WriteFiles(t, f.big, files)
	ctx := context.Background()
	f.env = &ops.Env{}
	for _, dir := range []string{f.demo, f.big} {
		vh, err := ops.OpenVault(ctx, dir, "", nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
		f.env.Vaults = append(f.env.Vaults, vh)
	}
	f.demoVH, f.bigVH = f.env.Vaults[0], f.env.Vaults[1]
	f.srv = mcpserver.New(catalog.All(), f.env, opt)
	f.ts = httptest.NewServer(f.srv.HTTPHandler())
	t.Cleanup(func() {
		f.srv.Close()
		f.ts.Close()
		f.env.Close()
	})
	return f
}

func (f *httpFixture) connect(t *testing.T, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.ts.URL, MaxRetries: -1}, nil)
}

func (f *httpFixture) sync(t *testing.T, vh *ops.VaultHandle) {
	t.Helper()
	if _, err := f.env.Sync(context.Background(), vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
}

func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestHTTPToolsAndSessions(t *testing.T) {
	f := newHTTPFixture(t, mcpserver.Options{MaxSessions: 2, Version: "test"})
	cs1, err := f.connect(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs1.Close()
	exerciseTools(t, cs1)

	cs2, err := f.connect(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cs1.ID() == "" || cs1.ID() == cs2.ID() {
		t.Errorf("session ids %q and %q", cs1.ID(), cs2.ID())
	}
	// Concurrent calls on both sessions.
	var wg sync.WaitGroup
	for _, cs := range []*mcp.ClientSession{cs1, cs2} {
		for range 5 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitFor)
				defer cancel()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "atlas"}})
				if err != nil || res.IsError {
					t.Errorf("concurrent call: %v %v", err, res)
				}
			})
		}
	}
	wg.Wait()

	// A third session is over the cap.
	if cs3, err := f.connect(t, nil); err == nil {
		cs3.Close()
		t.Fatal("third session accepted with MaxSessions=2")
	}
	req, _ := http.NewRequest(http.MethodPost, f.ts.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rpc struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &rpc) != nil || rpc.ID != 7 ||
		!strings.Contains(rpc.Error.Message, "too many MCP sessions") {
		t.Errorf("over the cap: %d %s", resp.StatusCode, body)
	}

	// Closing a session (HTTP DELETE) frees its slot.
	if err := cs2.Close(); err != nil {
		t.Fatal(err)
	}
	cs3, err := f.connect(t, nil)
	if err != nil {
		t.Fatalf("session after one closed: %v", err)
	}
	cs3.Close()
}

func TestHTTPResourcesPromptsNotifications(t *testing.T) {
	f := newHTTPFixture(t, mcpserver.Options{})
	updated := make(chan string, 16)
	listChanged := make(chan struct{}, 16)
	logs := make(chan map[string]any, 16)
	cs, err := f.connect(t, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			updated <- r.Params.URI
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			listChanged <- struct{}{}
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			if m, ok := r.Params.Data.(map[string]any); ok && m["event"] == "index_updated" {
				logs <- m
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Pagination over every note of both vaults.
	var uris []string
	pages := 0
	var cursor string
	for {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(res.Resources) > mcpserver.ResourcePageSize {
			t.Errorf("page of %d resources", len(res.Resources))
		}
		for _, r := range res.Resources {
			if r.MIMEType != "text/markdown" || r.Name == "" || r.Title == "" {
				t.Errorf("resource %+v", r)
			}
			uris = append(uris, r.URI)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if len(uris) != 16+f.bigN || pages != 3 {
		t.Errorf("%d resources in %d pages, want %d in 3", len(uris), pages, 16+f.bigN)
	}
	for _, want := range []string{
		"loci://vault/Ideas/Spaced%20repetition.md",
		"loci://vault/Notes/%E7%9F%A5%E8%AF%86%E7%AE%A1%E7%90%86.md",
		"loci://Big-Notes/n000/Note%20000.md",
	} {
		if !slices.Contains(uris, want) {
			t.Errorf("resource %s not listed", want)
		}
	}
	if _, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: "not-a-cursor"}); err == nil {
		t.Error("resources/list accepted a bad cursor")
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "loci://{vault}/{+path}" {
		t.Errorf("templates: %v %+v", err, tmpl)
	}

	// Reading, through vault confinement.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Ideas/Zettelkasten.md"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "text/markdown" ||
		!strings.HasPrefix(rr.Contents[0].Text, "---\naliases: [slip box]") || len(rr.Contents[0].Meta["loci/etag"].(string)) != 64 {
		t.Errorf("read: %v %+v", err, rr)
	}
	if rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://Big-Notes/n003/Note%20010.md"}); err != nil || !strings.Contains(rr.Contents[0].Text, "body 10") {
		t.Errorf("read from the second vault: %v %+v", err, rr)
	}
	for uri, want := range map[string]string{
		"loci://vault/Nope.md":                   "not found",
		"loci://nope/Ideas/Zettelkasten.md":      "not found",
		"loci://vault/..%2F..%2Fetc%2Fpasswd":    "path_denied",
		"loci://vault/../secret.md":              "path_denied",
		"loci://vault/.obsidian/workspace.md":    "path_denied",
		"loci://vault/.loci/index.db":            "path_denied",
		"loci://vault/Ideas":                     "path_denied", // not .md: read_note's answer too
		"file:///etc/passwd":                     "not found",
		"loci://vault/Ideas/Zettelkasten.md?x=1": "",
	} {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if want == "" {
			if err != nil {
				t.Errorf("read %s: %v", uri, err)
			}
			continue
		}
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), want) {
			t.Errorf("read %s: error %v, want %q", uri, err, want)
		}
	}

	// Subscriptions: an edited note is announced to its subscriber.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	target := "loci://vault/Ideas/Spaced%20repetition.md"
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: target}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "loci://vault/../x.md"}); err == nil {
		t.Error("subscribing to a traversal URI succeeded")
	}
	p := filepath.Join(f.demo, "Ideas", "Spaced repetition.md")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append(b, []byte("\nAn edit.\n")...), 0o644)
	f.sync(t, f.demoVH)
	if got := await(t, updated, "notifications/resources/updated"); got != target {
		t.Errorf("updated %s, want %s", got, target)
	}
	if m := await(t, logs, "an index_updated log message"); m["vault"] != "vault" || m["changed"] != float64(1) {
		t.Errorf("log message %v", m)
	}
	select {
	case <-listChanged:
		t.Error("list_changed for a mere edit")
	default:
	}

	// A new note changes the list.
	testutil.WriteFiles(t, f.demo, map[string]string{"Inbox/Brand new.md": "# Brand new\n\nquasar\n"})
	f.sync(t, f.demoVH)
	await(t, listChanged, "notifications/resources/list_changed after an add")
	found := false
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if r.URI == "loci://vault/Inbox/Brand%20new.md" {
			found = r.Title == "Brand new"
		}
	}
	if !found {
		t.Error("new note not listed after sync")
	}
	// Removing the subscribed note announces both.
	os.Remove(p)
	f.sync(t, f.demoVH)
	await(t, listChanged, "notifications/resources/list_changed after a removal")
	if got := await(t, updated, "notifications/resources/updated after a removal"); got != target {
		t.Errorf("updated %s", got)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: target}); err == nil {
		t.Error("removed note still readable")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: target}); err != nil {
		t.Error(err)
	}

	// Prompts.
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pl.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "answer_from_notes") || !slices.Contains(names, "find_related") {
		t.Errorf("prompts: %v", names)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "answer_from_notes", Arguments: map[string]string{"question": "Why does spacing help memory?"}})
	if err != nil || len(gp.Messages) != 1 {
		t.Fatalf("get prompt: %v %+v", err, gp)
	}
	msg := gp.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"Why does spacing help memory?", "search_notes", "read_note", "[path:line]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("answer_from_notes lacks %q:\n%s", want, msg)
		}
	}
	gp, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "find_related", Arguments: map[string]string{"note": "Projects/Project Atlas.md"}})
	if err != nil || !strings.Contains(gp.Messages[0].Content.(*mcp.TextContent).Text, "get_links") {
		t.Errorf("find_related: %v %+v", err, gp)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "answer_from_notes", Arguments: map[string]string{}}); err == nil {
		t.Error("prompt without its required argument")
	}

	// Completion of note paths.
	cr, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "find_related"},
		Argument: mcp.CompleteParamsArgument{Name: "note", Value: "ideas/"},
	})
	if err != nil || !slices.Contains(cr.Completion.Values, "Ideas/Zettelkasten.md") || slices.Contains(cr.Completion.Values, "Ideas/Spaced repetition.md") {
		t.Errorf("completion: %v %+v", err, cr)
	}
	cr, err = cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "loci://{vault}/{+path}"},
		Argument: mcp.CompleteParamsArgument{Name: "path", Value: "Note 01"},
		Context:  &mcp.CompleteContext{Arguments: map[string]string{"vault": "Big-Notes"}},
	})
	if err != nil || len(cr.Completion.Values) != 10 || !slices.Contains(cr.Completion.Values, "n003/Note 010.md") {
		t.Errorf("template path completion: %v %+v", err, cr)
	}
}

// TestIdleTimeout: the SDK closes a session idle for IdleTimeout; the client
// notices (its event stream ends and the session is gone).
func TestIdleTimeout(t *testing.T) {
	f := newHTTPFixture(t, mcpserver.Options{IdleTimeout: 300 * time.Millisecond})
	cs, err := f.connect(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	await(t, done, "the idle session to close")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "index_status"}); err == nil {
		t.Error("call on an expired session succeeded")
	}
}
