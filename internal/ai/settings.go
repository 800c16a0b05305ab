package ai

import (
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/llm"
)

// Price is what a model costs, in USD per million tokens.
type Price = llm.Price

// Where a model's price comes from (Settings.PriceOf).
const (
	PriceYours   = "prices"  // your prices: table
	PriceList    = "list"    // loci's list prices of hosted models (llm.ListPrices)
	PriceLocal   = "local"   // a server on this machine: free
	PriceUnknown = "unknown" // booked at $0: a daily_cost_usd ceiling cannot stop it
)

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
	// MaxRetries is the number of retries of a failed call: 0 means the
	// default (2), a negative number none (ai.max_retries: 0).
	MaxRetries int
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
	if s.MaxRetries == 0 {
		s.MaxRetries = llm.DefaultMaxRetries // a negative number (none) stays: Defaults may run twice
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

// PriceOf returns a model's price and where it comes from: your prices
// table (the exact name, then the longest prefix ending in "*"), else
// free for a server on this machine (base_url on localhost, 127.0.0.1 or
// [::1]), else loci's list price of a hosted model, else unknown.
func (s *Settings) PriceOf(model string) (Price, string) {
	if p, ok := s.Prices[model]; ok {
		return p, PriceYours
	}
	best := -1
	var found Price
	for k, v := range s.Prices {
		if strings.HasSuffix(k, "*") && strings.HasPrefix(model, strings.TrimSuffix(k, "*")) && len(k) > best {
			found, best = v, len(k)
		}
	}
	if best >= 0 {
		return found, PriceYours
	}
	if config.IsLoopbackURL(s.BaseURL) {
		return Price{}, PriceLocal
	}
	if p, ok := llm.ListPrice(model); ok {
		return p, PriceList
	}
	return Price{}, PriceUnknown
}

// Cost prices a call of model (PriceOf; 0 when the price is unknown).
func (s *Settings) Cost(model string, in, out int) float64 {
	p, _ := s.PriceOf(model)
	return roundUSD((float64(in)*p.InputPerMTok + float64(out)*p.OutputPerMTok) / 1e6)
}

// CeilingBlind reports whether a daily ceiling is set that the chat
// model's calls cannot reach: its price is unknown, so they are booked at $0.
func (s *Settings) CeilingBlind() bool {
	if s.DailyCostUSD <= 0 || !s.ChatEnabled() {
		return false
	}
	_, src := s.PriceOf(s.Model)
	return src == PriceUnknown
}

// CeilingBlindMessage says why the ceiling cannot hold and what to do
// ("" when it can).
func (s *Settings) CeilingBlindMessage() string {
	if !s.CeilingBlind() {
		return ""
	}
	return fmt.Sprintf("ai.daily_cost_usd is $%.2f, but loci has no price for model %q, so its calls are booked at $0 and the ceiling cannot stop them; "+
		"add it to ai.prices (USD per million tokens; {input_per_mtok: 0, output_per_mtok: 0} for a free server)", s.DailyCostUSD, s.Model)
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
