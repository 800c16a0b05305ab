// Package embed turns text into vectors behind one interface. Four
// providers exist: "builtin", an offline embedder compiled into the binary
// (SIF-weighted averages of GloVe-derived word vectors), "model2vec", a
// static Model2Vec model from a folder the user brings, "onnx", a sentence
// transformer exported to ONNX from such a folder, and "openai", any
// OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, llama.cpp
// server, vLLM, ...). The index records the Identity of the provider that
// wrote its vectors; a different one is refused.
package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/llm"
)

// Identity names the vector space a provider writes into: vectors of two
// different identities cannot be compared.
type Identity struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Dims     int    `json:"dims"`
}

func (id Identity) String() string {
	if id.Dims == 0 {
		return id.Provider + "/" + id.Model
	}
	return fmt.Sprintf("%s/%s (%d dims)", id.Provider, id.Model, id.Dims)
}

// Provider embeds texts. Implementations are safe for concurrent use.
type Provider interface {
	// Identity is the provider, model and dimension of the vectors. For a
	// remote model whose dimension is not configured, Dims is 0 until the
	// first call has returned.
	Identity() Identity
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Usage reports the work done so far.
	Usage() Usage
}

// Usage counts a provider's work: requests, texts, tokens (as reported by
// the server, or estimated by EstimateTokens) and the estimated cost.
type Usage struct {
	Requests int64   `json:"requests"`
	Texts    int64   `json:"texts"`
	Tokens   int64   `json:"tokens"`
	Retries  int64   `json:"retries"`
	CostUSD  float64 `json:"cost_usd"`
}

// usage is the concurrency-safe accumulator behind Usage.
type usage struct {
	requests, texts, tokens, retries atomic.Int64
	pricePerMTok                     float64
}

func (u *usage) snapshot() Usage {
	t := u.tokens.Load()
	return Usage{Requests: u.requests.Load(), Texts: u.texts.Load(), Tokens: t, Retries: u.retries.Load(), CostUSD: float64(t) / 1e6 * u.pricePerMTok}
}

// EstimateTokens is internal/llm's rough count: 4 bytes a token for ASCII,
// a token a character for Chinese, Japanese and Korean.
func EstimateTokens(s string) int { return llm.EstimateTokens(s) }

// Error codes of this package (see internal/errs for the shared ones).
const (
	// CodeMismatch: the index holds vectors of another model.
	CodeMismatch = errs.CodeEmbedMismatch
	// CodeUnavailable: the embedding service failed or is not configured.
	CodeUnavailable = errs.CodeEmbedUnavailable
)

// Settings are the effective embedding settings of a vault.
type Settings struct {
	Provider     string            // builtin (default) | model2vec | onnx | openai | none
	Model        string            // openai: model name
	ModelPath    string            // model2vec, onnx: the model folder (absolute)
	BaseURL      string            // openai: e.g. https://api.openai.com/v1 or http://localhost:11434/v1
	APIKey       string            // openai: bearer token (may be empty for local servers)
	Headers      map[string]string // openai: extra request headers of the provider (${VAR} expanded)
	Dims         int               // openai: requested dimensions (0: the model's own)
	BatchSize    int               // texts per request (default 64)
	Concurrency  int               // requests in flight (default 4)
	MaxRetries   int               // retries of a failed request (default 4; 0: none)
	Timeout      time.Duration     // per request (default 60s)
	PricePerMTok float64           // USD per million tokens, for the cost estimate
	OnMismatch   string            // fail (default) | reembed
	Int8         bool              // keep vectors as int8 in memory (4x smaller)
	// QueryPrefix and DocumentPrefix go before each query and each indexed
	// text (nil: none, or an onnx folder's own prompts); not for builtin.
	QueryPrefix, DocumentPrefix *string
}

// Disabled reports whether embeddings are switched off.
func (s Settings) Disabled() bool { return s.Provider == "none" || s.Provider == "off" }

// Resolve computes the embedding settings of a vault: its configuration
// resolved over every layer (internal/config: environment > user file >
// vault file > defaults), then FromConfig.
func Resolve(vaultRoot string) (Settings, error) {
	c, err := config.Resolve(vaultRoot, config.Options{})
	if err != nil {
		return defaults(), err
	}
	return FromConfig(c)
}

func defaults() Settings {
	return Settings{Provider: "builtin", BatchSize: 64, Concurrency: 4, MaxRetries: 4, Timeout: 60 * time.Second, OnMismatch: "fail"}
}

// FromConfig returns the embedding settings of a resolved configuration:
// the embed section over the defaults, and for a model server the one its
// provider names (a providers entry or a type; config.Endpoint). Every
// OpenAI-compatible server is the provider "openai" of the index's
// identity, as before providers: existed.
func FromConfig(c *config.Config) (Settings, error) {
	s := defaults()
	e := c.Embed
	if e.Provider != "" {
		s.Provider = strings.ToLower(strings.TrimSpace(e.Provider))
	}
	s.Model = e.Model
	if e.Dims > 0 {
		s.Dims = e.Dims
	}
	if e.BatchSize > 0 {
		s.BatchSize = e.BatchSize
	}
	if e.Concurrency > 0 {
		s.Concurrency = e.Concurrency
	}
	if e.MaxRetries != nil {
		s.MaxRetries = *e.MaxRetries // 0: no retries
	}
	s.PricePerMTok = e.PricePerMTok
	if e.OnMismatch != "" {
		s.OnMismatch = e.OnMismatch
	}
	s.Int8 = e.Int8
	s.QueryPrefix, s.DocumentPrefix = e.QueryPrefix, e.DocumentPrefix
	switch s.Provider {
	case "builtin", "none", "off":
		return s, nil
	case "model2vec", "onnx":
		s.ModelPath = modelPath(c)
		return s, nil
	}
	ep := c.Endpoint(config.RoleEmbed)
	if ep == nil {
		return s, errs.New(errs.CodeInvalidInput, "unknown embedding provider %q (builtin, none, a providers entry or one of %s)", e.Provider, strings.Join(config.ProviderTypes, ", "))
	}
	s.Provider, s.BaseURL, s.APIKey = "openai", ep.BaseURL, ep.APIKey
	if len(ep.Headers) > 0 {
		s.Headers = ep.Headers
	}
	if p, ok := llm.ListPrice(s.Model); ok && s.PricePerMTok == 0 && !config.IsLoopbackURL(s.BaseURL) {
		s.PricePerMTok = p.InputPerMTok // a hosted model's list price (docs/ai.md); a local server is free
	}
	return s, nil
}

// modelPath resolves embed.model_path: a leading ~/ is the home directory;
// a relative path from the user's file is relative to that file's folder,
// one from the environment or a flag to the working directory. A vault's
// own file cannot set it (internal/config refuses the key there).
func modelPath(c *config.Config) string {
	p := strings.TrimSpace(c.Embed.ModelPath)
	if p == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(p) {
		if src := c.SourceOf("embed.model_path"); src.Layer == config.LayerUser && src.Path != "" {
			p = filepath.Join(filepath.Dir(src.Path), p)
		} else if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	return filepath.Clean(p)
}

// New returns the provider for the settings (nil when disabled).
func New(s Settings) (Provider, error) {
	switch s.Provider {
	case "", "builtin":
		return Builtin(), nil
	case "none", "off":
		return nil, nil
	case "openai":
		return withPrefixes(NewOpenAI(s), s), nil
	case "model2vec":
		m, err := NewModel2Vec(s.ModelPath)
		if err != nil {
			return nil, err
		}
		return withPrefixes(m, s), nil
	case "onnx":
		return NewONNX(s.ModelPath, s.QueryPrefix, s.DocumentPrefix)
	}
	return nil, errs.New(errs.CodeInvalidInput, "unknown embedding provider %q", s.Provider)
}

// QueryEmbedder is a provider that embeds queries differently from
// documents (a query prefix); Query uses it when present.
type QueryEmbedder interface {
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// withPrefixes wraps p when the settings give a non-empty prefix.
func withPrefixes(p Provider, s Settings) Provider {
	var q, d string
	if s.QueryPrefix != nil {
		q = *s.QueryPrefix
	}
	if s.DocumentPrefix != nil {
		d = *s.DocumentPrefix
	}
	if q == "" && d == "" {
		return p
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("q=%q|d=%q", q, d)))
	return &prefixed{Provider: p, q: q, d: d, tag: "+prefix@" + hex.EncodeToString(h[:])[:8]}
}

// prefixed puts the configured prefixes before the texts of a provider
// that knows none (openai, model2vec). The prefixes are part of the
// identity: the model gets "+prefix@<8 hex>".
type prefixed struct {
	Provider
	q, d, tag string
}

func (p *prefixed) Identity() Identity {
	id := p.Provider.Identity()
	id.Model += p.tag
	return id
}

func (p *prefixed) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return p.Provider.Embed(ctx, withPrefix(p.d, texts))
}

func (p *prefixed) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vs, err := p.Provider.Embed(ctx, []string{p.q + text})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 {
		return nil, errs.New(CodeUnavailable, "embedding provider returned %d vectors for 1 text", len(vs))
	}
	return vs[0], nil
}

// cache remembers a few query embeddings: agents repeat queries, and a
// remote round trip costs far more than the search.
type queryCache struct {
	mu sync.Mutex
	m  map[string][]float32
}

func (c *queryCache) get(k string) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *queryCache) put(k string, v []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 256 {
		c.m = map[string][]float32{}
	}
	c.m[k] = v
}

var queries sync.Map // Identity.String() → *queryCache

// queryEmbedder is a provider that embeds a query otherwise than a note's
// text (the built-in embedder corrects a query's typos).
type queryEmbedder interface {
	embedQuery(ctx context.Context, text string, known func(word string) bool) ([]float32, error)
}

// QueryIn embeds a query for a vault: as Query, but a provider that
// corrects a query's unknown words leaves alone those known reports the
// vault uses (its own jargon is no typo). Not cached: what the vault knows
// changes.
func QueryIn(ctx context.Context, p Provider, text string, known func(word string) bool) ([]float32, error) {
	qe, ok := p.(queryEmbedder)
	if !ok {
		return Query(ctx, p, text)
	}
	v, err := qe.embedQuery(ctx, text, known)
	if err != nil {
		return nil, err
	}
	return Normalize(v), nil
}

// Query embeds one query text, with a small per-identity cache.
func Query(ctx context.Context, p Provider, text string) ([]float32, error) {
	key := p.Identity().String()
	c, _ := queries.LoadOrStore(key, &queryCache{})
	qc := c.(*queryCache)
	if v, ok := qc.get(text); ok {
		return v, nil
	}
	var v []float32
	if qe, ok := p.(QueryEmbedder); ok {
		var err error
		if v, err = qe.EmbedQuery(ctx, text); err != nil {
			return nil, err
		}
	} else {
		vs, err := p.Embed(ctx, []string{text})
		if err != nil {
			return nil, err
		}
		if len(vs) != 1 {
			return nil, errs.New(CodeUnavailable, "embedding provider returned %d vectors for 1 text", len(vs))
		}
		v = vs[0]
	}
	v = Normalize(v)
	qc.put(text, v)
	return v, nil
}
