package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/chat"
	"github.com/loci-dev/loci/internal/chat/chattest"
	"github.com/loci-dev/loci/internal/testutil"
)

// chatEnv isolates loci chat from the user's config, history and vault.
func chatEnv(t *testing.T) (home string) {
	t.Helper()
	home = t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_STATE_HOME": filepath.Join(home, ".state"), "LOCI_CONFIG_DIR": "", "LOCI_CONFIG": "",
		"LOCI_CHAT_PROVIDER": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "",
		"LOCI_VAULT": "", chat.EnvConfig: "", chat.EnvBaseURL: "", chat.EnvModel: "", chat.EnvAPIKey: "", chat.EnvHistoryDir: "", "NO_COLOR": "",
	} {
		t.Setenv(k, v)
	}
	return home
}

func withStdin(t *testing.T, s string) {
	t.Helper()
	old := chatStdin
	chatStdin = strings.NewReader(s)
	t.Cleanup(func() { chatStdin = old })
}

func TestChatWithoutModelFails(t *testing.T) {
	chatEnv(t)
	v := demoCopy(t)
	withStdin(t, "hello\n")
	t.Setenv(chat.EnvModel, "only-a-name")
	out, errOut, code := run(t, "chat", "--vault", v)
	if code != 2 || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"no chat model configured", chat.EnvBaseURL, "docs/chat.md", "validation_failed"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %s", want, errOut)
		}
	}
	// Nothing was opened or indexed either.
	if _, err := os.Stat(filepath.Join(v, ".loci")); !os.IsNotExist(err) {
		t.Errorf("the vault was touched without a model: %v", err)
	}
}

func TestChatConfigErrors(t *testing.T) {
	home := chatEnv(t)
	p := filepath.Join(home, "chat.yaml")
	os.WriteFile(p, []byte("model: {base_url: http://127.0.0.1:9/v1, name: m}\nauto_aprove: [x.*]\n"), 0o600)
	_, errOut, code := run(t, "chat", "--config", p)
	if code != 2 || !strings.Contains(errOut, p+": line 2: chat.auto_aprove: unknown key (did you mean auto_approve?) [config_invalid]") {
		t.Errorf("typo in config: exit %d, %s", code, errOut)
	}
	_, errOut, code = run(t, "chat", "--config", filepath.Join(home, "missing.yaml"))
	if code != 2 || !strings.Contains(errOut, "missing.yaml: does not exist") {
		t.Errorf("missing config: exit %d, %s", code, errOut)
	}
}

// TestChatPipe drives `loci chat --vault` through Main with piped input:
// the vault is served in-process, read-only tools run when the config
// auto-approves them, the session is logged and can be resumed.
func TestChatPipe(t *testing.T) {
	home := chatEnv(t)
	v := demoCopy(t)
	fm := chattest.New(t, func(n int, req *chattest.Request) chattest.Reply {
		last := req.Last()
		switch {
		case last.Role == "user" && last.Content == "what is spaced repetition?":
			return chattest.ToolCalls("", chattest.Call{ID: "s1", Name: "loci__search_notes", Args: `{"query":"spaced repetition","limit":1}`})
		case last.Role == "tool":
			return chattest.Text("Reviewing just before you forget (Ideas/Spaced repetition.md:4).", 11)
		case last.Content == "and the write?":
			return chattest.ToolCalls("", chattest.Call{ID: "w1", Name: "test__nothing", Args: `{}`})
		}
		return chattest.Text("You asked about spaced repetition.", 11)
	})
	cfg := filepath.Join(home, "chat.yaml")
	os.WriteFile(cfg, []byte("auto_approve_read_only: true\nhistory: {dir: "+filepath.Join(home, "hist")+"}\n"), 0o600)
	t.Setenv(chat.EnvBaseURL, fm.BaseURL)
	t.Setenv(chat.EnvModel, "fake")

	withStdin(t, "what is spaced repetition?\n")
	out, errOut, code := run(t, "chat", "--vault", v, "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// Through a pipe stdout holds the answer; frames and notices go to stderr.
	if out != "Reviewing just before you forget (Ideas/Spaced repetition.md:4).\n" {
		t.Errorf("stdout: %q", out)
	}
	for _, want := range []string{"[loci] connected loci (in-process): ", "▸ loci.search_notes", "✓ loci.search_notes"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(out+errOut, "\x1b[") {
		t.Errorf("ANSI codes through a pipe:\n%q", out)
	}
	if res := fm.Requests()[1].ToolResults()["s1"]; !strings.Contains(res, `"path":"Ideas/Spaced repetition.md"`) {
		t.Errorf("tool result: %s", res)
	}

	out, _, code = run(t, "chat", "--sessions", "--config", cfg)
	if code != 0 || !strings.Contains(out, "4 messages  what is spaced repetition?") {
		t.Errorf("--sessions: %d %s", code, out)
	}

	// --resume continues the latest session; the first message can also come from the arguments.
	withStdin(t, "")
	out, errOut, code = run(t, "chat", "--resume", "--config", cfg, "what", "did", "I", "ask?")
	if code != 0 || !strings.Contains(errOut, "resumed session") || out != "You asked about spaced repetition.\n" {
		t.Fatalf("resume: %d\n%s\n%s", code, out, errOut)
	}
	reqs := fm.Requests()
	sent := reqs[len(reqs)-1].Messages
	if len(sent) != 6 || sent[1].Content != "what is spaced repetition?" || sent[5].Content != "what did I ask?" {
		t.Errorf("resumed request: %+v", sent)
	}
	// Without --vault (and no servers) there are no tools.
	if n := len(reqs[len(reqs)-1].Tools); n != 0 {
		t.Errorf("%d tools without --vault", n)
	}
	// --resume <id> (with a space) names the session, not a message.
	list, _ := chat.ListSessions(filepath.Join(home, "hist"), 0)
	withStdin(t, "again?\n")
	out, errOut, code = run(t, "chat", "--config", cfg, "--resume", list[0].ID)
	if code != 0 || !strings.Contains(errOut, "resumed session "+list[0].ID) {
		t.Fatalf("resume by id: %d\n%s\n%s", code, out, errOut)
	}
	reqs = fm.Requests()
	if sent := reqs[len(reqs)-1].Messages; len(sent) != 8 || sent[7].Content != "again?" {
		t.Errorf("resumed by id: %+v", sent)
	}
}

func TestChatPipeModelFailure(t *testing.T) {
	chatEnv(t)
	// Retry-After: 0, so the model's retries of a 5xx do not wait.
	fm := chattest.New(t, func(int, *chattest.Request) chattest.Reply {
		return chattest.Reply{Status: 500, Body: `{"error":{"message":"model overloaded"}}`, Header: http.Header{"Retry-After": {"0"}}}
	})
	t.Setenv(chat.EnvBaseURL, fm.BaseURL)
	t.Setenv(chat.EnvModel, "fake")
	withStdin(t, "hello\nnever sent\n")
	_, errOut, code := run(t, "chat", "--no-history")
	if code != 1 || !strings.Contains(errOut, "model overloaded") || !strings.Contains(errOut, "loci chat stopped") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	// The message was tried three times (two retries); a pipe stops at the
	// first failure, so the next line was never sent.
	reqs := fm.Requests()
	for _, r := range reqs {
		if r.Last().Content != "hello" {
			t.Errorf("sent %q: a pipe should stop at the first failure", r.Last().Content)
		}
	}
	if len(reqs) != 3 {
		t.Errorf("%d requests, want 3 (two retries)", len(reqs))
	}
}

// TestChatDiscoveredServers: loci chat starts the servers of the user's
// Claude Desktop config (here a real `loci mcp` over stdio, as mcp-config
// writes it), lists but does not start those of the working directory's
// .vscode/mcp.json until :mcp connect, and runs their tools under the same
// approval policy (read-only ones auto-approved by the config, nothing
// else). --no-discover reads neither; a --servers-file that cannot be read
// is an error.
func TestChatDiscoveredServers(t *testing.T) {
	bin := testutil.LociBinary(t) // before chatEnv moves HOME (and with it the Go build cache)
	home := chatEnv(t)
	v := demoCopy(t)
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Fatalf("index: %s", errOut)
	}
	desktop := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	desktopJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"notes": map[string]any{"command": bin, "args": []string{"mcp", v, "--no-sync"}, "env": map[string]string{"LOCI_TEST_MARK": "1"}},
	}})
	proj := t.TempDir()
	vscodeJSON := `{
  // a project's servers
  "servers": {
    "proj": {"type": "stdio", "command": "` + bin + `", "args": ["mcp", "` + v + `", "--no-sync"],},
  },
}`
	for p, body := range map[string]string{desktop: string(desktopJSON), filepath.Join(proj, ".vscode", "mcp.json"): vscodeJSON} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(proj)

	fm := chattest.New(t, func(n int, req *chattest.Request) chattest.Reply {
		last := req.Last()
		switch {
		case last.Role == "user" && last.Content == "find spaced repetition":
			return chattest.ToolCalls("", chattest.Call{ID: "s1", Name: "notes__search_notes", Args: `{"query":"spaced repetition","limit":1}`})
		case last.Role == "tool":
			return chattest.Text("Found it.", 3)
		}
		return chattest.Text("Both servers answer.", 3)
	})
	cfg := filepath.Join(home, "chat.yaml")
	os.WriteFile(cfg, []byte("auto_approve_read_only: true\nhistory: {enabled: false}\n"), 0o600)
	t.Setenv(chat.EnvBaseURL, fm.BaseURL)
	t.Setenv(chat.EnvModel, "fake")

	withStdin(t, "find spaced repetition\n:mcp connect proj\nand now?\n")
	out, errOut, code := run(t, "chat", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	vscodeFile := filepath.Join(proj, ".vscode", "mcp.json")
	for _, want := range []string{
		"connected notes (stdio",
		vscodeFile + " declares proj, not started",
		"▸ notes.search_notes", "✓ notes.search_notes",
		"connected proj (stdio",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if out != "Found it.\nBoth servers answer.\n" {
		t.Errorf("stdout %q", out)
	}
	reqs := fm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if res := reqs[1].ToolResults()["s1"]; !strings.Contains(res, `"path":"Ideas/Spaced repetition.md"`) {
		t.Errorf("tool result from the discovered server: %s", res)
	}
	has := func(r *chattest.Request, name string) bool { return slices.Contains(r.ToolNames(), name) }
	if !has(reqs[0], "notes__search_notes") || has(reqs[0], "proj__search_notes") {
		t.Errorf("first request's tools: %v", reqs[0].ToolNames())
	}
	if !has(reqs[2], "proj__search_notes") || !has(reqs[2], "notes__search_notes") {
		t.Errorf("after :mcp connect proj: %v", reqs[2].ToolNames())
	}

	// --no-discover: no server at all.
	withStdin(t, "hello\n")
	_, errOut, code = run(t, "chat", "--config", cfg, "--no-discover")
	if code != 0 || strings.Contains(errOut, "notes") || strings.Contains(errOut, "proj") {
		t.Errorf("--no-discover: exit %d\n%s", code, errOut)
	}
	if n := len(fm.Requests()[len(fm.Requests())-1].Tools); n != 0 {
		t.Errorf("--no-discover: %d tools", n)
	}
	// A named file that is not a servers file stops loci chat before it starts.
	bad := filepath.Join(home, "bad.json")
	os.WriteFile(bad, []byte("mcpServers:\n"), 0o600)
	_, errOut, code = run(t, "chat", "--config", cfg, "--servers-file", bad)
	if code != 2 || !strings.Contains(errOut, bad) || !strings.Contains(errOut, "config_invalid") {
		t.Errorf("bad --servers-file: exit %d\n%s", code, errOut)
	}
}
