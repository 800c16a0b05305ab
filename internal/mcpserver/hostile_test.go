package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

// smallServer serves one vault of the given files over Streamable HTTP on a
// real 127.0.0.1 listener.
func smallServer(t *testing.T, files map[string]string) (*ops.Env, string) {
	t.Helper()
	root := t.TempDir() + "/vault"
	testutil.WriteFiles(t, root, files)
	env := indexedEnv(t, root)
	srv := mcpserver.New(catalog.All(), env, mcpserver.Options{})
	ts := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
		env.Close()
	})
	return env, ts.URL
}

func httpClient(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// rpcError returns the JSON-RPC error inside a client error, checking that
// its data (if any) is JSON.
func rpcError(t *testing.T, what string, err error) *jsonrpc.Error {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("%s: want a JSON-RPC error, got %v", what, err)
	}
	if len(we.Data) > 0 && !json.Valid(we.Data) {
		t.Errorf("%s: error data is not JSON: %q", what, we.Data)
	}
	return we
}

// hostileURIs are resource URIs that used to end the session: go-sdk
// v1.8.0's ResourceNotFoundError quotes the URI with %q, which is not JSON
// for control characters and for non-printable runes above U+FFFF.
var hostileURIs = []struct {
	uri     string
	control bool // refused as a control character; the others are simply not found
}{
	{"loci://vault/Home.md\x00.txt", true},
	{"loci://vault/Ho\x07me.md", true},
	{"file:///etc/passwd\x1b[2J", true},
	{"loci://vault/\x7f.md", true},
	{"x:\U000F0000", false},
	{"loci://\U000F0000", false},
	{"loci://vault/\U000E0001.md", false},
}

// checkHostileURIs reads and subscribes to every hostile URI: each read (and
// each legacy resources/subscribe) gets a -32602 error whose data is JSON,
// and the session still answers after. (With protocol 2026-07-28 the
// client subscribes through subscriptions/listen without waiting for its
// answer, so only the session's survival is checked.)
func checkHostileURIs(t *testing.T, cs *mcp.ClientSession, legacy bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for _, h := range hostileURIs {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: h.uri})
		we := rpcError(t, "read "+h.uri, err)
		if we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("read %q: code %d, want %d", h.uri, we.Code, jsonrpc.CodeInvalidParams)
		}
		if h.control && !strings.Contains(we.Message, "control character") {
			t.Errorf("read %q: message %q does not say why", h.uri, we.Message)
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: h.uri}); h.control && legacy {
			if we := rpcError(t, "subscribe "+h.uri, err); we.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("subscribe %q: code %d", h.uri, we.Code)
			}
		}
		if err := cs.Ping(ctx, nil); err != nil {
			t.Fatalf("after %q the session is gone: %v", h.uri, err)
		}
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Home.md"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "Home") {
		t.Errorf("a good read after the hostile ones: %v %+v", err, res)
	}
}

// TestHostileResourceURIsHTTP: over HTTP such a URI used to leave the
// session answering empty 200s.
func TestHostileResourceURIsHTTP(t *testing.T) {
	_, url := smallServer(t, map[string]string{"Home.md": "# Home\n"})
	checkHostileURIs(t, httpClient(t, url), true)
}

// TestHostileResourceURIsStdio: over stdio such a URI used to end loci mcp.
func TestHostileResourceURIsStdio(t *testing.T) {
	bin := lociBinary(t)
	root := t.TempDir() + "/vault"
	testutil.WriteFiles(t, root, map[string]string{"Home.md": "# Home\n"})
	for _, version := range []string{"", "2025-06-18"} {
		t.Run("protocol="+version, func(t *testing.T) {
			var stderr lockedBuffer
			cmd := exec.Command(bin, "mcp", root)
			cmd.Stderr = &stderr
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "loci-test", Version: "1"}, nil).
				Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			defer cs.Close()
			checkHostileURIs(t, cs, version != "")
		})
	}
}

// TestDuplicateInitialize: a second initialize in a session gets -32600
// (go-sdk v1.8.0 sends error code 0), and the session goes on.
func TestDuplicateInitialize(t *testing.T) {
	_, url := smallServer(t, map[string]string{"Home.md": "# Home\n"})
	h := &httpPeer{url: url}
	if err := h.open(); err != nil {
		t.Fatal(err)
	}
	status, resps, _, err := h.post([]byte(initializeMsg), false)
	if err != nil || len(resps) != 1 || resps[0].Error == nil || resps[0].Error.Code == nil {
		t.Fatalf("second initialize: HTTP %d %v %s", status, err, show(resps))
	}
	if e := resps[0].Error; *e.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(e.Message, "already initialized") || string(resps[0].ID) != `"init"` {
		t.Errorf("second initialize: %s", show(resps))
	}
	if err := h.ping(); err != nil {
		t.Error(err)
	}
}

// TestResourceReadGovernor: resources/read is bounded by the result governor
// that bounds every operation (ops.DefaultMaxResultBytes, Env.MaxResultBytes),
// answers payload_too_large pointing at read_note, and marks its results
// private.
func TestResourceReadGovernor(t *testing.T) {
	var big strings.Builder
	for i := 0; big.Len() <= ops.DefaultMaxResultBytes; i++ {
		big.WriteString("a line of a very large note, number ")
		big.WriteString(strings.Repeat("x", 40))
		big.WriteString("\n")
	}
	env, url := smallServer(t, map[string]string{"Big.md": "# Big\n" + big.String(), "Small.md": "# Small\n\n" + strings.Repeat("word ", 40) + "\n"})
	cs := httpClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Big.md"})
	we := rpcError(t, "read Big.md", err)
	var data struct {
		Code    string         `json:"code"`
		URI     string         `json:"uri"`
		Details map[string]any `json:"details"`
	}
	json.Unmarshal(we.Data, &data)
	if we.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(we.Message, "payload_too_large: ") || !strings.Contains(we.Message, "read_note") ||
		data.Code != "payload_too_large" || data.URI != "loci://vault/Big.md" || data.Details["limit"] != float64(ops.DefaultMaxResultBytes) || data.Details["tool"] != "read_note" {
		t.Errorf("read Big.md: %d %s %s", we.Code, we.Message, we.Data)
	}
	// read_note, which the error points at, reads it in parts.
	res := call(t, cs, "read_note", map[string]any{"path": "Big.md", "start_line": 1, "end_line": 3})
	if res.IsError || !strings.Contains(text(res), "# Big") {
		t.Errorf("read_note with a line range: %s", text(res))
	}

	small, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Small.md"})
	if err != nil || len(small.Contents) != 1 || small.CacheScope != "private" {
		t.Errorf("read Small.md: %v %+v", err, small)
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || tmpl.CacheScope != "private" {
		t.Errorf("resources/templates/list: %v %+v", err, tmpl)
	}
	list, err := cs.ListResources(ctx, nil)
	if err != nil || list.CacheScope != "private" {
		t.Errorf("resources/list: %v %+v", err, list)
	}

	// One governor: a lower Env.MaxResultBytes bounds resources and
	// operations alike.
	env.MaxResultBytes = 100
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Small.md"})
	if we := rpcError(t, "read Small.md under a 100-byte limit", err); !strings.HasPrefix(we.Message, "payload_too_large: ") {
		t.Errorf("read Small.md under a 100-byte limit: %s", we.Message)
	}
	if res := call(t, cs, "read_note", map[string]any{"path": "Small.md"}); !strings.HasPrefix(text(res), "payload_too_large") {
		t.Errorf("read_note under a 100-byte limit: %s", text(res))
	}
}

// TestResourceReadNonNotes: a path that is not a note (hidden, not .md, in
// .obsidian/) gets one answer, the one read_note gives: path_denied, in
// resources/read and resources/subscribe alike; a note that does not exist
// is "Resource not found".
func TestResourceReadNonNotes(t *testing.T) {
	_, url := smallServer(t, map[string]string{
		"Home.md": "# Home\n", ".hidden/Secret.md": "# Secret\n", "notes.txt": "plain\n", ".obsidian/app.md": "# app\n",
	})
	cs := httpClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	dataCode := func(we *jsonrpc.Error) string {
		var d struct {
			Code string `json:"code"`
		}
		json.Unmarshal(we.Data, &d)
		return d.Code
	}
	for _, p := range []string{".hidden/Secret.md", "notes.txt", ".obsidian/app.md", ".hidden/Missing.md", "missing.txt"} {
		tool := failed(t, "read_note "+p, call(t, cs, "read_note", map[string]any{"path": p}))
		if tool != errs.CodePathDenied {
			t.Errorf("read_note %s: %s, want path_denied", p, tool)
		}
		uri := "loci://vault/" + p
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		we := rpcError(t, "read "+uri, err)
		if got := dataCode(we); got != tool || we.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(we.Message, tool+": ") {
			t.Errorf("resources/read %s: %d %q (data.code %q), want read_note's %s", uri, we.Code, we.Message, got, tool)
		}
		err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		if we := rpcError(t, "subscribe "+uri, err); dataCode(we) != tool {
			t.Errorf("resources/subscribe %s: %q %s, want %s", uri, we.Message, we.Data, tool)
		}
	}
	_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Missing.md"})
	if we := rpcError(t, "read Missing.md", err); dataCode(we) != errs.CodeNotFound || !strings.HasPrefix(we.Message, "Resource not found") {
		t.Errorf("resources/read Missing.md: %q %s", we.Message, we.Data)
	}
}

// TestResourceReadIsBounded: a note over the result limit is refused from
// its size, never loaded: a 5 GiB (sparse) note gets payload_too_large with
// its size, and reading it allocates nothing near that. A folder named like
// a note is not one.
func TestResourceReadIsBounded(t *testing.T) {
	const huge = 5 << 30
	env, url := smallServer(t, map[string]string{"Home.md": "# Home\n", "Folder.md/inside.md": "# In\n"})
	f, err := os.Create(filepath.Join(env.Vaults[0].Vault.Root, "Huge.md")) // after the sync: never indexed
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(huge); err != nil {
		f.Close()
		t.Skipf("no sparse file of %d bytes here: %v", huge, err)
	}
	f.Close()
	cs := httpClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Huge.md"})
	runtime.ReadMemStats(&after)
	we := rpcError(t, "read Huge.md", err)
	var data struct {
		Code    string         `json:"code"`
		Details map[string]any `json:"details"`
	}
	json.Unmarshal(we.Data, &data)
	if data.Code != errs.CodeTooLarge || data.Details["bytes"] != float64(huge) || data.Details["limit"] != float64(ops.DefaultMaxResultBytes) || data.Details["tool"] != "read_note" {
		t.Errorf("read Huge.md: %d %s %s", we.Code, we.Message, we.Data)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("reading the refused note allocated %d MiB", grew>>20)
	}

	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Folder.md"})
	if we := rpcError(t, "read Folder.md", err); !strings.Contains(we.Message, "is a folder, not a note") {
		t.Errorf("read Folder.md: %s %s", we.Message, we.Data)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "loci://vault/Home.md"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "# Home\n" || res.Contents[0].Meta["loci/etag"] == nil {
		t.Errorf("read Home.md: %v %+v", err, res)
	}
}
