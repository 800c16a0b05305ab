package chat

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
)

// Environment variables of the chat role (internal/config maps them onto
// the chat section, with every other LOCI_* variable).
const (
	EnvConfig     = config.EnvChatConfig // path of the older chat.yaml
	EnvProvider   = "LOCI_CHAT_PROVIDER" // a providers entry or type
	EnvBaseURL    = "LOCI_CHAT_BASE_URL" // model endpoint (OpenAI-compatible base, e.g. http://127.0.0.1:11434/v1)
	EnvModel      = "LOCI_CHAT_MODEL"    // model name
	EnvAPIKey     = "LOCI_CHAT_API_KEY"  // API key (wins over the provider's)
	EnvHistoryDir = "LOCI_CHAT_HISTORY_DIR"
)

// Defaults.
const (
	DefaultMaxToolDepth   = 8
	DefaultMaxResultChars = 20000
	DefaultToolTimeout    = 2 * time.Minute
	DefaultCommandTimeout = time.Minute
	DefaultConnectTimeout = 30 * time.Second
)

// Config is the chat configuration: the model, the MCP servers, the approval
// policy and limits. It is the chat: section of the user's config
// (~/.config/loci/config.yaml, or the older chat.yaml), never a vault's: a
// vault may come from someone else, and must not be able to switch on
// auto-approval, shell commands or servers that run programs (a vault's
// file with a chat: section is config_invalid).
type Config struct {
	Model   ModelConfig             `yaml:"model"`
	Servers map[string]ServerConfig `yaml:"servers"`
	// AutoApprove lists tools run without asking: "alias.tool", "alias.*"
	// (every tool of a server) or "*". Destructive tools still ask, and
	// without a terminal only read-only tools are auto-approved.
	AutoApprove []string `yaml:"auto_approve"`
	// AutoApproveReadOnly runs tools their server marks readOnlyHint
	// without asking (it trusts the server's annotation).
	AutoApproveReadOnly bool `yaml:"auto_approve_read_only"`
	// MaxToolDepth bounds the model's tool-call rounds per user message.
	MaxToolDepth int `yaml:"max_tool_depth"`
	// MaxResultChars cuts a tool result (or command output) sent to the
	// model to this many characters, with a marker.
	MaxResultChars int            `yaml:"max_result_chars"`
	ToolTimeout    time.Duration  `yaml:"tool_timeout"`
	ConnectTimeout time.Duration  `yaml:"connect_timeout"`
	Commands       CommandsConfig `yaml:"commands"`
	History        HistoryConfig  `yaml:"history"`

	// Path is the file the config was read from ("" for none).
	Path string `yaml:"-"`
}

// ModelConfig names an OpenAI-compatible chat-completions endpoint.
type ModelConfig struct {
	// BaseURL is the API base, e.g. https://api.openai.com/v1 or
	// http://127.0.0.1:11434/v1; requests go to BaseURL + /chat/completions
	// (a URL already ending in /chat/completions is used as it is).
	BaseURL string `yaml:"base_url"`
	Name    string `yaml:"name"`
	// APIKeyEnv names the environment variable holding the API key
	// (LOCI_CHAT_API_KEY wins). Keys are never read from the file itself.
	APIKeyEnv    string            `yaml:"api_key_env"`
	Temperature  *float64          `yaml:"temperature"`
	MaxTokens    int               `yaml:"max_tokens"`
	SystemPrompt string            `yaml:"system_prompt"` // appended to the built-in one
	Headers      map[string]string `yaml:"headers"`       // extra request headers (${VAR} already expanded by config.Endpoint)

	// APIKey is resolved from the environment by Resolve.
	APIKey string `yaml:"-"`
}

// ServerConfig declares one MCP server: url (Streamable HTTP, falling back
// to HTTP+SSE) or command (stdio). It is the configuration's own type
// (chat.servers in the one configuration; docs/chat.md).
type ServerConfig = config.ChatServer

// CommandsConfig controls CMD: lines (the model proposing shell commands).
type CommandsConfig struct {
	Enabled bool          `yaml:"enabled"`
	Timeout time.Duration `yaml:"timeout"`
	Shell   string        `yaml:"shell"` // default: sh (cmd on Windows)
}

// HistoryConfig controls the JSONL session log.
type HistoryConfig struct {
	Enabled *bool  `yaml:"enabled"`
	Dir     string `yaml:"dir"`
}

// Argv is a command: a YAML list, or a string split like a shell would.
type Argv = config.Argv

// DefaultConfigPath is the user's config file, where the chat: section
// lives: <LOCI_CONFIG_DIR or user config dir/loci>/config.yaml
// (~/.config/loci/config.yaml on Linux).
func DefaultConfigPath() string {
	d := config.UserConfigDir(nil)
	if d == "" {
		return ""
	}
	return filepath.Join(d, "config.yaml")
}

// DefaultHistoryDir is where sessions are logged: $XDG_STATE_HOME/loci/chat,
// else ~/.local/state/loci/chat (on macOS and Windows, the user config dir).
func DefaultHistoryDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "loci", "chat")
	}
	if runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, ".local", "state", "loci", "chat")
		}
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "loci", "chat", "history")
	}
	return ""
}

// LoadConfig resolves the user's configuration (no vault: chat settings are
// the user's alone) with path as the chat file named for this run ("" for
// none; $LOCI_CHAT_CONFIG, else the default chat.yaml if it exists) and
// returns its chat settings. Unknown keys are config_invalid, so a typo
// never silently disables a setting.
func LoadConfig(path string) (*Config, error) {
	c, err := config.Resolve("", config.Options{ChatFile: path})
	if err != nil {
		return nil, err
	}
	return FromConfig(c)
}

// FromConfig builds the chat configuration from a resolved configuration:
// its chat section, and the model server chat.provider (or chat.base_url)
// names (config.Endpoint).
func FromConfig(c *config.Config) (*Config, error) {
	ch := c.Chat
	cfg := &Config{
		Model:               ModelConfig{Name: ch.Model, APIKeyEnv: ch.APIKeyEnv, Temperature: ch.Temperature, MaxTokens: ch.MaxTokens, SystemPrompt: ch.SystemPrompt},
		AutoApprove:         ch.AutoApprove,
		AutoApproveReadOnly: ch.AutoApproveReadOnly,
		MaxToolDepth:        ch.MaxToolDepth,
		MaxResultChars:      ch.MaxResultChars,
		Commands:            CommandsConfig{Enabled: ch.Commands.Enabled, Shell: ch.Commands.Shell},
		History:             HistoryConfig{Enabled: ch.History.Enabled, Dir: ch.History.Dir},
	}
	// The user's file the chat settings come from, for messages.
	for i := len(c.Files) - 1; i >= 0; i-- {
		if f := c.Files[i]; f.Exists && f.Layer == config.LayerUser {
			cfg.Path = f.Path
			break
		}
	}
	if ep := c.Endpoint(config.RoleChat); ep != nil {
		// The key is resolved; KeyEnv stays for CheckModel's message when
		// the variable it names is unset.
		cfg.Model.BaseURL, cfg.Model.APIKey, cfg.Model.Headers, cfg.Model.APIKeyEnv = ep.BaseURL, ep.APIKey, ep.Headers, ep.KeyEnv
	}
	for _, d := range []struct {
		s   string
		dst *time.Duration
	}{{ch.ToolTimeout, &cfg.ToolTimeout}, {ch.ConnectTimeout, &cfg.ConnectTimeout}, {ch.Commands.Timeout, &cfg.Commands.Timeout}} {
		v, err := config.ParseDuration("chat", d.s)
		if err != nil {
			return nil, err
		}
		*d.dst = v
	}
	if len(ch.Servers) > 0 {
		cfg.Servers = maps.Clone(ch.Servers)
	}
	return cfg, nil
}

// Resolve fills defaults and reads the key a ModelConfig names. What must
// hold for the servers and approval patterns is checked when the
// configuration is resolved (internal/config), so that `loci config
// validate` and loci chat agree; the model is checked by CheckModel.
func (c *Config) Resolve(getenv func(string) string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if c.Model.APIKey == "" && c.Model.APIKeyEnv != "" {
		c.Model.APIKey = getenv(c.Model.APIKeyEnv)
	}
	if c.MaxToolDepth <= 0 {
		c.MaxToolDepth = DefaultMaxToolDepth
	}
	if c.MaxResultChars <= 0 {
		c.MaxResultChars = DefaultMaxResultChars
	}
	if c.ToolTimeout <= 0 {
		c.ToolTimeout = DefaultToolTimeout
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Commands.Timeout <= 0 {
		c.Commands.Timeout = DefaultCommandTimeout
	}
	if c.History.Dir == "" {
		c.History.Dir = DefaultHistoryDir()
	}
	c.History.Dir = ExpandHome(c.History.Dir)
}

// HistoryEnabled reports whether sessions are logged (default yes).
func (c *Config) HistoryEnabled() bool { return c.History.Enabled == nil || *c.History.Enabled }

// CheckModel says what is missing for a model to be usable. No request is
// ever made without a base URL and a model name.
func (c *Config) CheckModel() error {
	var missing []string
	if c.Model.BaseURL == "" {
		missing = append(missing, "a model server ("+EnvBaseURL+", chat.base_url or chat.provider)")
	}
	if c.Model.Name == "" {
		missing = append(missing, "a model name ("+EnvModel+" or chat.model)")
	}
	where := DefaultConfigPath()
	if c.Path != "" {
		where = c.Path
	}
	if len(missing) > 0 {
		return errs.New(errs.CodeInvalidInput,
			"no chat model configured: loci chat needs %s; set them in the environment or in the chat: section of %s (see docs/chat.md). "+
				"Any OpenAI-compatible endpoint works, e.g. %s=http://127.0.0.1:11434/v1 %s=qwen2.5:7b for a local Ollama",
			strings.Join(missing, " and "), where, EnvBaseURL, EnvModel).With("config", where)
	}
	if err := checkHTTPURL(c.Model.BaseURL); err != nil {
		return errs.New(errs.CodeInvalidInput, "model base URL: %v", err)
	}
	if c.Model.APIKey == "" && c.Model.APIKeyEnv != "" {
		return errs.New(errs.CodeInvalidInput, "the chat model's api_key_env names %s, which is not set in the environment (or set %s)", c.Model.APIKeyEnv, EnvAPIKey)
	}
	return nil
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

// ServerSpecs turns the configured servers into connectable specs, sorted
// by alias; disabled servers are left out.
func (c *Config) ServerSpecs(getenv func(string) string) []ServerSpec {
	if getenv == nil {
		getenv = os.Getenv
	}
	var out []ServerSpec
	for alias, s := range c.Servers {
		if s.Disabled {
			continue
		}
		sp := ServerSpec{Alias: alias, Transport: s.Transport, Dir: ExpandHome(s.Dir)}
		if s.URL != "" {
			sp.URL = expandVars(s.URL, getenv)
			sp.Headers = map[string]string{}
			for k, v := range s.Headers {
				sp.Headers[k] = expandVars(v, getenv)
			}
			tok := expandVars(s.Token, getenv)
			if s.TokenEnv != "" {
				tok = getenv(s.TokenEnv)
			}
			if tok != "" {
				sp.Headers["Authorization"] = "Bearer " + tok
			}
		} else {
			for _, w := range append(slices.Clone([]string(s.Command)), s.Args...) {
				sp.Command = append(sp.Command, ExpandHome(expandVars(w, getenv)))
			}
			for k, v := range s.Env {
				sp.Env = append(sp.Env, k+"="+expandVars(v, getenv))
			}
			slices.Sort(sp.Env)
		}
		out = append(out, sp)
	}
	slices.SortFunc(out, func(a, b ServerSpec) int { return strings.Compare(a.Alias, b.Alias) })
	return out
}

// ValidAlias checks a server alias: letters, digits, _ and -, at most 32,
// starting with a letter or digit (it prefixes every tool name the model
// sees).
func ValidAlias(a string) error { return config.ValidAlias(a) }

// expandVars replaces ${NAME} with the environment variable NAME.
func expandVars(s string, getenv func(string) string) string { return config.ExpandVars(s, getenv) }

// ExpandHome replaces a leading ~ or ~/ with the home directory.
func ExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(h, p[1:])
}

// SplitWords splits a command line into words as a POSIX shell would for
// quoting (config.SplitWords).
func SplitWords(s string) ([]string, error) { return config.SplitWords(s) }
