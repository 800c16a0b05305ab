package chat_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/chat"
	"github.com/loci-dev/loci/internal/config"
)

func TestWireNames(t *testing.T) {
	cases := map[[2]string]string{
		{"loci", "search_notes"}:     "loci__search_notes",
		{"git", "git.status"}:        "git__git_status",
		{"fs", "read file/ü"}:        "fs__read_file__",
		{"my-server", "tool-name_2"}: "my-server__tool-name_2",
	}
	for in, want := range cases {
		if got := chat.WireName(in[0], in[1]); got != want || !chat.ValidWireName(got) {
			t.Errorf("WireName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
	long := chat.WireName("averyveryverylongserveralias_32c", strings.Repeat("tool_", 20))
	if len(long) != 64 || !chat.ValidWireName(long) {
		t.Errorf("long name %q (%d)", long, len(long))
	}
	if other := chat.WireName("averyveryverylongserveralias_32c", strings.Repeat("tool_", 19)+"toolx"); other == long {
		t.Errorf("long names that differ at the end collide: %q", other)
	}
}

func TestPolicy(t *testing.T) {
	yes, no := true, false
	entry := func(display string, ann *mcp.ToolAnnotations) *chat.ToolEntry {
		alias, name, _ := strings.Cut(display, ".")
		return &chat.ToolEntry{Display: display, Alias: alias, Tool: &mcp.Tool{Name: name, Annotations: ann}}
	}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	writes := &mcp.ToolAnnotations{DestructiveHint: &no}
	destructive := &mcp.ToolAnnotations{DestructiveHint: &yes}
	p := &chat.Policy{AutoApprove: []string{"loci.search_notes", "test.*", "loci.write_note", "loci.delete_note"}}
	cases := []struct {
		e    *chat.ToolEntry
		p    *chat.Policy
		tty  bool
		want chat.Decision
	}{
		{entry("loci.search_notes", readOnly), p, true, chat.Allow},  // per tool
		{entry("loci.read_note", readOnly), p, true, chat.Ask},       // not listed
		{entry("test.echo", readOnly), p, true, chat.Allow},          // per server
		{entry("test.write", writes), p, true, chat.Allow},           // per server, writes, with a terminal
		{entry("test.write", writes), p, false, chat.Deny},           // ... never without one
		{entry("test.wipe", destructive), p, true, chat.Ask},         // destructive always asks
		{entry("loci.delete_note", destructive), p, true, chat.Ask},  // even when listed by name
		{entry("test.wipe", destructive), p, false, chat.Deny},       // and is refused without a terminal
		{entry("loci.search_notes", readOnly), p, false, chat.Allow}, // read-only + listed: fine without a terminal
		{entry("loci.read_note", readOnly), p, false, chat.Deny},     // needs confirmation, no terminal
		{entry("other.unannotated", nil), p, true, chat.Ask},         // unannotated: asks
		{entry("other.unannotated", nil), &chat.Policy{AutoApprove: []string{"*"}}, true, chat.Allow},
		{entry("other.unannotated", nil), &chat.Policy{AutoApprove: []string{"*"}}, false, chat.Deny}, // may write
		{entry("loci.read_note", readOnly), &chat.Policy{ReadOnly: true}, true, chat.Allow},
		{entry("loci.read_note", readOnly), &chat.Policy{ReadOnly: true}, false, chat.Allow},
		{entry("loci.write_note", writes), &chat.Policy{ReadOnly: true}, true, chat.Ask},
		{entry("tests.echo", readOnly), p, true, chat.Ask}, // "test.*" does not cover "tests."
		{entry("x.echo", readOnly), &chat.Policy{Session: map[string]bool{"x.echo": true}}, true, chat.Allow},
	}
	for _, c := range cases {
		if got, why := c.p.Decide(c.e, c.tty); got != c.want {
			t.Errorf("%s (tty %v, policy %+v): %v (%s), want %v", c.e.Display, c.tty, c.p, got, why, c.want)
		}
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "chat.yaml")
	os.WriteFile(p, []byte(`
model:
  base_url: http://127.0.0.1:11434/v1
  name: qwen2.5:7b
  api_key_env: MY_KEY
  temperature: 0.2
servers:
  notes:
    url: http://127.0.0.1:8765/mcp
    token_env: NOTES_TOKEN
    headers: {X-Trace: "${TRACE_ID}"}
  fs:
    command: npx -y "@modelcontextprotocol/server-filesystem" ~/src
    env: {DEBUG: "1"}
  off:
    command: [never]
    disabled: true
auto_approve: [notes.search_notes, fs.*]
auto_approve_read_only: true
max_tool_depth: 3
tool_timeout: 45s
commands: {enabled: true, timeout: 5s}
history: {dir: `+dir+`/hist}
`), 0o600)
	env := map[string]string{"MY_KEY": "k1", "NOTES_TOKEN": "tok", "TRACE_ID": "abc", chat.EnvModel: "override"}
	getenv := func(k string) string { return env[k] }
	load := func() *chat.Config {
		t.Helper()
		rc, err := config.Resolve("", config.Options{ChatFile: p, Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := chat.FromConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := load()
	cfg.Resolve(getenv)
	if err := cfg.CheckModel(); err != nil {
		t.Fatal(err)
	}
	if cfg.Model.Name != "override" || cfg.Model.APIKey != "k1" || *cfg.Model.Temperature != 0.2 || cfg.MaxToolDepth != 3 ||
		cfg.ToolTimeout != 45*time.Second || !cfg.Commands.Enabled || cfg.Commands.Timeout != 5*time.Second ||
		cfg.MaxResultChars != chat.DefaultMaxResultChars || cfg.History.Dir != dir+"/hist" || !cfg.AutoApproveReadOnly {
		t.Errorf("config: %+v", cfg)
	}
	specs := cfg.ServerSpecs(getenv)
	if len(specs) != 2 || specs[0].Alias != "fs" || specs[1].Alias != "notes" {
		t.Fatalf("specs: %+v", specs)
	}
	home, _ := os.UserHomeDir()
	if want := []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", filepath.Join(home, "src")}; !reflect.DeepEqual(specs[0].Command, want) || specs[0].Env[0] != "DEBUG=1" {
		t.Errorf("fs: %+v", specs[0])
	}
	if specs[1].Headers["Authorization"] != "Bearer tok" || specs[1].Headers["X-Trace"] != "abc" {
		t.Errorf("notes headers: %v", specs[1].Headers)
	}
	// The environment alone configures the model; the API key variable wins.
	env = map[string]string{chat.EnvBaseURL: "http://m/v1", chat.EnvModel: "m", chat.EnvAPIKey: "direct", "MY_KEY": "k1"}
	cfg = load()
	cfg.Resolve(getenv)
	if cfg.Model.BaseURL != "http://m/v1" || cfg.Model.APIKey != "direct" {
		t.Errorf("env: %+v", cfg.Model)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "c.yaml")
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	noenv := func(string) string { return "" }
	for body, want := range map[string]string{
		"model: {nmae: x}\n":                             "model.nmae: unknown key",
		"servers: {a: {url: http://x, command: y}}\n":    "chat.servers.a: has both url and command",
		"servers: {a: {}}\n":                             "chat.servers.a: needs url",
		"servers: {a.b: {url: http://x}}\n":              "alias",
		"servers: {a: {url: ftp://x}}\n":                 "not an http(s) URL",
		"servers: {a: {url: http://x, transport: ws}}\n": "chat.servers.a.transport",
		"auto_approve: [search_notes]\n":                 "chat.auto_approve[0]",
		"servers: {a: {command: 'unterminated \"x'}}\n":  "unterminated",
	} {
		_, err := chat.LoadConfig(write(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	// An explicit file must exist; the default one may not.
	if _, err := chat.LoadConfig(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing explicit config accepted")
	}
	// No model: a clear error naming what to set.
	cfg := &chat.Config{}
	cfg.Resolve(noenv)
	err := cfg.CheckModel()
	if err == nil || !strings.Contains(err.Error(), "no chat model configured") || !strings.Contains(err.Error(), chat.EnvBaseURL) || !strings.Contains(err.Error(), chat.EnvModel) {
		t.Errorf("no model: %v", err)
	}
	cfg = &chat.Config{Model: chat.ModelConfig{BaseURL: "http://x/v1", Name: "m", APIKeyEnv: "UNSET_KEY"}}
	cfg.Resolve(noenv)
	if err := cfg.CheckModel(); err == nil || !strings.Contains(err.Error(), "UNSET_KEY") {
		t.Errorf("unset key variable: %v", err)
	}
}

func TestSplitWordsAndAliases(t *testing.T) {
	for in, want := range map[string][]string{
		`loci mcp ~/Notes`:                 {"loci", "mcp", "~/Notes"},
		`"loci mcp '/my notes'" notes`:     {"loci mcp '/my notes'", "notes"},
		`a\ b 'c d' "e \"f\""`:             {"a b", "c d", `e "f"`},
		`mcp connect http://x:1/mcp local`: {"mcp", "connect", "http://x:1/mcp", "local"},
	} {
		got, err := chat.SplitWords(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitWords(%q) = %q, %v", in, got, err)
		}
	}
	none := func(string) bool { return false }
	for in, want := range map[string]string{
		"https://mcp.notion.com/mcp":                            "notion",
		"http://127.0.0.1:8765/mcp":                             "local",
		"http://localhost/mcp":                                  "local",
		"npx -y @modelcontextprotocol/server-filesystem@1.0 /x": "filesystem",
		"uvx mcp-server-git":                                    "git",
		"/usr/local/bin/loci mcp /notes":                        "loci",
	} {
		var target []string
		if strings.HasPrefix(in, "http") {
			target = []string{in}
		} else {
			target, _ = chat.SplitWords(in)
		}
		if got := chat.DeriveAlias(target, none); got != want {
			t.Errorf("DeriveAlias(%q) = %q, want %q", in, got, want)
		}
	}
	taken := func(s string) bool { return s == "local" || s == "local2" }
	if got := chat.DeriveAlias([]string{"http://127.0.0.1/"}, taken); got != "local3" {
		t.Errorf("taken aliases: %q", got)
	}
}

func TestExtractCommands(t *testing.T) {
	got := chat.ExtractCommands("Try this:\nCMD: ls -la ~/Notes\n- CMD: `git status`\n```\nCMD: echo hi\n```\nnot a CMD: line\nCMD:\n")
	want := []string{"ls -la ~/Notes", "git status", "echo hi"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ExtractCommands = %q", got)
	}
}

func TestTruncateAndResultText(t *testing.T) {
	s, cut := chat.Truncate(strings.Repeat("é", 30), 10)
	if !cut || !strings.HasPrefix(s, strings.Repeat("é", 10)+"\n[… truncated by loci chat: 10 of 30 characters") {
		t.Errorf("truncate: %q", s)
	}
	if s, cut := chat.Truncate("short", 10); cut || s != "short" {
		t.Errorf("no cut: %q", s)
	}
	r := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "one"},
		&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "loci://v/a.md", Text: "note text"}},
		&mcp.ResourceLink{URI: "loci://v/b.md", Name: "b"},
	}}
	if got := chat.ResultText(r); got != "one\n[image image/png, 3 bytes, not shown]\nnote text\n[resource loci://v/b.md (b)]" {
		t.Errorf("ResultText: %q", got)
	}
	if got := chat.ResultText(&mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}); got != `{"n":1}` {
		t.Errorf("structured only: %q", got)
	}
}

func TestHistoryResume(t *testing.T) {
	dir := t.TempDir()
	h, err := chat.NewHistory(dir, "m")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []chat.Message{
		{Role: "user", Content: "find atlas"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{
			{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "loci__search_notes", Arguments: `{"query":"atlas"}`}},
			{ID: "c2", Type: "function", Function: chat.FunctionCall{Name: "loci__read_note", Arguments: `{}`}},
		}},
		{Role: "tool", ToolCallID: "c1", Content: "results"},
		// the session ended before c2 ran
	}
	h.Append(msgs...)
	h.Close()
	st, _ := os.Stat(h.Path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v", st.Mode())
	}
	h2, got, err := chat.ResumeHistory(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if h2.ID != h.ID || len(got) != 4 || got[3].Role != "tool" || got[3].ToolCallID != "c2" || !strings.Contains(got[3].Content, "not run") {
		t.Fatalf("resumed: %s %+v", h2.ID, got)
	}
	if got[1].ToolCalls[0].Function.Arguments != `{"query":"atlas"}` {
		t.Errorf("tool call args lost: %+v", got[1])
	}
	list, _ := chat.ListSessions(dir, 0)
	if len(list) != 1 || list[0].First != "find atlas" || list[0].Messages != 4 {
		t.Errorf("sessions: %+v", list)
	}
	if _, _, err := chat.ResumeHistory(dir, "nope"); err == nil {
		t.Error("unknown session resumed")
	}
}
