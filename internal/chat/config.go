package chat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/loci-dev/loci/internal/errs"
)

// Environment variables read by the chat configuration.
const (
	EnvConfig     = "LOCI_CHAT_CONFIG"   // path of the config file
	EnvBaseURL    = "LOCI_CHAT_BASE_URL" // model endpoint (OpenAI-compatible base, e.g. http://127.0.0.1:11434/v1)
	EnvModel      = "LOCI_CHAT_MODEL"    // model name
	EnvAPIKey     = "LOCI_CHAT_API_KEY"  // API key (wins over model.api_key_env)
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
// policy and limits. It is a user-level file (DefaultConfigPath), never a
// vault's: a vault may come from someone else, and must not be able to
// switch on auto-approval or shell commands.
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
	Headers      map[string]string `yaml:"headers"`       // extra request headers (${VAR} expanded)

	// APIKey is resolved from the environment by Resolve.
	APIKey string `yaml:"-"`
}

// ServerConfig declares one MCP server: url (Streamable HTTP, falling back
// to HTTP+SSE) or command (stdio).
type ServerConfig struct {
	URL       string            `yaml:"url"`
	Command   Argv              `yaml:"command"`
	Args      []string          `yaml:"args"`
	Env       map[string]string `yaml:"env"`
	Dir       string            `yaml:"dir"`
	Headers   map[string]string `yaml:"headers"`
	Token     string            `yaml:"token"`
	TokenEnv  string            `yaml:"token_env"`
	Transport string            `yaml:"transport"` // "" (auto), streamable, sse
	Disabled  bool              `yaml:"disabled"`
}

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

// Argv is a command: a YAML list, or a string split like a shell would
// (quotes and backslashes; no expansion but a leading ~/).
type Argv []string

// UnmarshalYAML accepts a string or a list of strings.
func (a *Argv) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		words, err := SplitWords(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %v", n.Line, err)
		}
		*a = words
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*a = l
		return nil
	}
	return fmt.Errorf("line %d: command must be a string or a list of strings", n.Line)
}

// DefaultConfigPath is <user config dir>/loci/chat.yaml
// (~/.config/loci/chat.yaml on Linux).
func DefaultConfigPath() string {
	d, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "loci", "chat.yaml")
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

// LoadConfig reads the config file: path if given (it must exist), else
// $LOCI_CHAT_CONFIG (must exist), else DefaultConfigPath (may be absent).
// Unknown keys are errors, so a typo never silently disables a setting.
func LoadConfig(path string) (*Config, error) {
	explicit := path != ""
	if !explicit {
		if path = os.Getenv(EnvConfig); path != "" {
			explicit = true
		} else {
			path = DefaultConfigPath()
		}
	}
	cfg := &Config{}
	if path == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return cfg, nil
		}
		return nil, errs.Wrap(err, errs.CodeInvalidInput, "cannot read the chat config "+path)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, errs.New(errs.CodeInvalidInput, "invalid chat config %s: %v", path, err).With("config", path)
	}
	cfg.Path = path
	return cfg, nil
}

// Resolve applies the environment (LOCI_CHAT_*) over the file, fills
// defaults and checks everything but the model (see CheckModel).
func (c *Config) Resolve(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(EnvBaseURL); v != "" {
		c.Model.BaseURL = v
	}
	if v := getenv(EnvModel); v != "" {
		c.Model.Name = v
	}
	if v := getenv(EnvAPIKey); v != "" {
		c.Model.APIKey = v
	} else if c.Model.APIKeyEnv != "" {
		c.Model.APIKey = getenv(c.Model.APIKeyEnv)
	}
	if v := getenv(EnvHistoryDir); v != "" {
		c.History.Dir = v
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
	bad := func(format string, a ...any) error {
		e := errs.New(errs.CodeInvalidInput, format, a...)
		if c.Path != "" {
			e = e.With("config", c.Path)
		}
		return e
	}
	for _, p := range c.AutoApprove {
		if !validPattern(p) {
			return bad("auto_approve entry %q: use alias.tool, alias.* or *", p)
		}
	}
	for alias, s := range c.Servers {
		if err := ValidAlias(alias); err != nil {
			return bad("servers: %v", err)
		}
		if (s.URL == "") == (len(s.Command) == 0) {
			return bad("server %q needs exactly one of url or command", alias)
		}
		if len(s.Command) == 0 && len(s.Args) > 0 {
			return bad("server %q: args without a command", alias)
		}
		switch s.Transport {
		case "", TransportAuto, TransportStreamable, TransportSSE:
		default:
			return bad("server %q: transport must be streamable or sse, not %q", alias, s.Transport)
		}
		if s.URL != "" {
			if err := checkHTTPURL(expandVars(s.URL, getenv)); err != nil {
				return bad("server %q: %v", alias, err)
			}
		}
		if s.Token != "" && s.TokenEnv != "" {
			return bad("server %q: token and token_env are exclusive", alias)
		}
	}
	return nil
}

// HistoryEnabled reports whether sessions are logged (default yes).
func (c *Config) HistoryEnabled() bool { return c.History.Enabled == nil || *c.History.Enabled }

// CheckModel says what is missing for a model to be usable. No request is
// ever made without a base URL and a model name.
func (c *Config) CheckModel() error {
	var missing []string
	if c.Model.BaseURL == "" {
		missing = append(missing, "a base URL ("+EnvBaseURL+" or model.base_url)")
	}
	if c.Model.Name == "" {
		missing = append(missing, "a model name ("+EnvModel+" or model.name)")
	}
	where := DefaultConfigPath()
	if c.Path != "" {
		where = c.Path
	}
	if len(missing) > 0 {
		return errs.New(errs.CodeInvalidInput,
			"no chat model configured: loci chat needs %s; set them in the environment or in %s (see docs/chat.md). "+
				"Any OpenAI-compatible endpoint works, e.g. %s=http://127.0.0.1:11434/v1 %s=qwen2.5:7b for a local Ollama",
			strings.Join(missing, " and "), where, EnvBaseURL, EnvModel).With("config", where)
	}
	if err := checkHTTPURL(c.Model.BaseURL); err != nil {
		return errs.New(errs.CodeInvalidInput, "model base URL: %v", err)
	}
	if c.Model.APIKey == "" && c.Model.APIKeyEnv != "" {
		return errs.New(errs.CodeInvalidInput, "model.api_key_env names %s, which is not set in the environment (or set %s)", c.Model.APIKeyEnv, EnvAPIKey)
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

var aliasRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// ValidAlias checks a server alias: letters, digits, _ and -, at most 32,
// starting with a letter or digit (it prefixes every tool name the model
// sees).
func ValidAlias(a string) error {
	if !aliasRE.MatchString(a) {
		return fmt.Errorf("alias %q: use 1-32 letters, digits, _ or - (starting with a letter or digit)", a)
	}
	return nil
}

func validPattern(p string) bool {
	if p == "*" {
		return true
	}
	i := strings.Index(p, ".")
	return i > 0 && i < len(p)-1 && ValidAlias(p[:i]) == nil
}

var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandVars replaces ${NAME} with the environment variable NAME (only that
// form: a bare $ is kept, tokens and URLs may contain one).
func expandVars(s string, getenv func(string) string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return varRE.ReplaceAllStringFunc(s, func(m string) string { return getenv(m[2 : len(m)-1]) })
}

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
// quoting: 'single', "double" (with \" \\ escapes) and backslashes. It does
// no expansion.
func SplitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\' || s[i+1] == '$' || s[i+1] == '`') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			inWord = true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
