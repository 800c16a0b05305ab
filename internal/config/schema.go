package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// File is one configuration file: the user's (~/.config/loci/config.yaml,
// $LOCI_CONFIG) or a vault's (<vault>/.loci/config.yaml); both have this
// schema, but a vault's file may not set what is marked trust:"user" (see
// docs/security.md). The check tags are the validation rules of the strict
// decoder (validate.go); merge:"union" lists add up across layers instead
// of the higher layer replacing the lower.
type File struct {
	// Exclude lists doublestar globs of vault-relative paths never indexed.
	Exclude []string `yaml:"exclude" check:"glob" merge:"union"`
	// IndexDir overrides where the index lives. From a vault's own file it
	// must be relative and stay inside the vault; see ResolveIndexDir.
	IndexDir string `yaml:"index_dir" check:"indexdir"`
	// Writes configures the write operations (see docs/writes.md).
	Writes Writes `yaml:"writes"`
	// Providers are the model servers the roles (ai, embed, chat) name.
	Providers map[string]Provider `yaml:"providers" check:"providername"`
	// Embed configures the embedding provider (see docs/search.md).
	Embed Embed `yaml:"embed"`
	// Search tunes hybrid retrieval (see docs/search.md).
	Search Search `yaml:"search"`
	// AI configures the AI operations (see docs/ai.md); off by default.
	AI AI `yaml:"ai"`
	// Chat configures `loci chat` (docs/chat.md): the user's only.
	Chat Chat `yaml:"chat" trust:"user"`
	// ReadPaths, when set, are the only globs the read surfaces show
	// (search, context, links, tree, tags, resources, AI scopes, the web
	// UI); DenyReadPaths are never shown (deny wins; every layer's add
	// up). Both only take away, so a vault's own file may set them.
	ReadPaths     []string `yaml:"read_paths" check:"glob"`
	DenyReadPaths []string `yaml:"deny_read_paths" check:"glob" merge:"union"`
	// Server configures `loci serve` for several agents (docs/security.md):
	// JWTs, rate limits, toolsets, the calls log, metrics. The user's only.
	Server Server `yaml:"server" trust:"user"`
	// IgnoreVaultConfig makes loci skip every vault's own
	// .loci/config.yaml (what LOCI_CONFIG used to do).
	IgnoreVaultConfig bool `yaml:"ignore_vault_config" trust:"user"`

	// Path is the file read ("" when there is none).
	Path string `yaml:"-"`
	// Source is SourceNone, SourceVault or SourceUser.
	Source string `yaml:"-"`

	// lines maps key paths to their lines in the file; a key is set in the
	// file when it is in lines.
	lines map[string]int
}

// Provider is an OpenAI-compatible model server that roles name.
type Provider struct {
	// Type is openai, ollama, llamacpp, vllm or openai-compatible (default:
	// the entry's name when it is one of these, else openai-compatible).
	Type string `yaml:"type" check:"enum=openai|ollama|llamacpp|vllm|openai-compatible"`
	// BaseURL is the API base (default: https://api.openai.com/v1 for
	// openai, or $OPENAI_BASE_URL; http://localhost:11434/v1 for ollama).
	BaseURL string `yaml:"base_url" check:"url"`
	// APIKeyEnv names the variable holding the key; APIKey is the key
	// itself (avoid: the file is plain text).
	APIKey    string `yaml:"api_key"`
	APIKeyEnv string `yaml:"api_key_env"`
	// Headers are extra request headers; ${VAR} is expanded.
	Headers map[string]string `yaml:"headers"`
}

// Embed is the embed section; LOCI_EMBED_* variables override it.
type Embed struct {
	// Provider: builtin (default), none, model2vec (a static Model2Vec
	// model in model_path), onnx (a sentence transformer exported to ONNX
	// in model_path), a providers entry, or one of the provider types (the
	// older spelling, with base_url and api_key here).
	Provider string `yaml:"provider" check:"role"`
	Model    string `yaml:"model"`
	// ModelPath is the folder of a model2vec model (model.safetensors +
	// tokenizer.json) or of an onnx one (model.onnx + tokenizer.json). Only the user's config, LOCI_EMBED_MODEL_PATH or a
	// flag may set it: a vault's own file could otherwise make loci read any
	// file of the machine.
	ModelPath    string  `yaml:"model_path" trust:"user"`
	BaseURL      string  `yaml:"base_url" check:"url"` // overrides the provider's
	APIKey       string  `yaml:"api_key"`              // overrides the provider's; prefer api_key_env
	APIKeyEnv    string  `yaml:"api_key_env"`
	Dims         int     `yaml:"dims" check:"nonneg"`
	BatchSize    int     `yaml:"batch_size" check:"nonneg"`
	Concurrency  int     `yaml:"concurrency" check:"nonneg"`
	MaxRetries   *int    `yaml:"max_retries" check:"nonneg"`            // unset: 4; 0: none
	PricePerMTok float64 `yaml:"price_per_mtok" check:"nonneg"`         // USD per million tokens, for the cost estimate
	OnMismatch   string  `yaml:"on_mismatch" check:"enum=fail|reembed"` // fail (default) | reembed
	Int8         bool    `yaml:"int8"`                                  // int8 vectors in memory
	// QueryPrefix and DocumentPrefix are put before every query and every
	// indexed text (e.g. "query: " and "passage: " for e5 models). Unset:
	// an onnx model folder's own prompts (config_sentence_transformers.json),
	// none for the other providers; set (even to ""): this value. The
	// builtin embedder ignores them.
	QueryPrefix    *string `yaml:"query_prefix" check:"prefix"`
	DocumentPrefix *string `yaml:"document_prefix" check:"prefix"`
}

// Search is the search section of the config file: the fusion of lexical
// and vector rankings (reciprocal rank fusion) and graph expansion.
type Search struct {
	RRFK           float64 `yaml:"rrf_k" check:"nonneg"`           // RRF constant k (default 20)
	LexicalWeight  float64 `yaml:"lexical_weight" check:"nonneg"`  // weight of the BM25 ranking (default 1)
	SemanticWeight float64 `yaml:"semantic_weight" check:"nonneg"` // weight of the vector ranking (default 0.5)
	GraphWeight    float64 `yaml:"graph_weight" check:"nonneg"`    // share of a seed's score a linked note gets (default 0.5)
	MinSimilarity  float64 `yaml:"min_similarity"`                 // cosine floor of the vector ranking (default 0.2; negative: none)
	AgreementFloor float64 `yaml:"agreement_floor"`                // hybrid's guard against uninformative vectors (default 2; negative: none)
	LexicalMargin  float64 `yaml:"lexical_margin"`                 // hybrid: weight of the lexical hits' BM25 relative to the best (default 0.25; negative: none)
	// ApproxMinChunks is the number of sections with a vector from which
	// vector search uses an approximate index (IVF) instead of scanning
	// every vector (default 250,000; negative: never).
	ApproxMinChunks int `yaml:"approx_min_chunks"`
}

// AI is the ai section; LOCI_AI_* variables override it (docs/ai.md).
type AI struct {
	// Provider: empty or none (AI off, the default), embeddings (no chat
	// model: ai_relate with heuristic labels and ai_toc note mode only), a
	// providers entry, or one of the provider types.
	Provider        string   `yaml:"provider" check:"role"`
	BaseURL         string   `yaml:"base_url" check:"url"`
	Model           string   `yaml:"model"`
	APIKey          string   `yaml:"api_key"`     // prefer api_key_env
	APIKeyEnv       string   `yaml:"api_key_env"` // environment variable holding the key
	MaxInputTokens  int      `yaml:"max_input_tokens" check:"nonneg"`
	MaxOutputTokens int      `yaml:"max_output_tokens" check:"nonneg"`
	Temperature     float64  `yaml:"temperature" check:"nonneg"`
	Seed            *int     `yaml:"seed"`
	TimeoutSeconds  float64  `yaml:"timeout_seconds" check:"nonneg"`
	MaxRetries      *int     `yaml:"max_retries" check:"nonneg"`                    // retries of a failed call (unset: 2; 0: none)
	Structured      string   `yaml:"structured" check:"enum=auto|json_schema|json"` // auto | json_schema | json
	DailyCostUSD    float64  `yaml:"daily_cost_usd" check:"nonneg"`
	AllowGlobs      []string `yaml:"allow_globs" check:"glob"`
	DenyGlobs       []string `yaml:"deny_globs" check:"glob" merge:"union"`
	// Prices maps a model name (or a prefix ending in *) to its price.
	// They are the user's: a vault's own are not honoured (a "*" at $0
	// would switch off the daily ceiling).
	Prices map[string]AIPrice `yaml:"prices"`
}

// AIPrice is a model's price in USD per million tokens.
type AIPrice struct {
	InputPerMTok  float64 `yaml:"input_per_mtok" check:"nonneg"`
	OutputPerMTok float64 `yaml:"output_per_mtok" check:"nonneg"`
}

// Chat is the chat section (docs/chat.md). The older chat.yaml is this
// section on its own, with the model under model: {name, base_url, ...}.
type Chat struct {
	Provider     string            `yaml:"provider" check:"role"`
	Model        string            `yaml:"model"`
	BaseURL      string            `yaml:"base_url" check:"url"`
	APIKey       string            `yaml:"api_key"`
	APIKeyEnv    string            `yaml:"api_key_env"`
	Headers      map[string]string `yaml:"headers"`
	Temperature  *float64          `yaml:"temperature" check:"nonneg"`
	MaxTokens    int               `yaml:"max_tokens" check:"nonneg"`
	SystemPrompt string            `yaml:"system_prompt"`
	// Servers are the MCP servers to connect, by alias.
	Servers map[string]ChatServer `yaml:"servers"`
	// AutoApprove lists tools run without asking (alias.tool, alias.*, *).
	AutoApprove         []string     `yaml:"auto_approve"`
	AutoApproveReadOnly bool         `yaml:"auto_approve_read_only"`
	MaxToolDepth        int          `yaml:"max_tool_depth" check:"nonneg"`
	MaxResultChars      int          `yaml:"max_result_chars" check:"nonneg"`
	ToolTimeout         string       `yaml:"tool_timeout" check:"duration"`
	ConnectTimeout      string       `yaml:"connect_timeout" check:"duration"`
	Commands            ChatCommands `yaml:"commands"`
	History             ChatHistory  `yaml:"history"`
}

// ChatServer declares one MCP server: url (Streamable HTTP, falling back
// to HTTP+SSE) or command (stdio).
type ChatServer struct {
	URL       string            `yaml:"url"`
	Command   Argv              `yaml:"command"`
	Args      []string          `yaml:"args"`
	Env       map[string]string `yaml:"env"`
	Dir       string            `yaml:"dir"`
	Headers   map[string]string `yaml:"headers"`
	Token     string            `yaml:"token"`
	TokenEnv  string            `yaml:"token_env"`
	Transport string            `yaml:"transport" check:"enum=auto|streamable|sse"`
	Disabled  bool              `yaml:"disabled"`
}

// ChatCommands controls CMD: lines (the model proposing shell commands).
type ChatCommands struct {
	Enabled bool   `yaml:"enabled"`
	Timeout string `yaml:"timeout" check:"duration"`
	Shell   string `yaml:"shell"`
}

// ChatHistory controls the JSONL session log.
type ChatHistory struct {
	Enabled *bool  `yaml:"enabled"`
	Dir     string `yaml:"dir"`
}

// Argv is a command: a YAML list, or a string split like a shell would
// (quotes and backslashes; no expansion).
type Argv []string

// UnmarshalYAML accepts a string or a list of strings.
func (a *Argv) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		words, err := SplitWords(n.Value)
		if err != nil {
			return err
		}
		*a = words
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return fmt.Errorf("must be a string or a list of strings")
		}
		*a = l
		return nil
	}
	return fmt.Errorf("must be a string or a list of strings")
}

// SplitWords splits a command line into words as a POSIX shell would for
// quoting: 'single', "double" (with \" \\ escapes) and backslashes. It does
// no expansion.
func SplitWords(s string) ([]string, error) {
	var words []string
	var cur []byte
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words = append(words, string(cur))
				cur = cur[:0]
				inWord = false
			}
		case ch == '\'':
			j := indexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur = append(cur, s[i+1:i+1+j]...)
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\' || s[i+1] == '$' || s[i+1] == '`') {
					i++
				}
				cur = append(cur, s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			inWord = true
		case ch == '\\' && i+1 < len(s):
			i++
			cur = append(cur, s[i])
			inWord = true
		default:
			cur = append(cur, ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, string(cur))
	}
	return words, nil
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
