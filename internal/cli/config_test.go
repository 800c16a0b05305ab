package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/testutil"
)

// typoVault is a vault whose config misspells its policy: read naively,
// writes would be on and nothing denied.
func typoVault(t *testing.T) string {
	t.Helper()
	v := filepath.Join(t.TempDir(), "typo")
	testutil.WriteFiles(t, v, map[string]string{
		"n.md":              "# N\n",
		".loci/config.yaml": "writes:\n  deny_path: [\"**\"]\n  readonly: true\n",
	})
	return v
}

// TestConfigFailsClosed: every command that loads the config refuses to run
// with an invalid one (config_invalid, exit 2, naming the key, its line and
// the key meant), servers included, and nothing is written.
func TestConfigFailsClosed(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	t.Setenv("LOCI_CONFIG", "")
	v := typoVault(t)
	golden := filepath.Join(t.TempDir(), "golden.json")
	os.WriteFile(golden, []byte(`[{"id":"q","query":"n","relevant_paths":["n.md"]}]`), 0o644)
	for _, args := range [][]string{
		{"capture", "x", "--apply", "--vault", v},
		{"write", "n.md", "--content", "y", "--overwrite", "--apply", "--vault", v},
		{"index", v},
		{"search", "n", "--vault", v},
		{"read", "n.md", "--vault", v},
		{"status", "--vault", v},
		{"ai", "status", "--vault", v},
		{"eval", "--golden", golden, "--vault", v},
		{"token", v},
		{"serve", v, "--addr", "127.0.0.1:0"},
		{"mcp", v},
		{"mcp-config", "claude-code", v, "--http"},
		{"config", "show", v},
	} {
		_, errOut, code := run(t, args...)
		if code != 2 || !strings.Contains(errOut, "[config_invalid]") || !strings.Contains(errOut, "writes.deny_path") ||
			!strings.Contains(errOut, "did you mean deny_paths?") || !strings.Contains(errOut, "line 2") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(v, "n.md")); string(b) != "# N\n" {
		t.Errorf("n.md changed: %q", b)
	}
	if ents, _ := os.ReadDir(filepath.Join(v, ".loci")); len(ents) != 1 {
		t.Errorf(".loci holds more than the config: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(v, "Inbox")); !os.IsNotExist(err) {
		t.Error("capture wrote something")
	}
	// JSON errors carry every problem.
	_, errOut, _ := run(t, "index", v, "--format", "json")
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Details struct {
				Problems []struct {
					Key        string `json:"key"`
					Line       int    `json:"line"`
					Suggestion string `json:"suggestion"`
				} `json:"problems"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Error.Code != "config_invalid" || len(e.Error.Details.Problems) != 2 ||
		e.Error.Details.Problems[1].Key != "writes.readonly" || e.Error.Details.Problems[1].Line != 3 || e.Error.Details.Problems[1].Suggestion != "read_only" {
		t.Errorf("json error: %v %s", err, errOut)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Setenv("LOCI_CONFIG", "")
	v := typoVault(t)
	cfg := filepath.Join(v, ".loci", "config.yaml")
	out, errOut, code := run(t, "config", "validate", v)
	want := []string{
		cfg + ":2: writes.deny_path: unknown key (did you mean deny_paths?)",
		cfg + ":3: writes.readonly: unknown key (did you mean read_only?)",
		"loci: invalid config " + cfg + ": 2 problems [config_invalid]",
	}
	if code != 2 || out != "" || strings.TrimSpace(errOut) != strings.Join(want, "\n") {
		t.Errorf("invalid: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	os.WriteFile(cfg, []byte("writes:\n  deny_paths: [\"**\"]\n  read_only: true\n"), 0o644)
	out, errOut, code = run(t, "config", "validate", "--vault", v)
	if code != 0 || out != "ok: "+cfg+" (the vault's own config)\n" || errOut != "" {
		t.Errorf("valid: exit %d %q %q", code, out, errOut)
	}
	out, _, code = run(t, "config", "validate", v, "--format", "json")
	var ok struct {
		OK    bool `json:"ok"`
		Files []struct {
			Layer  string `json:"layer"`
			Path   string `json:"path"`
			Exists bool   `json:"exists"`
		} `json:"files"`
	}
	if json.Unmarshal([]byte(out), &ok); code != 0 || !ok.OK || len(ok.Files) < 2 || ok.Files[0].Path != cfg || ok.Files[0].Layer != "vault" || !ok.Files[0].Exists ||
		ok.Files[len(ok.Files)-1].Layer != "user" || ok.Files[len(ok.Files)-1].Exists {
		t.Errorf("json: %d %s", code, out)
	}
	// No file: defaults, still OK.
	empty := t.TempDir()
	if out, _, code := run(t, "config", "validate", empty); code != 0 || !strings.HasPrefix(out, "ok: no config file") {
		t.Errorf("no file: %d %q", code, out)
	}
	// index_dir leading out of the vault is caught too.
	os.WriteFile(cfg, []byte("index_dir: /tmp/elsewhere\n"), 0o644)
	if _, errOut, code := run(t, "config", "validate", v); code != 2 || !strings.Contains(errOut, cfg+":1: index_dir:") {
		t.Errorf("absolute index_dir: %d %q", code, errOut)
	}
	// The user's file (LOCI_CONFIG) is checked as well as the vault's, and
	// what a vault's file may not do is noted.
	os.WriteFile(cfg, []byte("writes: {enabled: true}\n"), 0o644)
	user := filepath.Join(t.TempDir(), "loci.yaml")
	os.WriteFile(user, []byte("index_dir: /tmp/elsewhere\n"), 0o600)
	t.Setenv("LOCI_CONFIG", user)
	out, _, code = run(t, "config", "validate", v)
	if code != 0 || !strings.Contains(out, "ok: "+cfg+" (the vault's own config)\n") || !strings.Contains(out, "ok: "+user+" (your config)\n") ||
		!strings.Contains(out, "note: "+cfg+":1: writes.enabled: true is not honoured from a vault's own config") {
		t.Errorf("LOCI_CONFIG: %d %q", code, out)
	}
	// A typo in the user's file is listed with its file and line.
	os.WriteFile(user, []byte("# mine\nai: {modle: x}\n"), 0o600)
	if _, errOut, code := run(t, "config", "validate", v); code != 2 || !strings.Contains(errOut, user+":2: ai.modle: unknown key (did you mean model?)") {
		t.Errorf("user typo: %d %q", code, errOut)
	}
	// What loci chat, the embedder or the AI runtime would refuse is
	// refused here too, with its line: validate and every command agree.
	os.WriteFile(user, []byte("embed: {provider: ollama}\nchat:\n  auto_approve: [search_notes]\n  servers:\n    x: {}\n"), 0o600)
	_, errOut, code = run(t, "config", "validate", v)
	for _, want := range []string{user + ":1: embed.provider:", user + ":3: chat.auto_approve[0]:", user + ":5: chat.servers.x: needs url"} {
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("role rules: %d %q lacks %q", code, errOut, want)
		}
	}
	if _, errOut, code := run(t, "search", "x", "--vault", v); code != 2 || !strings.Contains(errOut, "[config_invalid]") {
		t.Errorf("search with the same config: %d %q", code, errOut)
	}
}

// TestConfigShow: every effective value is printed with its source — a
// flag, an environment variable, the user's file or the vault's file with
// the line, or the default — and no secret is printed, whichever layer it
// came from.
func TestConfigShow(t *testing.T) {
	for _, k := range []string{"LOCI_CONFIG", "LOCI_ENABLE_WRITES", "LOCI_READ_ONLY", "LOCI_AI_API_KEY", "LOCI_AI_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"} {
		t.Setenv(k, "")
	}
	userDir := t.TempDir()
	t.Setenv("LOCI_CONFIG_DIR", userDir)
	user := filepath.Join(userDir, "config.yaml")
	os.WriteFile(user, []byte(`writes: {inbox: Capture}
providers:
  openrouter:
    base_url: https://openrouter.ai/api/v1
    api_key_env: OR_KEY
    headers: {X-Title: loci, Authorization: "Bearer sk-HEADER-SECRET"}
ai:
  deny_globs: ["Journal/**"]
chat:
  provider: openrouter
  model: anthropic/claude-sonnet-4
  servers:
    gh: {command: [gh-mcp], env: {GITHUB_TOKEN: ghp-ENV-SECRET, TRACE: "${TRACE_ID}"}}
`), 0o600)
	t.Setenv("OR_KEY", "sk-OR-SECRET")
	v := filepath.Join(t.TempDir(), "vault")
	cfg := filepath.Join(v, ".loci", "config.yaml")
	testutil.WriteFiles(t, v, map[string]string{
		"n.md": "# N\n",
		".loci/config.yaml": `exclude: ["Archive/**"]
index_dir: .cache/idx
writes: {deny_paths: ["Private/**"]}
embed: {provider: none}
search: {rrf_k: 20}
ai:
  provider: openai-compatible
  base_url: "http://me:hunter2@localhost:8080/v1"
  model: m
  api_key: sk-SECRET-IN-FILE
  deny_globs: ["Private/**"]
`,
	})
	t.Setenv("LOCI_AI_MODEL", "env-model")
	t.Setenv("LOCI_AI_API_KEY", "sk-FROM-ENV")
	out, errOut, code := run(t, "config", "show", v, "--exclude", "Tmp/**", "--enable-writes")
	if code != 0 {
		t.Fatalf("show: %d %s", code, errOut)
	}
	for _, secret := range []string{"sk-SECRET-IN-FILE", "hunter2", "sk-OR-SECRET", "sk-FROM-ENV", "sk-HEADER-SECRET", "ghp-ENV-SECRET"} {
		if strings.Contains(out, secret) {
			t.Errorf("show prints the secret %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{
		"vault " + cfg + " (read)",
		"user " + user + " (read)",
		"index_dir: " + filepath.Join(v, ".cache", "idx") + " # vault " + cfg + ":2",
		"- Archive/** # vault " + cfg + ":1",
		"- Tmp/** # flag --exclude",
		"cli: true # flag --enable-writes",
		"servers: true # flag --enable-writes",
		"inbox: Capture # user " + user + ":1",
		"- Private/** # vault " + cfg + ":3",
		"model: env-model # env LOCI_AI_MODEL",
		"base_url: http://me:REDACTED@localhost:8080/v1 # vault " + cfg + ":8",
		"rrf_k: 20 # vault " + cfg + ":5",
		"lexical_weight: 1 # default",
		"max_output_tokens: 2048 # default",
		"- Journal/** # user " + user + ":8",
		"provider: none # vault " + cfg + ":4",
		// the chat role: a providers entry of the user's file
		"provider: openrouter # user " + user + ":10",
		"base_url: https://openrouter.ai/api/v1 # user " + user + ":4",
		"api_key: <redacted> # user " + user + ":5",
		"Authorization: <redacted> # user " + user + ":6",
		"TRACE: ${TRACE_ID} # user " + user + ":13",
		"GITHUB_TOKEN: <redacted>",
		"model: anthropic/claude-sonnet-4 # user " + user + ":11",
		"max_tool_depth: 8 # default",
		// the user's key is not sent to a server the vault's file named
		"environment: LOCI_AI_API_KEY: ai.api_key: not sent to http://me:REDACTED@localhost:8080/v1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	out, _, code = run(t, "config", "show", v, "--enable-writes", "--format", "json")
	type leaf struct {
		Value  any    `json:"value"`
		Source string `json:"source"`
	}
	var shown struct {
		Writes struct {
			Servers leaf `json:"servers"`
		} `json:"writes"`
		AI struct {
			APIKey leaf `json:"api_key"`
			Model  leaf `json:"model"`
		} `json:"ai"`
		Chat struct {
			APIKey leaf `json:"api_key"`
		} `json:"chat"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil || code != 0 || shown.Writes.Servers.Value != true || shown.Writes.Servers.Source != "flag --enable-writes" ||
		shown.AI.Model.Source != "env LOCI_AI_MODEL" || shown.AI.APIKey.Value != "" || shown.Chat.APIKey.Value != "<redacted>" || strings.Contains(out, "sk-") {
		t.Errorf("json show: %d %v\n%s", code, err, out)
	}
}

// TestConfigShowPrices: each price is shown with the source of its own
// field (sources are recorded per field), not "default".
func TestConfigShowPrices(t *testing.T) {
	for _, k := range []string{"LOCI_CONFIG", "LOCI_AI_PROVIDER", "LOCI_AI_MODEL"} {
		t.Setenv(k, "")
	}
	userDir := t.TempDir()
	t.Setenv("LOCI_CONFIG_DIR", userDir)
	user := filepath.Join(userDir, "config.yaml")
	os.WriteFile(user, []byte("ai:\n  prices:\n    my-*:\n      input_per_mtok: 1.5\n      output_per_mtok: 3\n    other: {output_per_mtok: 2}\n"), 0o600)
	v := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, v, map[string]string{"n.md": "# N\n"})
	out, errOut, code := run(t, "config", "show", v)
	if code != 0 {
		t.Fatalf("show: %d %s", code, errOut)
	}
	for _, want := range []string{
		"input_per_mtok: 1.5 # user " + user + ":4",
		"output_per_mtok: 3 # user " + user + ":5",
		"output_per_mtok: 2 # user " + user + ":6",
		"input_per_mtok: 0 # default",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}

// TestMCPProcessRefusesInvalidConfig: the real `loci mcp` process exits 2
// before serving when a vault's config is invalid.
func TestMCPProcessRefusesInvalidConfig(t *testing.T) {
	bin := testutil.LociBinary(t)
	good := filepath.Join(t.TempDir(), "good")
	testutil.WriteFiles(t, good, map[string]string{"n.md": "# N\n"})
	cmd := exec.Command(bin, "mcp", good, typoVault(t))
	cmd.Env = append(os.Environ(), "LOCI_CONFIG=")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "[config_invalid]") || strings.Contains(string(out), "serving") {
		t.Errorf("loci mcp with an invalid config: %v\n%s", err, out)
	}
}

// TestConfigShowServerAndFences: config show prints the server section and
// the read fences with their sources, the metrics token as its variable's
// name only.
func TestConfigShowServerAndFences(t *testing.T) {
	for _, k := range []string{"LOCI_CONFIG", "LOCI_ENABLE_WRITES", "LOCI_READ_ONLY"} {
		t.Setenv(k, "")
	}
	userDir := t.TempDir()
	t.Setenv("LOCI_CONFIG_DIR", userDir)
	user := filepath.Join(userDir, "config.yaml")
	os.WriteFile(user, []byte("server:\n  limits:\n    read: {per_minute: 60}\n  toolsets: [read]\n  metrics_token_env: MTOK\n  jwt:\n    scopes_claim: scp\n"), 0o600)
	t.Setenv("MTOK", "metrics-SECRET-0123456789")
	v := filepath.Join(t.TempDir(), "vault")
	cfg := filepath.Join(v, ".loci", "config.yaml")
	testutil.WriteFiles(t, v, map[string]string{"n.md": "# N\n", ".loci/config.yaml": "deny_read_paths: [\"HR/**\"]\n"})
	out, errOut, code := run(t, "config", "show", v)
	if code != 0 {
		t.Fatalf("show: %d %s", code, errOut)
	}
	if strings.Contains(out, "metrics-SECRET") {
		t.Errorf("show prints the metrics token:\n%s", out)
	}
	for _, want := range []string{
		"- HR/** # vault " + cfg + ":1",
		"per_minute: 60 # user " + user + ":3",
		"metrics_token_env: MTOK # user " + user + ":5",
		"toolsets: # user " + user + ":4",
		// every server.jwt key, set or at its default
		"scopes_claim: scp # user " + user + ":7",
		"name_claim: sub # default",
		"vaults_claim: loci_vaults # default",
		"confirm: confirm # default",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}
