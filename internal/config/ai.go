package config

// AI is the ai section of the config file; LOCI_AI_* variables override it
// (internal/ai resolves the effective settings; docs/ai.md).
type AI struct {
	// Provider: empty (AI off, the default), embeddings (no chat model:
	// ai_relate with heuristic labels and ai_toc note mode only), or an
	// OpenAI-compatible chat provider: openai | ollama | llamacpp | vllm | openai-compatible.
	Provider        string   `yaml:"provider" check:"enum=embeddings|openai|ollama|llamacpp|vllm|openai-compatible|none"`
	BaseURL         string   `yaml:"base_url"`
	Model           string   `yaml:"model"`
	APIKey          string   `yaml:"api_key"`     // prefer api_key_env
	APIKeyEnv       string   `yaml:"api_key_env"` // environment variable holding the key
	MaxInputTokens  int      `yaml:"max_input_tokens" check:"nonneg"`
	MaxOutputTokens int      `yaml:"max_output_tokens" check:"nonneg"`
	Temperature     float64  `yaml:"temperature" check:"nonneg"`
	Seed            *int     `yaml:"seed"`
	TimeoutSeconds  float64  `yaml:"timeout_seconds" check:"nonneg"`
	MaxRetries      int      `yaml:"max_retries" check:"nonneg"`
	Structured      string   `yaml:"structured" check:"enum=auto|json_schema|json"` // auto | json_schema | json
	DailyCostUSD    float64  `yaml:"daily_cost_usd" check:"nonneg"`
	AllowGlobs      []string `yaml:"allow_globs" check:"glob"`
	DenyGlobs       []string `yaml:"deny_globs" check:"glob"`
	// Prices maps a model name (or a prefix ending in *) to its price.
	Prices map[string]AIPrice `yaml:"prices"`
}

// AIPrice is a model's price in USD per million tokens.
type AIPrice struct {
	InputPerMTok  float64 `yaml:"input_per_mtok" check:"nonneg"`
	OutputPerMTok float64 `yaml:"output_per_mtok" check:"nonneg"`
}
