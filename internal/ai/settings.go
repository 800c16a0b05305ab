package ai

import (
	"math"
	"path"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok" json:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok" json:"output_per_mtok"`
}

// Settings are the effective AI settings.
type Settings struct {
	// Provider: "" (AI off), "embeddings" (no chat: only ai_relate with
	// heuristic labels and ai_toc note mode), or an OpenAI-compatible chat
	// provider: a providers entry of the config, or a type (openai,
	// ollama, llamacpp, vllm, openai-compatible).
	Provider string
	// Type is the provider's type (internal/config.ProviderTypes).
	Type    string
	BaseURL string
	// Headers are extra request headers of the provider (${VAR} expanded).
	Headers         map[string]string
	Model           string
	APIKey          string
	MaxInputTokens  int
	MaxOutputTokens int
	Temperature     float64
	Seed            *int
	Timeout         time.Duration
	MaxRetries      int
	// Structured: auto (json_schema, falling back to plain JSON when the
	// server refuses it), json_schema, or json (never send response_format).
	Structured   string
	DailyCostUSD float64 // 0: no ceiling
	Prices       map[string]Price
	AllowGlobs   []string
	DenyGlobs    []string
	CacheTTL     time.Duration
}

// Defaults fills unset values.
func (s *Settings) Defaults() {
	if s.MaxInputTokens <= 0 {
		s.MaxInputTokens = 64000
	}
	if s.MaxOutputTokens <= 0 {
		s.MaxOutputTokens = 2048
	}
	if s.Timeout <= 0 {
		s.Timeout = 30 * time.Second
	}
	if s.MaxRetries < 0 {
		s.MaxRetries = 0
	} else if s.MaxRetries == 0 {
		s.MaxRetries = 2
	}
	if s.Structured == "" {
		s.Structured = "auto"
	}
	if s.CacheTTL <= 0 {
		s.CacheTTL = 24 * time.Hour
	}
	if s.BaseURL == "" {
		switch s.Provider {
		case "ollama":
			s.BaseURL = "http://localhost:11434/v1"
		case "openai":
			s.BaseURL = "https://api.openai.com/v1"
		}
	}
}

// ChatEnabled reports whether a chat provider is configured.
func (s *Settings) ChatEnabled() bool {
	return s.Provider != "" && s.Provider != "embeddings" && s.Provider != "none"
}

// Enabled reports whether the AI runtime is on at all.
func (s *Settings) Enabled() bool { return s.Provider != "" && s.Provider != "none" }

// Cost prices a call by the model's entry in the price table (exact name,
// then the longest prefix ending in "*").
func (s *Settings) Cost(model string, in, out int) float64 {
	p, ok := s.Prices[model]
	if !ok {
		best := -1
		for k, v := range s.Prices {
			if strings.HasSuffix(k, "*") && strings.HasPrefix(model, strings.TrimSuffix(k, "*")) && len(k) > best {
				p, best, ok = v, len(k), true
			}
		}
	}
	if !ok {
		return 0
	}
	return roundUSD((float64(in)*p.InputPerMTok + float64(out)*p.OutputPerMTok) / 1e6)
}

// roundUSD keeps costs to a millionth of a cent.
func roundUSD(x float64) float64 { return math.Round(x*1e8) / 1e8 }

// PathAllowed reports whether a note may be sent to the provider: denied
// globs always win; when allow globs are set the path must match one.
func (s *Settings) PathAllowed(rel string) bool {
	for _, g := range s.DenyGlobs {
		if globMatch(g, rel) {
			return false
		}
	}
	if len(s.AllowGlobs) == 0 {
		return true
	}
	for _, g := range s.AllowGlobs {
		if globMatch(g, rel) {
			return true
		}
	}
	return false
}

func globMatch(g, p string) bool {
	if ok, _ := doublestar.Match(g, p); ok {
		return true
	}
	// "Private/" or "Private" also covers everything below it.
	g = strings.TrimSuffix(g, "/")
	return !strings.ContainsAny(g, "*?[{") && (p == g || strings.HasPrefix(p, g+"/") || path.Base(p) == g)
}
