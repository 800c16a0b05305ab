package aiops

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// AIStatusIn is the input of ai_status.
type AIStatusIn struct {
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// AIStatusOut is the output of ai_status.
type AIStatusOut struct {
	Enabled         bool        `json:"enabled" jsonschema:"AI is configured (chat or embeddings-only)"`
	Chat            bool        `json:"chat" jsonschema:"a chat model is configured"`
	Provider        string      `json:"provider,omitempty" jsonschema:"the configured provider"`
	Model           string      `json:"model,omitempty" jsonschema:"the chat model"`
	Embeddings      string      `json:"embeddings,omitempty" jsonschema:"the embedding model of the index's vectors, if any"`
	Operations      []string    `json:"operations" jsonschema:"the AI operations usable now"`
	MaxInputTokens  int         `json:"max_input_tokens,omitempty" jsonschema:"input budget of one model call"`
	MaxOutputTokens int         `json:"max_output_tokens,omitempty" jsonschema:"output limit of one model call"`
	AllowGlobs      []string    `json:"allow_globs,omitempty" jsonschema:"only notes matching these may reach the provider"`
	DenyGlobs       []string    `json:"deny_globs,omitempty" jsonschema:"notes matching these never reach the provider (deny wins)"`
	CacheEntries    int         `json:"cache_entries" jsonschema:"results in the AI cache (.loci/ai-cache.db)"`
	Spend           *ai.Spend   `json:"spend,omitempty" jsonschema:"today's tokens and estimated cost against the daily ceiling"`
	Price           *Price      `json:"price,omitempty" jsonschema:"the chat model's price, which the daily ceiling is counted in"`
	Warnings        []AIWarning `json:"warnings" jsonschema:"what may not work as configured: price_unknown (a daily ceiling that cannot stop calls whose price is unknown)"`
}

// Price is a chat model's price and where it comes from.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok" jsonschema:"USD per million input tokens"`
	OutputPerMTok float64 `json:"output_per_mtok" jsonschema:"USD per million output tokens"`
	Source        string  `json:"source" jsonschema:"prices (your prices: table), list (loci's list prices of hosted models, docs/ai.md), local (a server on this machine: free) or unknown (calls are booked at $0)"`
}

// AIStatus is the ai_status operation.
func AIStatus() ops.Def[AIStatusIn, AIStatusOut] {
	return ops.Def[AIStatusIn, AIStatusOut]{
		Name:  "ai_status",
		Title: "AI status",
		Description: "Whether the AI operations are on, with which provider and model, the embedding model, which AI operations are usable, " +
			"the AI cache size and today's token spend against the daily cost ceiling. Never calls the provider.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "ai status", Text: textAIStatus},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{}`,
		Toolset:     ops.ToolsetAI,
		Handler:     aiStatus,
	}
}

func aiStatus(ctx context.Context, env *ops.Env, in *AIStatusIn) (*AIStatusOut, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	out := &AIStatusOut{Operations: []string{}, Warnings: []AIWarning{}}
	if id, ok := vh.Index.StoredIdentity(ctx); ok && id.String() != "" {
		out.Embeddings = id.String()
	}
	rt := env.AIFor(vh)
	if !rt.Enabled() {
		return out, nil
	}
	s := rt.Settings
	out.Enabled, out.Chat, out.Provider, out.Model = true, rt.HasChat(), s.Provider, s.Model
	out.MaxInputTokens, out.MaxOutputTokens, out.AllowGlobs, out.DenyGlobs = s.MaxInputTokens, s.MaxOutputTokens, s.AllowGlobs, s.DenyGlobs
	for _, op := range aiOpNames {
		if rt.HasChat() || contains(ops.AINoChat, op) {
			out.Operations = append(out.Operations, op)
		}
	}
	out.CacheEntries = rt.CacheEntries(ctx)
	sp := rt.Today(ctx)
	out.Spend = &sp
	if rt.HasChat() {
		p, src := s.PriceOf(s.Model)
		out.Price = &Price{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok, Source: src}
		if s.CeilingBlind() {
			out.Warnings = append(out.Warnings, priceUnknown(&s))
		}
	}
	return out, nil
}

var aiOpNames = []string{"ai_ask", "ai_extract", "ai_metadata", "ai_relate", "ai_status", "ai_summarize", "ai_tag", "ai_toc"}

func textAIStatus(o any) string {
	s := o.(*AIStatusOut)
	if !s.Enabled {
		return "AI is off (no provider configured; see docs/ai.md)\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "provider: %s\nmodel: %s\nchat: %v\noperations: %s\ncache entries: %d\n", s.Provider, s.Model, s.Chat, strings.Join(s.Operations, ", "), s.CacheEntries)
	if s.Price != nil {
		fmt.Fprintf(&b, "price: $%g in, $%g out per million tokens (%s)\n", s.Price.InputPerMTok, s.Price.OutputPerMTok, s.Price.Source)
	}
	if s.Spend != nil {
		fmt.Fprintf(&b, "spend today: $%.4f (%d calls)", s.Spend.CostUSD, s.Spend.Calls)
		if s.Spend.CeilingUSD > 0 {
			fmt.Fprintf(&b, " of $%.2f, resets %s", s.Spend.CeilingUSD, s.Spend.ResetAt)
		}
		b.WriteString("\n")
	}
	textWarnings(&b, s.Warnings)
	return b.String()
}
