package chat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/chat"
	"github.com/loci-dev/loci/internal/chat/chattest"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

// waitFor bounds every wait on an asynchronous event (a deadline, not a
// timing assumption: the events are awaited, never slept for).
const waitFor = 20 * time.Second

// lockedBuffer collects output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// script is a LineReader with prepared answers, recording the prompts.
type script struct {
	mu      sync.Mutex
	lines   []string
	prompts []string
	out     io.Writer
}

func (s *script) ReadLine(prompt string, keep bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompts = append(s.prompts, strings.TrimSpace(prompt))
	if len(s.lines) == 0 {
		return "", io.EOF
	}
	l := s.lines[0]
	s.lines = s.lines[1:]
	fmt.Fprintf(s.out, "%s%s\n", prompt, l)
	return l, nil
}

func (s *script) Prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.prompts)
}

// testServer is a small MCP server written with the SDK: a read-only echo,
// a large result, a tool that writes, a destructive one, one failing with a
// JSON-RPC error.
type testServer struct {
	srv    *mcp.Server
	mu     sync.Mutex
	writes []string
	wipes  int
}

func newTestServer() *testServer {
	ts := &testServer{srv: mcp.NewServer(&mcp.Implementation{Name: "testsrv", Version: "1"}, nil)}
	yes, no := true, false
	obj := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	text := func(req *mcp.CallToolRequest) string {
		var a struct{ Text string }
		json.Unmarshal(req.Params.Arguments, &a)
		return a.Text
	}
	ts.srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + text(req)}}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "big", Description: "A large result.", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("0123456789", 5000)}}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "write", Description: "Store the text.", InputSchema: obj, Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.mu.Lock()
			ts.writes = append(ts.writes, text(req))
			ts.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stored"}}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "wipe", Description: "Delete everything.", InputSchema: obj, Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.mu.Lock()
			ts.wipes++
			ts.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "fail_rpc", Description: "Fails at the protocol level.", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32001, Message: "boom"}
		})
	return ts
}

func (ts *testServer) counts() ([]string, int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.writes), ts.wipes
}

// fixture: loci over Streamable HTTP ("web"), loci over stdio from the real
// binary ("disk"), the test server over Streamable HTTP ("test") and over
// the old HTTP+SSE transport ("old"), plus two servers that cannot be
// reached.
type fixture struct {
	mgr     *chat.Manager
	test    *testServer
	webTS   *httptest.Server
	bin     string
	vault   string
	gone    chan string
	changed chan string
	connOut *lockedBuffer
}

func demoCopy(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	testutil.CopyTree(t, testutil.DemoVault(), dst)
	return dst
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{bin: testutil.LociBinary(t), test: newTestServer(), gone: make(chan string, 8), changed: make(chan string, 8), connOut: &lockedBuffer{}}
	ctx := context.Background()

	// loci over HTTP, in this process.
	webVault := demoCopy(t, "web")
	vh, err := ops.OpenVault(ctx, webVault, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	webSrv := mcpserver.New(catalog.All(), env, mcpserver.Options{})
	f.webTS = httptest.NewServer(webSrv.HTTPHandler())
	t.Cleanup(func() {
		f.webTS.CloseClientConnections()
		f.webTS.Close()
		webSrv.Close()
		env.Close()
	})

	// loci over stdio: the real binary on an indexed copy.
	f.vault = demoCopy(t, "disk")
	if out, err := exec.Command(f.bin, "index", f.vault, "-q").CombinedOutput(); err != nil {
		t.Fatalf("loci index: %v\n%s", err, out)
	}

	// The test server, over Streamable HTTP and over HTTP+SSE.
	testTS := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.test.srv }, nil))
	oldTS := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return f.test.srv }, nil))
	t.Cleanup(func() {
		for _, s := range []*httptest.Server{testTS, oldTS} {
			s.CloseClientConnections()
			s.Close()
		}
	})

	f.mgr = chat.NewManager("test")
	f.mgr.ConnectTimeout = waitFor
	f.mgr.OnToolsChanged = func(alias string) { f.changed <- alias }
	t.Cleanup(f.mgr.Close)
	app := chat.NewApp(resolved(t, &chat.Config{}), &chat.Model{}, f.mgr, &chat.Renderer{Out: f.connOut, Err: f.connOut}, &script{out: io.Discard}, true)
	app.ConnectAll(ctx, []chat.ServerSpec{
		{Alias: "web", URL: f.webTS.URL},
		{Alias: "disk", Command: []string{f.bin, "mcp", f.vault, "--no-sync"}},
		{Alias: "test", URL: testTS.URL},
		{Alias: "old", URL: oldTS.URL},
		{Alias: "broken", URL: "http://127.0.0.1:1/mcp"},
		{Alias: "nocmd", Command: []string{"loci-no-such-command-xyz"}},
	})
	return f
}

func resolved(t *testing.T, c *chat.Config) *chat.Config {
	t.Helper()
	c.Resolve(func(string) string { return "" })
	return c
}

// newApp is a chat on the fixture's servers with a fake model, a terminal
// (answers from a script) unless tty is false, and the given policy.
func (f *fixture) newApp(t *testing.T, fm *chattest.Server, cfg *chat.Config, tty bool, answers ...string) (*chat.App, *lockedBuffer, *script) {
	t.Helper()
	out := &lockedBuffer{}
	in := &script{lines: answers, out: out}
	app := chat.NewApp(resolved(t, cfg), &chat.Model{BaseURL: fm.BaseURL, Name: "fake"}, f.mgr, &chat.Renderer{Out: out, Err: out}, in, tty)
	orig := f.mgr.OnServerGone
	f.mgr.OnServerGone = func(alias string, err error) {
		orig(alias, err)
		f.gone <- alias
	}
	return app, out, in
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

func contains(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

func TestChatWithRealServers(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	t.Run("servers connect, failures are reported and skipped", func(t *testing.T) {
		out := f.connOut.String()
		contains(t, "connect output", out,
			"connected web (http — loci)", "connected disk (stdio — loci)", "connected test (http — testsrv): 5 tools", "connected old (sse — testsrv): 5 tools",
			"MCP server broken (http://127.0.0.1:1/mcp) skipped", "MCP server nocmd (loci-no-such-command-xyz) skipped")
		ts := f.mgr.Tools(ctx)
		var names []string
		for _, e := range ts.Entries {
			if !chat.ValidWireName(e.Wire) {
				t.Errorf("invalid wire name %q", e.Wire)
			}
			names = append(names, e.Wire)
		}
		for _, w := range []string{"web__search_notes", "disk__read_note", "test__echo", "test__wipe", "old__echo"} {
			if !slices.Contains(names, w) {
				t.Errorf("toolset lacks %s: %v", w, names)
			}
		}
		if e := ts.Lookup("web.search_notes"); e == nil || e.Wire != "web__search_notes" || !e.ReadOnly() {
			t.Errorf("lookup by alias.tool: %+v", e)
		}
		for _, alias := range []string{"broken", "nocmd"} {
			if st, err := f.mgr.Session(alias).Status(); st != chat.StatusFailed || err == nil {
				t.Errorf("%s: %s %v", alias, st, err)
			}
		}
	})

	t.Run("two streamed tool calls in one turn: auto-approved and confirmed", func(t *testing.T) {
		fm := chattest.Script(t,
			chattest.ToolCalls("Searching.",
				chattest.Call{ID: "call_1", Name: "web__search_notes", Args: `{"query":"spaced repetition","limit":2}`},
				chattest.Call{ID: "call_2", Name: "disk__read_note", Args: `{"path":"Ideas/Spaced repetition.md"}`}),
			chattest.Text("Spaced repetition: review just before forgetting (Ideas/Spaced repetition.md:6).", 9),
		)
		app, out, in := f.newApp(t, fm, &chat.Config{AutoApprove: []string{"web.*"}}, true, "y")
		if err := app.Turn(ctx, "what do my notes say about spaced repetition?"); err != nil {
			t.Fatal(err)
		}
		reqs := fm.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model requests", len(reqs))
		}
		names := reqs[0].ToolNames()
		for _, w := range []string{"web__search_notes", "disk__read_note", "test__echo", "old__echo"} {
			if !slices.Contains(names, w) {
				t.Errorf("tools array lacks %s", w)
			}
		}
		if sys := reqs[0].Messages[0]; sys.Role != "system" || !strings.Contains(sys.Content, "- web (loci, http") || !strings.Contains(sys.Content, "Instructions from server web") {
			t.Errorf("system prompt: %s", sys.Content)
		}
		res := reqs[1].ToolResults()
		contains(t, "web result", res["call_1"], `"path":"Ideas/Spaced repetition.md"`)
		contains(t, "disk result", res["call_2"], "Review a fact just before you would forget it")
		asst := reqs[1].Messages[len(reqs[1].Messages)-3]
		if asst.Role != "assistant" || len(asst.ToolCalls) != 2 || asst.ToolCalls[1].Function.Arguments != `{"path":"Ideas/Spaced repetition.md"}` {
			t.Errorf("assistant turn sent back: %+v", asst)
		}
		if p := in.Prompts(); len(p) != 1 || p[0] != "allow disk.read_note? [y/N/a=always this session]" {
			t.Errorf("prompts: %q", p)
		}
		o := out.String()
		contains(t, "output", o, "Searching.", "▸ web.search_notes", `"query": "spaced repetition"`, "✓ web.search_notes", "▸ disk.read_note", "✓ disk.read_note", "Spaced repetition: review just before forgetting")
		if strings.Index(o, "Spaced repetition: review") < strings.Index(o, "✓ disk.read_note") {
			t.Errorf("answer printed before the tool frames:\n%s", o)
		}
		msgs := app.Messages()
		if len(msgs) != 5 || msgs[0].Role != "user" || msgs[2].Role != "tool" || msgs[4].Role != "assistant" {
			t.Errorf("conversation: %+v", msgs)
		}
	})

	t.Run("deny: a destructive tool asks even when auto-approved, n declines", func(t *testing.T) {
		fm := chattest.Script(t,
			chattest.ToolCalls("", chattest.Call{ID: "w1", Name: "test__wipe", Args: `{"text":"all"}`}),
			chattest.Text("Understood, nothing was wiped.", 50),
		)
		app, out, in := f.newApp(t, fm, &chat.Config{AutoApprove: []string{"test.*"}}, true, "n")
		if err := app.Turn(ctx, "wipe everything"); err != nil {
			t.Fatal(err)
		}
		if _, wipes := f.test.counts(); wipes != 0 {
			t.Errorf("wipe ran %d times", wipes)
		}
		if p := in.Prompts(); len(p) != 1 || p[0] != "allow test.wipe (destructive)? [y/N]" {
			t.Errorf("prompts: %q", p)
		}
		contains(t, "tool result", fm.Requests()[1].ToolResults()["w1"], "the user declined this call of test.wipe")
		contains(t, "output", out.String(), "⊘ test.wipe: declined", "Understood, nothing was wiped.")
	})

	t.Run("confirm with a: the tool runs without asking again this session", func(t *testing.T) {
		fm := chattest.Script(t,
			chattest.ToolCalls("", chattest.Call{ID: "a1", Name: "test__write", Args: `{"text":"one"}`}),
			chattest.ToolCalls("", chattest.Call{ID: "a2", Name: "test__write", Args: `{"text":"two"}`}),
			chattest.Text("Stored both.", 50),
		)
		app, _, in := f.newApp(t, fm, &chat.Config{}, true, "a")
		if err := app.Turn(ctx, "store one and two"); err != nil {
			t.Fatal(err)
		}
		if writes, _ := f.test.counts(); !slices.Equal(writes, []string{"one", "two"}) {
			t.Errorf("writes: %q", writes)
		}
		if p := in.Prompts(); len(p) != 1 {
			t.Errorf("prompts: %q", p)
		}
	})

	t.Run("errors go back to the model as tool errors", func(t *testing.T) {
		fm := chattest.Script(t,
			chattest.ToolCalls("",
				chattest.Call{ID: "e1", Name: "disk__read_note", Args: `{"path":"Nope.md"}`},
				chattest.Call{ID: "e2", Name: "test__fail_rpc", Args: `{}`},
				chattest.Call{ID: "e3", Name: "test__nope", Args: `{}`},
				chattest.Call{ID: "e4", Name: "test__echo", Args: `{"text":`},
				chattest.Call{ID: "e5", Name: "web__search_notes", Args: `{"limit":1000}`}),
			chattest.Text("Some calls failed.", 50),
		)
		app, out, _ := f.newApp(t, fm, &chat.Config{AutoApprove: []string{"test.*", "web.*", "disk.*"}}, true)
		if err := app.Turn(ctx, "break things"); err != nil {
			t.Fatal(err)
		}
		res := fm.Requests()[1].ToolResults()
		contains(t, "isError result", res["e1"], "error: note_not_found")
		contains(t, "JSON-RPC error", res["e2"], "MCP error -32001: boom")
		contains(t, "unknown tool", res["e3"], `no tool named "test__nope"`)
		contains(t, "bad arguments", res["e4"], "not a valid JSON object")
		contains(t, "validation error", res["e5"], "error: validation_failed")
		contains(t, "output", out.String(), "✗ disk.read_note", "Some calls failed.")
	})

	t.Run("a large result is cut to the budget with a marker", func(t *testing.T) {
		fm := chattest.Script(t,
			chattest.ToolCalls("", chattest.Call{ID: "b1", Name: "test__big", Args: `{}`}),
			chattest.Text("That was long.", 50),
		)
		app, out, _ := f.newApp(t, fm, &chat.Config{AutoApproveReadOnly: true, MaxResultChars: 1000}, true)
		if err := app.Turn(ctx, "big"); err != nil {
			t.Fatal(err)
		}
		r := fm.Requests()[1].ToolResults()["b1"]
		if !strings.HasPrefix(r, strings.Repeat("0123456789", 100)+"\n[… truncated by loci chat: 1000 of 50000 characters shown") {
			t.Errorf("cut result: %q", r[min(len(r), 1100):])
		}
		contains(t, "output", out.String(), "result cut to 1000 of 50000 characters")
	})

	t.Run("without a terminal nothing that writes runs, confirmation is refused", func(t *testing.T) {
		fm := chattest.Script(t,
			chattest.ToolCalls("",
				chattest.Call{ID: "p1", Name: "test__echo", Args: `{"text":"hi"}`},
				chattest.Call{ID: "p2", Name: "test__write", Args: `{"text":"piped"}`},
				chattest.Call{ID: "p3", Name: "disk__read_note", Args: `{"path":"Welcome.md"}`}),
			chattest.Text("Done what I could.", 50),
		)
		before, _ := f.test.counts()
		app, out, in := f.newApp(t, fm, &chat.Config{AutoApprove: []string{"test.*"}}, false)
		if err := app.Turn(ctx, "echo, write, read"); err != nil {
			t.Fatal(err)
		}
		if after, _ := f.test.counts(); len(after) != len(before) {
			t.Errorf("a write ran without a terminal: %q", after)
		}
		if p := in.Prompts(); len(p) != 0 {
			t.Errorf("prompted without a terminal: %q", p)
		}
		res := fm.Requests()[1].ToolResults()
		contains(t, "read-only auto-approved", res["p1"], "echo: hi")
		contains(t, "write refused", res["p2"], "may change data, and without a terminal loci chat never runs such tools")
		contains(t, "confirmation refused", res["p3"], "needs the user's confirmation, and loci chat has no terminal to ask on")
		contains(t, "output", out.String(), "⊘ test.write: not run", "⊘ disk.read_note: not run")
	})

	t.Run("the depth limit stops a runaway loop", func(t *testing.T) {
		fm := chattest.New(t, func(n int, req *chattest.Request) chattest.Reply {
			if req.Last().Role == "user" && req.Last().Content == "and now?" {
				return chattest.Text("Stopped looping.", 50)
			}
			return chattest.ToolCalls("", chattest.Call{ID: fmt.Sprintf("d%d", n), Name: "test__echo", Args: fmt.Sprintf(`{"text":"%d"}`, n)})
		})
		app, out, _ := f.newApp(t, fm, &chat.Config{AutoApprove: []string{"test.*"}, MaxToolDepth: 2}, true)
		if err := app.Turn(ctx, "loop"); err != nil {
			t.Fatal(err)
		}
		if n := len(fm.Requests()); n != 3 {
			t.Errorf("%d model requests, want 3 (2 rounds of tools, then the refused one)", n)
		}
		msgs := app.Messages()
		last := msgs[len(msgs)-1]
		if last.Role != "tool" || last.ToolCallID != "d2" || !strings.Contains(last.Content, "depth limit (2 rounds per user message) was reached") {
			t.Errorf("last message: %+v", last)
		}
		contains(t, "output", out.String(), "tool-call depth limit reached", "⊘ test.echo: not run: depth limit")
		// The conversation goes on.
		if err := app.Turn(ctx, "and now?"); err != nil {
			t.Fatal(err)
		}
		contains(t, "output", out.String(), "Stopped looping.")
	})

	t.Run("tools/list_changed refreshes the cached list", func(t *testing.T) {
		for len(f.changed) > 0 {
			<-f.changed
		}
		f.test.srv.AddTool(&mcp.Tool{Name: "added", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new"}}}, nil
			})
		for await(t, f.changed, "tools/list_changed") != "test" {
		}
		fm := chattest.Script(t, chattest.Text("ok", 50))
		app, out, _ := f.newApp(t, fm, &chat.Config{}, true)
		if err := app.Turn(ctx, "anything new?"); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(fm.Requests()[0].ToolNames(), "test__added") {
			t.Errorf("refreshed tools lack test__added: %v", fm.Requests()[0].ToolNames())
		}
		contains(t, "output", out.String(), "test changed its tools: now 6 tools")
	})

	t.Run("CMD: lines run after confirmation and their output goes back", func(t *testing.T) {
		fm := chattest.Script(t,
			chattest.Text("Let me check.\nCMD: echo hello-from-cmd\nCMD: echo not-this-one\n", 7),
			chattest.Text("The command printed hello-from-cmd.", 50),
		)
		app, out, in := f.newApp(t, fm, &chat.Config{Commands: chat.CommandsConfig{Enabled: true}}, true, "y", "n")
		if err := app.Turn(ctx, "run something"); err != nil {
			t.Fatal(err)
		}
		reqs := fm.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		contains(t, "system prompt", reqs[0].Messages[0].Content, "CMD: <command>")
		fb := reqs[1].Last()
		if fb.Role != "user" {
			t.Errorf("feedback role %q", fb.Role)
		}
		contains(t, "feedback", fb.Content, "$ echo hello-from-cmd\nhello-from-cmd\n\n[exit status 0]", "$ echo not-this-one\n[declined by the user]")
		if p := in.Prompts(); len(p) != 2 || p[0] != "run it? [y/N]" {
			t.Errorf("prompts: %q", p)
		}
		contains(t, "output", out.String(), "$ echo hello-from-cmd", "│ hello-from-cmd", "The command printed hello-from-cmd.")

		// Off unless enabled: shown, never run.
		fm = chattest.Script(t, chattest.Text("CMD: touch "+filepath.Join(t.TempDir(), "x"), 50))
		app, out, in = f.newApp(t, fm, &chat.Config{}, true, "y")
		app.Turn(ctx, "run it")
		if len(fm.Requests()) != 1 || len(in.Prompts()) != 0 || strings.Contains(fm.Requests()[0].Messages[0].Content, "CMD:") {
			t.Errorf("disabled CMD: ran or was announced")
		}
		contains(t, "output", out.String(), "CMD: lines are not run (commands.enabled is off)")
	})

	t.Run("history is logged and a resumed session continues", func(t *testing.T) {
		dir := t.TempDir()
		fm := chattest.Script(t,
			chattest.ToolCalls("", chattest.Call{ID: "h1", Name: "test__echo", Args: `{"text":"remember"}`}),
			chattest.Text("Noted: remember.", 50),
			chattest.Text("You asked me to echo remember.", 50),
		)
		app, _, _ := f.newApp(t, fm, &chat.Config{AutoApprove: []string{"test.echo"}}, true)
		h, err := chat.NewHistory(dir, "fake")
		if err != nil {
			t.Fatal(err)
		}
		app.History = h
		app.Turn(ctx, "echo remember")
		h.Close()
		logged, err := chat.ReadHistory(h.Path)
		if err != nil || len(logged) != 4 || logged[1].ToolCalls[0].ID != "h1" || logged[2].Role != "tool" || logged[2].Content != "echo: remember" {
			t.Fatalf("logged: %+v %v", logged, err)
		}
		h2, msgs, err := chat.ResumeHistory(dir, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		app2, _, _ := f.newApp(t, fm, &chat.Config{}, true)
		app2.History = h2
		app2.SetMessages(msgs)
		app2.Turn(ctx, "what did I ask?")
		h2.Close()
		sent := fm.Requests()[2].Messages
		if len(sent) != 6 || sent[1].Content != "echo remember" || sent[5].Content != "what did I ask?" {
			t.Errorf("resumed request: %+v", sent)
		}
		if all, _ := chat.ReadHistory(h.Path); len(all) != 6 {
			t.Errorf("appended history: %d messages", len(all))
		}
	})

	t.Run("meta-commands", func(t *testing.T) {
		fm := chattest.Script(t)
		app, out, _ := f.newApp(t, fm, &chat.Config{AutoApprove: []string{"test.echo"}}, true,
			":help", ":mcp list", ":mcp tools test", ":mcp tool test.wipe", ":mcp tool nope.x",
			":mcp disconnect old", ":mcp connect "+f.webTS.URL+" web2",
			fmt.Sprintf(":mcp connect %q disk2", f.bin+" mcp "+f.vault+" --no-sync"),
			":mcp connect http://127.0.0.1:1/mcp", ":bogus", ":mcp list", ":quit", "never read")
		if err := app.Run(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if len(fm.Requests()) != 0 {
			t.Errorf("meta-commands reached the model")
		}
		o := out.String()
		contains(t, "meta output", o,
			":mcp connect <url|command> [alias]",
			"ALIAS   TRANSPORT  TOOLS  STATUS     TARGET",
			"web     http", "disk    stdio", "old     sse", "broken  http       -      failed",
			"test.echo", "[read-only, auto]", "test.wipe", "[destructive]",
			"test.wipe (the model calls it test__wipe)", `"destructiveHint":true`, "approval: ask (destructive tool: always confirmed)", `"text": {`,
			`no tool "nope.x"`, "disconnected old", "connected web2 (http — loci)", "connected disk2 (stdio — loci)",
			"MCP server local (http://127.0.0.1:1/mcp) skipped", "unknown command :bogus")
		if strings.Contains(o, "never read") {
			t.Error(":quit did not stop the loop")
		}
		if f.mgr.Session("old") != nil || !f.mgr.Session("web2").Connected() || !f.mgr.Session("disk2").Connected() {
			t.Error("sessions after connect/disconnect")
		}
		f.mgr.Disconnect("web2")
		f.mgr.Disconnect("disk2")
	})

	t.Run("servers that fail mid-session become tool errors; the chat goes on", func(t *testing.T) {
		fm := chattest.Script(t,
			chattest.ToolCalls("",
				chattest.Call{ID: "f1", Name: "web__search_notes", Args: `{"query":"atlas"}`},
				chattest.Call{ID: "f2", Name: "disk__read_note", Args: `{"path":"Welcome.md"}`},
				chattest.Call{ID: "f3", Name: "test__echo", Args: `{"text":"still here"}`}),
			chattest.Text("Two servers are down; test still answers.", 50),
		)
		app, out, _ := f.newApp(t, fm, &chat.Config{AutoApprove: []string{"web.*", "disk.*", "test.*"}}, true, ":mcp list", ":quit")
		// The stdio server dies.
		chat.KillServerProcess(f.mgr.Session("disk"))
		if a := await(t, f.gone, "the stdio server to be gone"); a != "disk" {
			t.Fatalf("gone: %s", a)
		}
		// The HTTP server goes away.
		f.webTS.CloseClientConnections()
		f.webTS.Close()
		if err := app.Run(ctx, "try every server"); err != nil {
			t.Fatal(err)
		}
		reqs := fm.Requests()
		if slices.Contains(reqs[0].ToolNames(), "disk__read_note") {
			t.Error("a dead server's tools were still offered")
		}
		res := reqs[1].ToolResults()
		contains(t, "http server down", res["f1"], "error: web.search_notes failed", "no longer reachable", ":mcp reconnect web")
		contains(t, "stdio server gone", res["f2"], `no tool named "disk__read_note"`)
		contains(t, "live server", res["f3"], "echo: still here")
		o := out.String()
		contains(t, "output", o, "MCP server disk is gone", "Two servers are down; test still answers.")
		for _, alias := range []string{"web", "disk"} {
			if st, _ := f.mgr.Session(alias).Status(); st != chat.StatusFailed {
				t.Errorf("%s status %s", alias, st)
			}
		}
		if !strings.Contains(o, "web     http       -      failed") || !strings.Contains(o, "disk    stdio      -      failed") {
			t.Errorf(":mcp list after failures:\n%s", o)
		}
		// A failed stdio server can be reconnected.
		if _, err := f.mgr.Reconnect(ctx, "disk"); err != nil || !f.mgr.Session("disk").Connected() {
			t.Errorf("reconnect disk: %v", err)
		}
	})
}

// TestInProcessVault connects the vault through in-memory transports, as
// `loci chat --vault` does, and runs a tool through it.
func TestInProcessVault(t *testing.T) {
	ctx := context.Background()
	dir := demoCopy(t, "vault")
	vh, err := ops.OpenVault(ctx, dir, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	defer env.Close()
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(catalog.All(), env, mcpserver.Options{})
	defer srv.Close()
	mgr := chat.NewManager("test")
	defer mgr.Close()
	s, err := mgr.Connect(ctx, chat.ServerSpec{Alias: "loci", Label: "vault " + dir, InProcess: func(ctx context.Context) (mcp.Transport, func(), error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st)
		if err != nil {
			return nil, nil, err
		}
		return ct, func() { ss.Close() }, nil
	}})
	if err != nil || s.Kind != chat.KindInProcess || s.ToolCount() < 10 {
		t.Fatalf("in-process connect: %v %+v", err, s)
	}
	fm := chattest.Script(t,
		chattest.ToolCalls("", chattest.Call{ID: "v1", Name: "loci__search_notes", Args: `{"query":"知识"}`}),
		chattest.Text("Found the Chinese note.", 50),
	)
	out := &lockedBuffer{}
	app := chat.NewApp(resolved(t, &chat.Config{AutoApproveReadOnly: true}), &chat.Model{BaseURL: fm.BaseURL, Name: "fake"}, mgr, &chat.Renderer{Out: out, Err: out}, &script{out: out}, false)
	if err := app.Turn(ctx, "知识"); err != nil {
		t.Fatal(err)
	}
	contains(t, "in-process result", fm.Requests()[1].ToolResults()["v1"], "Notes/知识管理.md")
}

// TestHeadersTokenAndTransports: a token from the config reaches an HTTP
// server; a forced transport does not fall back.
func TestHeadersTokenAndTransports(t *testing.T) {
	ctx := context.Background()
	ts := newTestServer()
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil)
	var mu sync.Mutex
	var tenants []string
	secured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		tenants = append(tenants, r.Header.Get("X-Tenant"))
		mu.Unlock()
		streamable.ServeHTTP(w, r)
	}))
	sseOnly := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil))
	defer func() {
		for _, s := range []*httptest.Server{secured, sseOnly} {
			s.CloseClientConnections()
			s.Close()
		}
	}()
	cfg := &chat.Config{Servers: map[string]chat.ServerConfig{
		"sec":     {URL: secured.URL, TokenEnv: "SEC_TOKEN", Headers: map[string]string{"X-Tenant": "${TENANT}"}},
		"notoken": {URL: secured.URL},
		"forced":  {URL: sseOnly.URL, Transport: chat.TransportStreamable},
		"legacy":  {URL: sseOnly.URL, Transport: chat.TransportSSE},
	}}
	env := map[string]string{"SEC_TOKEN": "s3cret", "TENANT": "me"}
	getenv := func(k string) string { return env[k] }
	cfg.Resolve(getenv)
	mgr := chat.NewManager("test")
	defer mgr.Close()
	got := map[string]error{}
	for _, sp := range cfg.ServerSpecs(getenv) {
		_, got[sp.Alias] = mgr.Connect(ctx, sp)
	}
	if err := got["sec"]; err != nil {
		t.Errorf("with the token: %v", err)
	}
	mu.Lock()
	if len(tenants) == 0 || tenants[0] != "me" {
		t.Errorf("headers seen: %q", tenants)
	}
	mu.Unlock()
	if err := got["notoken"]; err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("without the token: %v", err)
	}
	if err := got["forced"]; err == nil || strings.Contains(err.Error(), "fallback") {
		t.Errorf("forced streamable on an SSE server: %v", err)
	}
	if err := got["legacy"]; err != nil || mgr.Session("legacy").Kind != chat.KindSSE {
		t.Errorf("forced sse: %v", err)
	}
}

// TestMetaConnectTokenEnv: `:mcp connect URL [alias] --token-env NAME`
// sends Authorization: Bearer $NAME to a server that needs a token; the
// token is read from the environment, never typed, and never shown.
func TestMetaConnectTokenEnv(t *testing.T) {
	ctx := context.Background()
	ts := newTestServer()
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil)
	secured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		streamable.ServeHTTP(w, r)
	}))
	defer func() {
		secured.CloseClientConnections()
		secured.Close()
	}()
	mgr := chat.NewManager("test")
	defer mgr.Close()
	out := &lockedBuffer{}
	app := chat.NewApp(resolved(t, &chat.Config{}), &chat.Model{BaseURL: "http://127.0.0.1:1/v1", Name: "fake"}, mgr, &chat.Renderer{Out: out, Err: out}, &script{out: out}, false)
	env := map[string]string{"SEC_TOKEN": "s3cret"}
	app.Getenv = func(k string) string { return env[k] }

	app.Meta(ctx, ":mcp connect "+secured.URL+" plain")
	if s := mgr.Session("plain"); s != nil && s.Connected() {
		t.Fatal("connected without a token")
	}
	app.Meta(ctx, ":mcp connect "+secured.URL+" sec --token-env SEC_TOKEN")
	if s := mgr.Session("sec"); s == nil || !s.Connected() {
		t.Fatalf("--token-env: not connected\n%s", out.String())
	}
	app.Meta(ctx, ":mcp connect --token-env=SEC_TOKEN "+secured.URL+" sec2")
	if s := mgr.Session("sec2"); s == nil || !s.Connected() {
		t.Fatalf("--token-env=NAME first: not connected\n%s", out.String())
	}
	// The session keeps its token for :mcp reconnect.
	app.Meta(ctx, ":mcp reconnect sec")
	if s := mgr.Session("sec"); s == nil || !s.Connected() {
		t.Errorf("reconnect lost the token\n%s", out.String())
	}
	// Refusals: an unset variable, no name, a command server.
	before := len(mgr.Sessions())
	app.Meta(ctx, ":mcp connect "+secured.URL+" x --token-env NOPE")
	app.Meta(ctx, ":mcp connect "+secured.URL+" y --token-env")
	app.Meta(ctx, `:mcp connect "loci mcp" z --token-env SEC_TOKEN`)
	if len(mgr.Sessions()) != before {
		t.Errorf("a refused connect was attempted: %d sessions", len(mgr.Sessions()))
	}
	app.Meta(ctx, ":mcp list")
	contains(t, "output", out.String(), "NOPE is not set", "--token-env needs the name", "--token-env is for URL servers")
	if strings.Contains(out.String(), "s3cret") {
		t.Errorf("the token was printed:\n%s", out.String())
	}
}
