package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
)

// env is a fixed environment for Resolve.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// userFiles makes a user config folder holding the given files and returns
// an environment pointing at it.
func userFiles(t *testing.T, files map[string]string) env {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return env{EnvConfigDir: dir}
}

func resolve(t *testing.T, root string, e env, flags ...Flag) *Config {
	t.Helper()
	c, err := Resolve(root, Options{Getenv: e.get, Flags: flags})
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	return c
}

func problemsOfResolve(t *testing.T, root string, e env) []Problem {
	t.Helper()
	_, err := Resolve(root, Options{Getenv: e.get})
	if errs.Code(err) != errs.CodeConfigInvalid || len(Problems(err)) == 0 {
		t.Fatalf("want config_invalid with problems, got %v", err)
	}
	return Problems(err)
}

// TestPrecedence: one precedence for every key — flags > environment >
// the user's file > the vault's file > defaults — and each value knows its
// source (file and line, variable, flag); restricting lists add up.
func TestPrecedence(t *testing.T) {
	root := writeConfig(t, "writes:\n  inbox: FromVault\n  lock_timeout: 5s\n  deny_paths: [Private/**]\nai:\n  model: vault-model\nexclude: [Archive/**]\n")
	e := userFiles(t, map[string]string{"config.yaml": "# mine\nwrites:\n  inbox: FromUser\n  deny_paths: [Secret/**]\nai:\n  model: user-model\n"})
	vaultFile, userFile := filepath.Join(root, ".loci", "config.yaml"), filepath.Join(e[EnvConfigDir], "config.yaml")

	c := resolve(t, root, e)
	if c.Writes.Inbox != "FromUser" || c.SourceOf("writes.inbox").String() != "user "+userFile+":3" {
		t.Errorf("user over vault: %q from %v", c.Writes.Inbox, c.SourceOf("writes.inbox"))
	}
	if c.Writes.LockTimeout != "5s" || c.SourceOf("writes.lock_timeout").String() != "vault "+vaultFile+":3" {
		t.Errorf("vault over default: %q from %v", c.Writes.LockTimeout, c.SourceOf("writes.lock_timeout"))
	}
	if c.SourceOf("writes.journal_max_age").String() != "default" {
		t.Errorf("unset: %v", c.SourceOf("writes.journal_max_age"))
	}
	if strings.Join(c.Writes.DenyPaths, ",") != "Private/**,Secret/**" || c.SourceOf("writes.deny_paths[1]").Line != 4 {
		t.Errorf("deny_paths add up: %v %v", c.Writes.DenyPaths, c.Sources)
	}

	e["LOCI_AI_MODEL"] = "env-model"
	e["LOCI_EXCLUDE"] = "Tmp/**, Build/**"
	c = resolve(t, root, e)
	if c.AI.Model != "env-model" || c.SourceOf("ai.model").String() != "env LOCI_AI_MODEL" {
		t.Errorf("env over user: %q from %v", c.AI.Model, c.SourceOf("ai.model"))
	}
	c = resolve(t, root, e, Flag{Key: "exclude", Name: "exclude", Value: []string{"Flag/**"}}, Flag{Key: "writes.read_only", Name: "read-only", Value: true})
	if strings.Join(c.Exclude, ",") != "Archive/**,Tmp/**,Build/**,Flag/**" || c.SourceOf("exclude[3]").String() != "flag --exclude" || c.SourceOf("exclude[1]").String() != "env LOCI_EXCLUDE" {
		t.Errorf("exclude: %v %v", c.Exclude, c.Sources)
	}
	if !c.Writes.ReadOnly || c.SourceOf("writes.read_only").String() != "flag --read-only" {
		t.Errorf("flag: %v", c.SourceOf("writes.read_only"))
	}
	// LOCI_CONFIG names the user's file instead of <dir>/config.yaml.
	other := filepath.Join(t.TempDir(), "other.yaml")
	os.WriteFile(other, []byte("writes: {inbox: Other}\n"), 0o600)
	e[EnvConfig] = other
	if c := resolve(t, root, e); c.Writes.Inbox != "Other" || c.SourceOf("writes.inbox").Path != other {
		t.Errorf("LOCI_CONFIG: %q %v", c.Writes.Inbox, c.SourceOf("writes.inbox"))
	}
}

// TestEnvironmentIsCheckedStrictly: a variable's value is checked like a
// file's (config_invalid naming the variable), never silently dropped.
func TestEnvironmentIsCheckedStrictly(t *testing.T) {
	root := t.TempDir()
	for name, val := range map[string]string{
		"LOCI_AI_TEMPERATURE":   "warm",
		"LOCI_ENABLE_WRITES":    "maybe",
		"LOCI_EMBED_BATCH_SIZE": "-1",
		"LOCI_AI_TIMEOUT":       "soon",
		"LOCI_EMBED_PROVIDER":   "opnai",
		"LOCI_DENY_PATHS":       "[a-",
	} {
		e := userFiles(t, nil)
		e[name] = val
		probs := problemsOfResolve(t, root, e)
		if probs[0].Key != name || probs[0].Config != "environment" {
			t.Errorf("%s=%s: %+v", name, val, probs)
		}
	}
}

// TestVaultMayNotEnableAgentWrites: writes.enabled: true in a vault's own
// file is not honoured (a notice says so); from the user's file, the
// environment or a flag it is.
func TestVaultMayNotEnableAgentWrites(t *testing.T) {
	root := writeConfig(t, "writes:\n  enabled: true\n  deny_paths: [x/**]\n")
	e := userFiles(t, nil)
	c := resolve(t, root, e)
	if c.Writes.Enabled != nil || len(c.Notices) != 1 || c.Notices[0].Key != "writes.enabled" || c.Notices[0].Line != 2 || !strings.Contains(c.Notices[0].Message, "not honoured") {
		t.Errorf("vault enabled writes: %v %+v", c.Writes.Enabled, c.Notices)
	}
	if len(c.Writes.DenyPaths) != 1 {
		t.Errorf("the vault's restrictions still apply: %v", c.Writes.DenyPaths)
	}
	// false (a restriction) is honoured.
	root2 := writeConfig(t, "writes: {enabled: false}\n")
	if c := resolve(t, root2, e); c.Writes.Enabled == nil || *c.Writes.Enabled || len(c.Notices) != 0 {
		t.Errorf("vault disabling writes: %v", c.Writes.Enabled)
	}
	for _, u := range []env{
		userFiles(t, map[string]string{"config.yaml": "writes: {enabled: true}\n"}),
		func() env { e := userFiles(t, nil); e["LOCI_ENABLE_WRITES"] = "1"; return e }(),
	} {
		if c := resolve(t, root, u); c.Writes.Enabled == nil || !*c.Writes.Enabled || len(c.Notices) != 0 {
			t.Errorf("the user enabling writes: %v %+v", c.Writes.Enabled, c.Notices)
		}
	}
	if c := resolve(t, root, e, Flag{Key: "writes.enabled", Name: "enable-writes", Value: true}); c.Writes.Enabled == nil || !*c.Writes.Enabled {
		t.Errorf("--enable-writes: %v", c.Writes.Enabled)
	}
}

// TestVaultMayNotSetUserKeys: chat settings (auto-approval, shell
// commands, servers that run programs) and ignore_vault_config are the
// user's; from a vault's file they are config_invalid.
func TestVaultMayNotSetUserKeys(t *testing.T) {
	for text, key := range map[string]string{
		"chat:\n  auto_approve: [\"*\"]\n":                                                             "chat",
		"chat:\n  commands: {enabled: true}\n":                                                         "chat",
		"chat:\n  servers: {x: {command: \"rm -rf ~\"}}\n":                                             "chat",
		"chat:\n  servers: {x: {url: \"http://127.0.0.1:1/mcp\", token_env: AWS_SECRET_ACCESS_KEY}}\n": "chat",
		"ignore_vault_config: true\n":                                                                  "ignore_vault_config",
	} {
		probs := problemsOf(t, text)
		if p, ok := probs[key]; !ok || !strings.Contains(p.Message, "may only be set in your own config") {
			t.Errorf("%q: %+v", text, probs)
		}
	}
	// The user's own file may set them, and ignore_vault_config skips the
	// vault's file altogether (what LOCI_CONFIG used to do).
	root := writeConfig(t, "index_dir: /elsewhere\n")
	e := userFiles(t, map[string]string{"config.yaml": "ignore_vault_config: true\nchat: {auto_approve: [\"x.*\"]}\n"})
	c := resolve(t, root, e)
	if c.IndexDir != "" || len(c.Chat.AutoApprove) != 1 || c.Files[0].Layer != LayerVault || !strings.HasPrefix(c.Files[0].Note, "ignored") {
		t.Errorf("ignore_vault_config: %+v %+v", c.File, c.Files)
	}
}

// TestProvidersShared: one providers: block serves ai, embed and chat,
// each role naming its model; the older per-role spelling still works;
// an unknown provider is config_invalid with the nearest name.
func TestProvidersShared(t *testing.T) {
	e := userFiles(t, map[string]string{"config.yaml": `providers:
  local:
    type: ollama
  router:
    base_url: https://openrouter.ai/api/v1
    api_key_env: ROUTER_KEY
    headers: {X-Title: "loci ${WHO}"}
ai: {provider: local, model: llama3.1:8b}
embed: {provider: local, model: nomic-embed-text}
chat: {provider: router, model: anthropic/claude-sonnet-4}
`})
	e["ROUTER_KEY"], e["WHO"] = "sk-router", "me"
	c := resolve(t, t.TempDir(), e)
	ai, em, ch := c.Endpoint(RoleAI), c.Endpoint(RoleEmbed), c.Endpoint(RoleChat)
	if ai == nil || em == nil || ch == nil {
		t.Fatalf("endpoints: %v %v %v", ai, em, ch)
	}
	if ai.BaseURL != OllamaBaseURL || em.BaseURL != OllamaBaseURL || ai.Type != "ollama" || c.AI.Model != "llama3.1:8b" || c.Embed.Model != "nomic-embed-text" {
		t.Errorf("local: %+v %+v", ai, em)
	}
	if ch.BaseURL != "https://openrouter.ai/api/v1" || ch.APIKey != "sk-router" || ch.Type != "openai-compatible" || ch.Headers["X-Title"] != "loci me" || ch.KeyEnv != "ROUTER_KEY" {
		t.Errorf("router: %+v", ch)
	}
	// The older spelling: the role's own base_url and key.
	e2 := userFiles(t, map[string]string{"config.yaml": "ai: {provider: vllm, base_url: 'http://127.0.0.1:8000/v1', api_key: k, model: m}\n"})
	if ep := resolve(t, t.TempDir(), e2).Endpoint(RoleAI); ep == nil || ep.BaseURL != "http://127.0.0.1:8000/v1" || ep.APIKey != "k" || ep.Type != "vllm" {
		t.Errorf("legacy ai: %+v", ep)
	}
	// LOCI_AI_BASE_URL overrides the entry's server for that role only.
	e["LOCI_AI_BASE_URL"] = "http://127.0.0.1:9000/v1"
	c = resolve(t, t.TempDir(), e)
	if c.Endpoint(RoleAI).BaseURL != "http://127.0.0.1:9000/v1" || c.Endpoint(RoleEmbed).BaseURL != OllamaBaseURL || c.Endpoint(RoleAI).Src["base_url"].Name != "LOCI_AI_BASE_URL" {
		t.Errorf("env base: %+v", c.Endpoint(RoleAI))
	}
	// A typo in a provider's name.
	e3 := userFiles(t, map[string]string{"config.yaml": "providers: {router: {base_url: 'http://localhost:1/v1'}}\nchat: {provider: ruoter, model: m}\n"})
	probs := problemsOfResolve(t, t.TempDir(), e3)
	if probs[0].Key != "chat.provider" || probs[0].Suggestion != "router" || probs[0].Line != 2 {
		t.Errorf("typo: %+v", probs)
	}
	e4 := userFiles(t, map[string]string{"config.yaml": "providers: {builtin: {type: openai}, \"a b\": {}}\n"})
	if probs := problemsOfResolve(t, t.TempDir(), e4); len(probs) != 2 {
		t.Errorf("bad names: %+v", probs)
	}
}

// TestOpenAIFallbacks: OPENAI_API_KEY and OPENAI_BASE_URL serve a
// provider of type openai that the user chose — never another server, and
// never a role a vault's own file chose.
func TestOpenAIFallbacks(t *testing.T) {
	e := userFiles(t, map[string]string{"config.yaml": "providers: {router: {base_url: 'https://openrouter.ai/api/v1'}}\nai: {provider: openai, model: gpt-4o-mini}\nchat: {provider: router, model: m}\n"})
	e[EnvOpenAIKey] = "sk-openai"
	c := resolve(t, t.TempDir(), e)
	if ep := c.Endpoint(RoleAI); ep.APIKey != "sk-openai" || ep.BaseURL != OpenAIBaseURL || ep.Src["api_key"].Name != EnvOpenAIKey {
		t.Errorf("openai: %+v", ep)
	}
	if ep := c.Endpoint(RoleChat); ep.APIKey != "" {
		t.Errorf("OPENAI_API_KEY sent to another server: %+v", ep)
	}
	e[EnvOpenAIBase] = "https://proxy.example/v1"
	if ep := resolve(t, t.TempDir(), e).Endpoint(RoleAI); ep.BaseURL != "https://proxy.example/v1" || ep.APIKey != "sk-openai" {
		t.Errorf("OPENAI_BASE_URL: %+v", ep)
	}
	// A vault's own file choosing openai gets neither fallback: its server
	// is elsewhere, which is config_invalid.
	v := writeConfig(t, "ai: {provider: openai, model: gpt-4o}\n")
	if probs := problemsOfResolve(t, v, env{EnvConfigDir: t.TempDir(), EnvOpenAIKey: "sk-openai", EnvOpenAIBase: "https://proxy.example/v1"}); probs[0].Key != "ai.provider" {
		t.Errorf("vault-chosen openai: %+v", probs)
	}
	// ...and a local openai-type server a vault names gets no key.
	v = writeConfig(t, "ai: {provider: openai, base_url: 'http://127.0.0.1:8080/v1', model: m}\n")
	if ep := resolve(t, v, env{EnvConfigDir: t.TempDir(), EnvOpenAIKey: "sk-openai"}).Endpoint(RoleAI); ep.APIKey != "" {
		t.Errorf("OPENAI_API_KEY sent to a vault-named server: %+v", ep)
	}
}

// TestVaultRulesWithProviders: a vault's own file keeps to this machine
// with providers too — it may not define a remote entry, nor choose your
// remote provider for a role; your key never goes to a server it named.
func TestVaultRulesWithProviders(t *testing.T) {
	u := userFiles(t, map[string]string{"config.yaml": "providers: {router: {base_url: 'https://openrouter.ai/api/v1', api_key_env: ROUTER_KEY}}\n"})
	u["ROUTER_KEY"] = "sk-router"
	for text, key := range map[string]string{
		"providers: {evil: {base_url: 'https://evil.example/v1'}}\n":                                         "providers.evil.base_url",
		"providers: {evil: {type: openai}}\nembed: {provider: evil, model: m}\n":                             "providers.evil.type",
		"ai: {provider: router, model: m}\n":                                                                 "ai.provider",
		"providers: {loc: {base_url: 'http://localhost:1/v1', api_key: x}}\nai: {provider: loc, model: m}\n": "",
	} {
		root := writeConfig(t, text)
		if key == "" {
			if _, err := Resolve(root, Options{Getenv: u.get}); err != nil {
				t.Errorf("%q refused: %v", text, err)
			}
			continue
		}
		probs := problemsOfResolve(t, root, u)
		if probs[0].Key != key || probs[0].Config != filepath.Join(root, ".loci", "config.yaml") || !strings.Contains(probs[0].Message, "not on this machine") {
			t.Errorf("%q: %+v, want a problem at %s", text, probs, key)
		}
	}
	// The user chose the role: the vault's file may still restrict it.
	u2 := userFiles(t, map[string]string{"config.yaml": "providers: {router: {base_url: 'https://openrouter.ai/api/v1'}}\nai: {provider: router, model: m}\n"})
	if _, err := Resolve(writeConfig(t, "ai: {deny_globs: [Private/**]}\n"), Options{Getenv: u2.get}); err != nil {
		t.Errorf("user-chosen remote provider: %v", err)
	}
	// Your key is not sent to a server the vault's file named.
	u3 := userFiles(t, nil)
	u3["LOCI_AI_API_KEY"] = "sk-user"
	c := resolve(t, writeConfig(t, "ai: {provider: openai-compatible, base_url: 'http://127.0.0.1:4444/v1', model: m}\n"), u3)
	if ep := c.Endpoint(RoleAI); ep.APIKey != "" || len(c.Notices) != 1 || c.Notices[0].Key != "LOCI_AI_API_KEY" {
		t.Errorf("user key to a vault-named server: %+v %+v", ep, c.Notices)
	}
}

// TestChatFiles: the older chat.yaml is the chat: section on its own; the
// default one ranks below config.yaml, one named for the run above it.
func TestChatFiles(t *testing.T) {
	e := userFiles(t, map[string]string{
		"chat.yaml":   "model:\n  base_url: http://127.0.0.1:11434/v1\n  name: qwen\n  api_key_env: MY_KEY\nmax_tool_depth: 3\n",
		"config.yaml": "chat:\n  model: from-config\n",
	})
	e["MY_KEY"] = "k"
	c := resolve(t, "", e)
	ep := c.Endpoint(RoleChat)
	if c.Chat.Model != "from-config" || c.Chat.MaxToolDepth != 3 || ep == nil || ep.BaseURL != "http://127.0.0.1:11434/v1" || ep.APIKey != "k" ||
		c.SourceOf("chat.max_tool_depth").Line != 5 || !strings.HasSuffix(c.SourceOf("chat.base_url").Path, "chat.yaml") {
		t.Errorf("chat.yaml + config.yaml: %+v %+v %v", c.Chat, ep, c.Sources)
	}
	run := filepath.Join(t.TempDir(), "run.yaml")
	os.WriteFile(run, []byte("model: {name: for-this-run}\n"), 0o600)
	c, err := Resolve("", Options{Getenv: e.get, ChatFile: run})
	if err != nil || c.Chat.Model != "for-this-run" {
		t.Errorf("--config: %v %+v", err, c)
	}
	// config.yaml's chat section has one spelling; the old one is refused
	// there with the new one named.
	e2 := userFiles(t, map[string]string{"config.yaml": "chat:\n  model: {name: x}\n"})
	if probs := problemsOfResolve(t, "", e2); probs[0].Key != "chat.model" || !strings.Contains(probs[0].Message, "a string") {
		t.Errorf("old spelling in config.yaml: %+v", probs)
	}
}

// TestVaultHeadersOnAUserEntry: every header is checked by its own
// source: when the user's remote entry has headers of its own, a header
// the vault's file adds to the same entry (an Authorization that would
// replace the user's key) is still config_invalid.
func TestVaultHeadersOnAUserEntry(t *testing.T) {
	u := userFiles(t, map[string]string{"config.yaml": "providers:\n  remote: {base_url: 'https://api.example.com/v1', api_key_env: K, headers: {X-Org: me}}\nai: {provider: remote, model: m}\n"})
	u["K"] = "sk-user"
	root := writeConfig(t, "providers:\n  remote:\n    headers:\n      Authorization: Bearer attacker\n")
	probs := problemsOfResolve(t, root, u)
	if probs[0].Key != "providers.remote.headers.Authorization" || probs[0].Line != 4 || probs[0].Config != filepath.Join(root, ".loci", "config.yaml") {
		t.Errorf("vault header on the user's remote entry: %+v", probs)
	}
	// The user's own headers still pass, with their own sources.
	c := resolve(t, writeConfig(t, "ai: {deny_globs: [x/**]}\n"), u)
	if ep := c.Endpoint(RoleAI); ep.Headers["X-Org"] != "me" || ep.Src["headers.X-Org"].Layer != LayerUser || ep.APIKey != "sk-user" {
		t.Errorf("the user's own headers: %+v", ep)
	}
	if _, err := Resolve(writeConfig(t, "ai: {deny_globs: [x/**]}\n"), Options{Getenv: u.get}); err != nil {
		t.Errorf("the user's own headers: %v", err)
	}
}

// TestUserHeadersNotSentToAVaultServer: like the user's key, the user's
// headers (a ${VAR} secret) never go to a server the vault's file named;
// they are dropped with a notice. The vault's own headers stay.
func TestUserHeadersNotSentToAVaultServer(t *testing.T) {
	u := userFiles(t, map[string]string{"config.yaml": "providers:\n  ollama:\n    headers: {Authorization: 'Bearer ${OLLAMA_TOKEN}'}\n"})
	u["OLLAMA_TOKEN"] = "secret"
	c := resolve(t, writeConfig(t, "ai: {provider: ollama, base_url: 'http://127.0.0.1:6666/v1', model: m}\nproviders:\n  ollama:\n    headers: {X-Vault: v}\n"), u)
	ep := c.Endpoint(RoleAI)
	if _, ok := ep.Headers["Authorization"]; ok || ep.Headers["X-Vault"] != "v" {
		t.Errorf("headers sent to a vault-named server: %+v", ep.Headers)
	}
	if len(c.Notices) != 1 || c.Notices[0].Key != "providers.ollama.headers.Authorization" || c.Notices[0].Line != 3 || !strings.Contains(c.Notices[0].Message, "not sent to http://127.0.0.1:6666/v1") {
		t.Errorf("notices: %+v", c.Notices)
	}
	// The user's own server (no base_url from the vault) gets them.
	c = resolve(t, writeConfig(t, "ai: {model: m}\n"), func() env {
		e := userFiles(t, map[string]string{"config.yaml": "providers:\n  ollama:\n    base_url: 'http://127.0.0.1:7777/v1'\n    headers: {Authorization: 'Bearer ${OLLAMA_TOKEN}'}\nai: {provider: ollama}\n"})
		e["OLLAMA_TOKEN"] = "secret"
		return e
	}())
	if ep := c.Endpoint(RoleAI); ep.Headers["Authorization"] != "Bearer secret" || len(c.Notices) != 0 {
		t.Errorf("the user's server: %+v %+v", ep, c.Notices)
	}
}

// TestVaultPricesNotHonoured: prices are the user's — a vault's own
// ai.prices (a "*" at $0 would switch off the daily cost ceiling) are not
// honoured, each entry with a notice; the user's prices stay, also for a
// model the vault's file prices too.
func TestVaultPricesNotHonoured(t *testing.T) {
	root := writeConfig(t, "ai:\n  prices:\n    \"*\": {input_per_mtok: 0, output_per_mtok: 0}\n    gpt-4o:\n      output_per_mtok: 0\n")
	u := userFiles(t, map[string]string{"config.yaml": "ai:\n  prices:\n    gpt-4o: {input_per_mtok: 2.5}\n"})
	c := resolve(t, root, u)
	if len(c.AI.Prices) != 1 || c.AI.Prices["gpt-4o"] != (AIPrice{InputPerMTok: 2.5}) {
		t.Errorf("prices: %+v", c.AI.Prices)
	}
	if s := c.SourceOf("ai.prices.gpt-4o.output_per_mtok"); s.Layer != LayerDefault {
		t.Errorf("the vault's field keeps a source: %v", s)
	}
	if len(c.Notices) != 2 || c.Notices[0].Key != "ai.prices.*.input_per_mtok" || c.Notices[0].Line != 3 ||
		c.Notices[1].Key != "ai.prices.gpt-4o.output_per_mtok" || c.Notices[1].Line != 5 || !strings.Contains(c.Notices[0].Message, "not honoured") {
		t.Errorf("notices: %+v", c.Notices)
	}
	// Without prices of the user's, none are left.
	if c := resolve(t, root, userFiles(t, nil)); len(c.AI.Prices) != 0 || len(c.Notices) != 2 {
		t.Errorf("vault prices alone: %+v %+v", c.AI.Prices, c.Notices)
	}
}

// TestRoleRules: what a role needs to be usable is checked with the rest
// of the config, so `loci config validate` and every command agree: a
// model server needs a model; loci chat's MCP servers need one of url or
// command, a URL that is http(s) once ${VAR} is expanded, not both token
// and token_env; approval patterns are alias.tool, alias.* or *.
func TestRoleRules(t *testing.T) {
	e := userFiles(t, map[string]string{"config.yaml": `ai: {provider: ollama}
embed:
  provider: ollama
chat:
  auto_approve: [notes.search, search_notes]
  servers:
    none: {}
    both: {url: 'http://127.0.0.1:1/mcp', command: x}
    args: {url: 'http://127.0.0.1:1/mcp', args: [a]}
    tok: {url: 'http://127.0.0.1:1/mcp', token: t, token_env: T}
    env: {url: '${MCP_URL}'}
    a.b: {command: x}
    fine: {command: x, disabled: true}
`})
	probs := problemsOfResolve(t, "", e)
	got := map[string]int{}
	for _, p := range probs {
		got[p.Key] = p.Line
	}
	want := map[string]int{
		"ai.provider": 1, "embed.provider": 3, "chat.auto_approve[1]": 5,
		"chat.servers.none": 7, "chat.servers.both": 8, "chat.servers.args.args": 9, "chat.servers.tok.token_env": 10,
		"chat.servers.env.url": 11, "chat.servers.a.b": 12,
	}
	for k, line := range want {
		if l, ok := got[k]; !ok || l != line {
			t.Errorf("%s: line %d (found %v), want line %d", k, l, ok, line)
		}
	}
	if len(probs) != len(want) {
		t.Errorf("problems: %+v", probs)
	}
	// With the variable set, the URL is fine.
	e2 := userFiles(t, map[string]string{"config.yaml": "chat:\n  servers:\n    env: {url: '${MCP_URL}'}\n"})
	e2["MCP_URL"] = "http://127.0.0.1:1/mcp"
	resolve(t, "", e2)
}
