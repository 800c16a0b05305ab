package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
)

// writeConfig writes <vault>/.loci/config.yaml and returns the vault root.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".loci"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".loci", "config.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// problemsOf loads a vault config that must be refused and returns its
// problems keyed by the key's path.
func problemsOf(t *testing.T, text string) map[string]Problem {
	t.Helper()
	t.Setenv(EnvConfig, "")
	root := writeConfig(t, text)
	f, p, err := Load(root)
	if err == nil {
		t.Fatalf("config accepted: %+v\n%s", f, text)
	}
	e := errs.As(err)
	if e.Code != errs.CodeConfigInvalid {
		t.Fatalf("code %q, want config_invalid: %v", e.Code, err)
	}
	if want := filepath.Join(root, ".loci", "config.yaml"); p != want || e.Details["config"] != want {
		t.Errorf("config path %q / %v, want %q", p, e.Details["config"], want)
	}
	probs, ok := e.Details["problems"].([]Problem)
	if !ok || len(probs) == 0 {
		t.Fatalf("no problems in details: %#v", e.Details)
	}
	out := map[string]Problem{}
	for _, pr := range probs {
		out[pr.Key] = pr
	}
	return out
}

// TestUnknownKeysFailClosed: a typo in a policy key is an error naming the
// key, its line and the nearest valid key, never a silently ignored setting
// (the example: deny_path and readonly would have left writes on).
func TestUnknownKeysFailClosed(t *testing.T) {
	probs := problemsOf(t, "# policy\nwrites:\n  deny_path: [\"**\"]\n  readonly: true\nexclud:\n  - Archive/**\ndeny_paths: [x]\n")
	for key, want := range map[string]struct {
		line    int
		suggest string
	}{
		"writes.deny_path": {3, "deny_paths"},
		"writes.readonly":  {4, "read_only"},
		"exclud":           {5, "exclude"},
		"deny_paths":       {7, "writes.deny_paths"},
	} {
		p, ok := probs[key]
		if !ok {
			t.Errorf("no problem for %s: %+v", key, probs)
			continue
		}
		if p.Line != want.line || p.Suggestion != want.suggest || !strings.Contains(p.Message, "unknown key") {
			t.Errorf("%s: %+v, want line %d, suggestion %q", key, p, want.line, want.suggest)
		}
	}
	if len(probs) != 4 {
		t.Errorf("problems: %+v", probs)
	}
}

// The error's message names the first problem, so a server that refuses to
// start says why in one line.
func TestConfigErrorMessage(t *testing.T) {
	t.Setenv(EnvConfig, "")
	root := writeConfig(t, "writes: {deny_path: [\"**\"], readonly: true}\n")
	_, _, err := Load(root)
	msg := err.Error()
	for _, want := range []string{"config.yaml", "line 1", "writes.deny_path", "did you mean deny_paths?", "1 more problem"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
}

func TestWrongTypesAndValues(t *testing.T) {
	cases := []struct {
		name, text, key, msg, suggest string
	}{
		{"string for a list", "exclude: \"Archive/**\"\n", "exclude", "a list", ""},
		{"list for a section", "writes:\n  - a\n", "writes", "a mapping", ""},
		{"scalar for a section", "ai: openai\n", "ai", "a mapping", ""},
		{"not a bool", "writes:\n  read_only: maybe\n", "writes.read_only", "true or false", ""},
		{"not a number", "embed:\n  dims: many\n", "embed.dims", "an integer", ""},
		{"list for a string", "writes:\n  inbox: [a, b]\n", "writes.inbox", "a string", ""},
		{"nested map value", "ai:\n  prices:\n    gpt-4o: {input_per_mtok: cheap}\n", "ai.prices.gpt-4o.input_per_mtok", "a number", ""},
		{"unknown nested key", "ai:\n  prices:\n    gpt-4o: {input: 1}\n", "ai.prices.gpt-4o.input", "unknown key", "input_per_mtok"},
		{"bad glob", "exclude: [\"Archive/[a-\"]\n", "exclude[0]", "glob", ""},
		{"bad deny glob", "writes:\n  deny_paths: [\"ok/**\", \"{a,b\"]\n", "writes.deny_paths[1]", "glob", ""},
		{"bad ai glob", "ai:\n  deny_globs: [\"[\"]\n", "ai.deny_globs[0]", "glob", ""},
		{"bad duration", "writes:\n  journal_max_age: forever\n", "writes.journal_max_age", "duration", ""},
		{"negative duration", "writes:\n  lock_timeout: -5s\n", "writes.lock_timeout", "duration", ""},
		{"embed provider", "embed:\n  provider: opnai\n", "embed.provider", "one of", "openai"},
		{"on_mismatch", "embed:\n  on_mismatch: ignore\n", "embed.on_mismatch", "one of", ""},
		{"ai provider", "ai:\n  provider: olama\n", "ai.provider", "one of", "ollama"},
		{"structured", "ai:\n  structured: json-schema\n", "ai.structured", "one of", "json_schema"},
		{"negative count", "embed:\n  batch_size: -1\n", "embed.batch_size", "negative", ""},
		{"negative cost", "ai:\n  daily_cost_usd: -2\n", "ai.daily_cost_usd", "negative", ""},
		{"negative journal", "writes:\n  journal_max_bytes: -1\n", "writes.journal_max_bytes", "negative", ""},
		{"long query prefix", "embed:\n  query_prefix: \"" + strings.Repeat("q", MaxEmbedPrefix+1) + "\"\n", "embed.query_prefix", "at most 256", ""},
		{"long document prefix", "embed:\n  document_prefix: \"" + strings.Repeat("d", 5000) + "\"\n", "embed.document_prefix", "at most 256", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			probs := problemsOf(t, c.text)
			p, ok := probs[c.key]
			if !ok {
				t.Fatalf("no problem for %s: %+v", c.key, probs)
			}
			if !strings.Contains(p.Message, c.msg) || p.Suggestion != c.suggest || p.Line == 0 {
				t.Errorf("%+v, want message with %q, suggestion %q, a line", p, c.msg, c.suggest)
			}
		})
	}
}

func TestMalformedFiles(t *testing.T) {
	for name, text := range map[string]string{
		"not a mapping":  "- exclude\n",
		"a scalar":       "hello\n",
		"duplicate key":  "exclude: [a]\nexclude: [b]\n",
		"broken yaml":    "writes: {enabled: true\n",
		"tab indent":     "writes:\n\tenabled: true\n",
		"duplicate deep": "writes:\n  enabled: true\n  enabled: false\n",
	} {
		t.Run(name, func(t *testing.T) { problemsOf(t, text) })
	}
	// A config path that cannot be read (a folder) fails closed too.
	t.Setenv(EnvConfig, "")
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".loci", "config.yaml"), 0o755)
	if _, _, err := Load(root); errs.Code(err) != errs.CodeConfigInvalid {
		t.Errorf("unreadable config: %v", err)
	}
	// LOCI_CONFIG naming a missing file is a mistake, not "no config".
	t.Setenv(EnvConfig, filepath.Join(root, "missing.yaml"))
	if _, _, err := Load(root); errs.Code(err) != errs.CodeConfigInvalid || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing LOCI_CONFIG file: %v", err)
	}
}

func TestValidConfigs(t *testing.T) {
	t.Setenv(EnvConfig, "")
	// No file, an empty file, comments only, null sections.
	root := t.TempDir()
	if f, p, err := Load(root); err != nil || p != "" || f == nil {
		t.Fatalf("missing file: %v %q", err, p)
	}
	for _, text := range []string{"", "# nothing\n", "writes:\nai: ~\n"} {
		if _, _, err := Load(writeConfig(t, text)); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
	f, _, err := Load(writeConfig(t, `
exclude: ["Archive/**", "**/*.excalidraw.md"]
index_dir: .cache/loci
writes:
  enabled: yes
  read_only: false
  write_paths: ["Inbox/**"]
  deny_paths: [Private/**]
  inbox: Capture
  journal_max_bytes: 1048576
  journal_max_age: 30d
  lock_timeout: 5s
embed: {provider: openai, model: m, base_url: "http://localhost:11434/v1", dims: 0, int8: true, on_mismatch: reembed}
search: {rrf_k: 20, min_similarity: -1}
ai:
  provider: openai-compatible
  model: m
  base_url: http://127.0.0.1:8080/v1
  seed: 7
  prices:
    "gpt-4o*": {input_per_mtok: 0.15, output_per_mtok: 0.6}
  allow_globs: []
`))
	if err != nil {
		t.Fatal(err)
	}
	// writes.enabled: true and prices are decoded, but not honoured from a
	// vault's own file (TestVaultMayNotEnableAgentWrites,
	// TestVaultPricesNotHonoured).
	if f.Writes.Enabled != nil || f.Writes.Inbox != "Capture" || f.Writes.DenyPaths[0] != "Private/**" ||
		f.Embed.Provider != "openai" || !f.Embed.Int8 || f.Search.MinSimilarity != -1 || f.AI.Seed == nil || *f.AI.Seed != 7 ||
		len(f.AI.Prices) != 0 || f.IndexDir != ".cache/loci" || f.Source != SourceVault {
		t.Errorf("decoded %+v", f)
	}
}

// TestIndexDirFromVault: a vault's own config (attacker-controlled in a
// planted or cloned vault) may only put the index inside the vault; the
// user's own settings (LOCI_CONFIG, and the flag/env in the CLI) may put it
// anywhere.
func TestIndexDirFromVault(t *testing.T) {
	t.Setenv(EnvConfig, "")
	outside := t.TempDir()
	for _, dir := range []string{outside, "/tmp/loci", "../elsewhere", "a/../../elsewhere", "a/../b", "..", `C:\loci`, `\\server\share`, "~/loci"} {
		probs := problemsOf(t, "index_dir: '"+dir+"'\n")
		if p, ok := probs["index_dir"]; !ok || !strings.Contains(p.Message, "inside the vault") {
			t.Errorf("%s: %+v", dir, probs)
		}
	}
	// A relative path inside the vault is resolved against the vault root,
	// not the working directory.
	root := writeConfig(t, "index_dir: .cache/loci\n")
	f, _, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.ResolveIndexDir(root)
	if err != nil || got != filepath.Join(root, ".cache", "loci") {
		t.Errorf("resolved %q %v", got, err)
	}
	// ...but not through a symbolic link that leaves the vault.
	if err := os.Symlink(outside, filepath.Join(root, "cache")); err != nil {
		t.Skip("no symlinks:", err)
	}
	os.WriteFile(filepath.Join(root, ".loci", "config.yaml"), []byte("index_dir: cache/loci\n"), 0o644)
	f, _, err = Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.ResolveIndexDir(root); errs.Code(err) != errs.CodeConfigInvalid || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("symlinked index_dir: %q %v", got, err)
	}
	// The default index folder, <vault>/.loci, must not lead out either.
	v2 := t.TempDir()
	os.Symlink(outside, filepath.Join(v2, ".loci"))
	// Reading the config already refuses the link (safefs); resolving the
	// index folder refuses it too.
	if _, _, err := Load(v2); errs.Code(err) != errs.CodePathDenied {
		t.Errorf("config below a .loci symlinked out of the vault: %v", err)
	}
	if _, err := (&File{Source: SourceVault}).ResolveIndexDir(v2); errs.Code(err) != errs.CodePathDenied {
		t.Errorf(".loci symlinked out of the vault: %v", err)
	}

	// The user's own config file may name any folder.
	user := filepath.Join(t.TempDir(), "loci.yaml")
	os.WriteFile(user, []byte("index_dir: "+outside+"\n"), 0o600)
	t.Setenv(EnvConfig, user)
	f, p, err := Load(root)
	if err != nil || p != user || f.Source != SourceUser {
		t.Fatalf("LOCI_CONFIG: %v %q %+v", err, p, f)
	}
	if got, err := f.ResolveIndexDir(root); err != nil || got != outside {
		t.Errorf("LOCI_CONFIG index_dir: %q %v", got, err)
	}
	// Its other rules are the same: unknown keys are refused there too.
	os.WriteFile(user, []byte("writes: {readonly: true}\n"), 0o600)
	if _, _, err := Load(root); errs.Code(err) != errs.CodeConfigInvalid {
		t.Errorf("LOCI_CONFIG typo: %v", err)
	}
}

// TestDocExamplesAreValid keeps the configuration examples in the docs
// loadable: every ```yaml block of the pages that document config.yaml.
func TestDocExamplesAreValid(t *testing.T) {
	t.Setenv(EnvConfig, "")
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	n := 0
	for _, page := range []string{"cli.md", "writes.md", "ai.md", "search.md", "security.md", "chat.md", "observability.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllStringSubmatch(string(b), -1) {
			n++
			// An example headed "# ~/.config/loci/config.yaml" is the user's
			// own file; the others are a vault's.
			if strings.HasPrefix(m[1], "# ~/.config/loci/config.yaml") {
				e := userFiles(t, map[string]string{"config.yaml": m[1]})
				if _, err := Resolve(t.TempDir(), Options{Getenv: e.get}); err != nil {
					t.Errorf("docs/%s example (your config) does not load: %v\n%s", page, err, m[1])
				}
				continue
			}
			if _, _, err := Load(writeConfig(t, m[1])); err != nil {
				t.Errorf("docs/%s example does not load: %v\n%s", page, err, m[1])
			}
		}
	}
	if n < 4 {
		t.Errorf("found %d examples", n)
	}
}

func TestSuggest(t *testing.T) {
	for _, c := range []struct {
		in   string
		opts []string
		want string
	}{
		{"deny_path", []string{"enabled", "read_only", "deny_paths", "write_paths"}, "deny_paths"},
		{"readonly", []string{"enabled", "read_only", "deny_paths"}, "read_only"},
		{"Enabled", []string{"enabled", "read_only"}, "enabled"},
		{"zzzzzz", []string{"enabled", "read_only"}, ""},
		{"ai", []string{"ai", "embed"}, "ai"},
	} {
		if got := suggest(c.in, c.opts); got != c.want {
			t.Errorf("suggest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestVaultConfigStaysOnThisMachine: a planted vault's config cannot send
// the notes, or a secret from the environment it names, to a server
// elsewhere; the user's own LOCI_CONFIG and LOCI_* variables can.
func TestVaultConfigStaysOnThisMachine(t *testing.T) {
	for _, env := range []string{"LOCI_EMBED_PROVIDER", "LOCI_EMBED_BASE_URL", "LOCI_EMBED_API_KEY", "LOCI_AI_PROVIDER", "LOCI_AI_BASE_URL", "LOCI_AI_API_KEY"} {
		t.Setenv(env, "")
	}
	refused := map[string]string{
		"embed:\n  provider: openai\n  model: m\n  base_url: https://evil.example/v1\n  api_key_env: AWS_SECRET_ACCESS_KEY\n": "embed.base_url",
		"embed:\n  provider: openai\n  model: m\n":                                  "embed.provider", // the default is api.openai.com
		"ai:\n  provider: openai-compatible\n  base_url: http://10.0.0.5:8080/v1\n": "ai.base_url",
		"ai:\n  provider: openai\n  model: m\n  api_key_env: GITHUB_TOKEN\n":        "ai.provider",
		"ai:\n  provider: vllm\n  base_url: http://localhost.evil.example/v1\n":     "ai.base_url",
		// Even for a server on this machine (another user can listen on a
		// local port), the vault's file may not pick a secret of yours.
		"embed:\n  provider: openai\n  model: m\n  base_url: http://localhost:11434/v1\n  api_key_env: AWS_SECRET_ACCESS_KEY\n":                               "embed.api_key_env",
		"providers:\n  local: {base_url: \"http://127.0.0.1:9/v1\", headers: {Authorization: \"Bearer ${GITHUB_TOKEN}\"}}\nai: {provider: local, model: m}\n": "providers.local.headers.Authorization",
	}
	for text, key := range refused {
		probs := problemsOf(t, text)
		if _, ok := probs[key]; !ok {
			t.Errorf("%q: problems %v, want one at %s", text, probs, key)
		}
	}
	allowed := []string{
		"embed:\n  provider: openai\n  model: m\n  base_url: http://localhost:11434/v1\n  api_key: a-key-the-vault-writes-out-itself\n",
		"embed:\n  provider: openai\n  model: m\n  base_url: http://127.0.0.1:8080/v1\n",
		"ai:\n  provider: ollama\n  model: llama3\n",
		"ai:\n  provider: llamacpp\n  base_url: http://[::1]:8080/v1\n  model: m\n",
		"embed: {provider: builtin}\nai: {provider: embeddings}\n",
	}
	for _, text := range allowed {
		t.Setenv(EnvConfig, "")
		if _, _, err := Load(writeConfig(t, text)); err != nil {
			t.Errorf("%q refused: %v", text, err)
		}
	}
	// The user's own file may name any server.
	user := filepath.Join(t.TempDir(), "loci.yaml")
	os.WriteFile(user, []byte("ai:\n  provider: openai\n  model: m\n  api_key_env: OPENAI_API_KEY\n"), 0o600)
	t.Setenv(EnvConfig, user)
	if _, _, err := Load(t.TempDir()); err != nil {
		t.Errorf("LOCI_CONFIG with a remote provider: %v", err)
	}
	t.Setenv(EnvConfig, "")
	// A base URL the user set in the environment is the user's choice, but
	// the vault's file still may not pick the secret sent there.
	t.Setenv("LOCI_AI_BASE_URL", "https://api.example.com/v1")
	if _, _, err := Load(writeConfig(t, "ai:\n  provider: openai\n  model: m\n")); err != nil {
		t.Errorf("remote base URL from the environment: %v", err)
	}
	if probs := problemsOf(t, "ai:\n  provider: openai\n  model: m\n  api_key_env: AWS_SECRET_ACCESS_KEY\n"); probs["ai.api_key_env"].Message == "" {
		t.Errorf("a vault-chosen key for a remote server: %v", probs)
	}
	t.Setenv("LOCI_AI_API_KEY", "sk-user")
	if _, _, err := Load(writeConfig(t, "ai:\n  provider: openai\n  model: m\n  api_key_env: AWS_SECRET_ACCESS_KEY\n")); err != nil {
		t.Errorf("the user's own key overrides the file's: %v", err)
	}
	// Messages never repeat a password from a URL.
	t.Setenv("LOCI_AI_BASE_URL", "")
	t.Setenv("LOCI_AI_API_KEY", "")
	root := writeConfig(t, "ai:\n  provider: vllm\n  base_url: https://u:hunter2@llm.example/v1\n")
	if _, _, err := Load(root); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error repeats the password: %v", err)
	}
}

// TestVaultConfigIsNotReadThroughALink: .loci/config.yaml that is a link
// (to a file outside, or anywhere) is refused, like every file loci keeps
// under .loci; a shared config belongs in LOCI_CONFIG.
func TestVaultConfigIsNotReadThroughALink(t *testing.T) {
	t.Setenv(EnvConfig, "")
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".loci"), 0o755)
	outside := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(outside, []byte("writes: {enabled: true}\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(root, ".loci", "config.yaml")); err != nil {
		t.Skip(err)
	}
	_, _, err := Load(root)
	if errs.Code(err) != errs.CodePathDenied || !strings.Contains(err.Error(), "config.yaml") {
		t.Fatalf("got %v, want path_denied naming config.yaml", err)
	}
}
