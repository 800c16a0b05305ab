package read

import (
	"context"
	"os"
	"path/filepath"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/vault"
)

// GetCapabilitiesIn is the input of get_capabilities.
type GetCapabilitiesIn struct {
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Capabilities is the output of get_capabilities.
type Capabilities struct {
	Version string `json:"version" jsonschema:"the loci version serving the call"`
	Vault   string `json:"vault" jsonschema:"the vault described"`
	// Root and IndexPath are server paths: owner and admin only.
	Root      string `json:"root,omitempty" jsonschema:"absolute folder of the vault (owner and admin scope only)"`
	IndexPath string `json:"index_path,omitempty" jsonschema:"where the index lives (owner and admin scope only)"`
	GraphKind string `json:"graph_kind" jsonschema:"obsidian (an .obsidian folder), logseq (a Logseq graph at the root) or plain (a folder of Markdown)"`
	// LogseqGraphs are Logseq graphs inside the vault, by folder.
	LogseqGraphs   []string           `json:"logseq_graphs,omitempty" jsonschema:"vault-relative folders holding a Logseq graph (\"\" is the root); the Logseq operations work there"`
	QueryLanguages []string           `json:"query_languages" jsonschema:"structured query languages the server answers, beyond search_notes' query syntax, for the query operation (e.g. dataview)"`
	Search         SearchCapabilities `json:"search" jsonschema:"search modes and the limits of a query"`
	Writes         WriteCapabilities  `json:"writes" jsonschema:"whether this caller can change the vault"`
	AI             AICapabilities     `json:"ai" jsonschema:"whether the AI operations run"`
	Embeddings     EmbedCapabilities  `json:"embeddings" jsonschema:"the embedding provider and how far the vectors are"`
	Limits         LimitCapabilities  `json:"limits" jsonschema:"sizes and rates the server enforces"`
	Scopes         []string           `json:"scopes" jsonschema:"the caller's scopes (read, write, destructive, ai, admin)"`
}

// SearchCapabilities describes search_notes.
type SearchCapabilities struct {
	Modes       []string `json:"modes" jsonschema:"the modes search_notes accepts now: lexical always, semantic and hybrid when vectors exist"`
	DefaultMode string   `json:"default_mode" jsonschema:"the mode used when none is given"`
}

// WriteCapabilities says whether the caller can write.
type WriteCapabilities struct {
	Enabled  bool `json:"enabled" jsonschema:"write operations are on for this vault"`
	ReadOnly bool `json:"read_only" jsonschema:"the vault is served read-only (every write refused)"`
	Allowed  bool `json:"allowed" jsonschema:"this caller may write here: writes on, not read-only, and the write scope"`
	// Destructive is whether the caller holds the destructive scope.
	Destructive bool `json:"destructive" jsonschema:"this caller may also overwrite and delete (the destructive scope)"`
}

// AICapabilities says whether the AI operations run.
type AICapabilities struct {
	Enabled  bool   `json:"enabled" jsonschema:"an AI provider is configured for this vault"`
	Provider string `json:"provider,omitempty" jsonschema:"the configured provider"`
	Chat     bool   `json:"chat" jsonschema:"a chat model answers (ai_ask, ai_summarize...); false: only the embedding-based AI operations"`
	Allowed  bool   `json:"allowed" jsonschema:"this caller may call the AI operations (enabled and the ai scope)"`
}

// EmbedCapabilities describes the vectors.
type EmbedCapabilities struct {
	Provider string `json:"provider" jsonschema:"the embedding provider configured now (none when off)"`
	Model    string `json:"model,omitempty" jsonschema:"the model of the vectors in the index"`
	Complete bool   `json:"complete" jsonschema:"every section and title has its vector"`
	Pending  int    `json:"pending" jsonschema:"texts still waiting for a vector"`
}

// LimitCapabilities are the sizes and rates the server enforces.
type LimitCapabilities struct {
	QueryMaxBytes  int            `json:"query_max_bytes" jsonschema:"the longest search query, in bytes"`
	QueryMaxTerms  int            `json:"query_max_terms" jsonschema:"the most distinct terms in a query"`
	MaxResultBytes int            `json:"max_result_bytes" jsonschema:"the largest result; a bigger one fails with payload_too_large"`
	PageSizes      []PageSize     `json:"page_sizes" jsonschema:"default and largest limit of the main paginated operations"`
	Rates          *RateLimitInfo `json:"rates,omitempty" jsonschema:"calls per minute per principal over HTTP; absent when no rate limit is configured"`
}

// PageSize is the default and largest limit of one operation.
type PageSize struct {
	Operation string `json:"operation" jsonschema:"the operation"`
	Default   int    `json:"default" jsonschema:"results per page when limit is not given"`
	Max       int    `json:"max" jsonschema:"the largest limit accepted"`
}

// RateLimitInfo is the server's rate limits (0: none for that class).
type RateLimitInfo struct {
	ReadPerMinute  float64 `json:"read_per_minute" jsonschema:"read calls per minute (0: unlimited)"`
	WritePerMinute float64 `json:"write_per_minute" jsonschema:"write calls per minute (0: unlimited)"`
	AIPerMinute    float64 `json:"ai_per_minute" jsonschema:"AI calls per minute (0: unlimited)"`
	Concurrency    int     `json:"concurrency" jsonschema:"calls in flight per principal (0: no cap)"`
}

// pageSizes are the limits of the main paginated operations; a test
// checks each against the operation's own validation.
var pageSizes = []PageSize{
	{"search_notes", 10, 100},
	{"list_pages", 100, 1000},
	{"recent_notes", 20, 200},
	{"find_broken_links", 100, 1000},
	{"get_vault_tree", 500, 5000},
	{"list_frontmatter_values", 100, 1000},
	{"write_history", 20, 200},
}

// PageSizes returns the page sizes get_capabilities reports.
func PageSizes() []PageSize { return append([]PageSize(nil), pageSizes...) }

// GetCapabilities is the get_capabilities operation.
func GetCapabilities() ops.Def[GetCapabilitiesIn, Capabilities] {
	return ops.Def[GetCapabilitiesIn, Capabilities]{
		Name:  "get_capabilities",
		Title: "What this server can do",
		Description: "What this loci server offers the caller, to plan calls without trial and error: the graph kind of the vault (obsidian, logseq or plain) and its Logseq graphs, " +
			"the query languages beyond search (none yet), the search modes available, whether this caller can write (writes on, read-only mode, its scopes), whether AI runs, " +
			"the embedding provider and whether the vectors are complete, the limits (query bytes and terms, result size, page sizes, rate limits) and the loci version. " +
			"Server paths are shown to the owner and the admin scope only.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "capabilities", Short: "What this server offers: graph kind, writes, AI, embeddings, limits, version"},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{}`,
		Handler:     getCapabilities,
	}
}

func getCapabilities(ctx context.Context, env *ops.Env, in *GetCapabilitiesIn) (*Capabilities, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	p := ops.CallerFrom(ctx).Principal
	fence := env.ReadFence(ctx, vh)
	hidden, err := fence.Hidden(ctx, vh)
	if err != nil {
		return nil, err
	}
	st, err := vh.Index.Status(ctx, hidden...)
	if err != nil {
		return nil, err
	}
	out := &Capabilities{
		Version: ops.Version, Vault: vh.Name, GraphKind: graphKind(vh.Vault), LogseqGraphs: vh.Vault.Graphs(),
		QueryLanguages: append([]string{}, ops.QueryLanguages...),
	}
	if p.IsOwner() || p.Has(auth.ScopeAdmin) {
		out.Root, out.IndexPath = vh.Vault.Root, st.IndexPath
	}
	for _, s := range auth.AllScopes {
		if p.Has(s) {
			out.Scopes = append(out.Scopes, string(s))
		}
	}
	v := st.Vectors
	out.Search = SearchCapabilities{Modes: []string{"lexical"}, DefaultMode: v.DefaultMode}
	if v.Chunks > 0 && !v.Mismatch {
		out.Search.Modes = append(out.Search.Modes, "semantic", "hybrid")
	}
	out.Embeddings = EmbedCapabilities{Provider: v.Configured, Model: v.Model, Complete: v.Complete, Pending: v.Pending}
	ws := env.WritesFor(vh)
	out.Writes = WriteCapabilities{Enabled: ws.Enabled, ReadOnly: ws.ReadOnly,
		Allowed:     ws.Allowed() && p.Has(auth.ScopeWrite) && served(env, ops.ToolsetWrites),
		Destructive: ws.Allowed() && p.Has(auth.ScopeWrite) && p.Has(auth.ScopeDestructive) && served(env, ops.ToolsetWrites)}
	rt := env.AIFor(vh)
	out.AI = AICapabilities{Enabled: rt.Enabled(), Chat: rt.HasChat(), Allowed: rt.Enabled() && p.Has(auth.ScopeAI) && served(env, ops.ToolsetAI)}
	if rt.Enabled() {
		out.AI.Provider = rt.Settings.Provider
	}
	maxRes := env.MaxResultBytes
	if maxRes <= 0 {
		maxRes = ops.DefaultMaxResultBytes
	}
	out.Limits = LimitCapabilities{QueryMaxBytes: search.MaxQueryBytes, QueryMaxTerms: search.MaxTerms, MaxResultBytes: maxRes, PageSizes: PageSizes()}
	if env.Limits != nil {
		if s := env.Limits.Settings(); s.Active() {
			out.Limits.Rates = &RateLimitInfo{ReadPerMinute: s.Read.PerMinute, WritePerMinute: s.Write.PerMinute, AIPerMinute: s.AI.PerMinute, Concurrency: s.Concurrency}
		}
	}
	return out, nil
}

// served reports whether the server offers a toolset (server.toolsets).
func served(env *ops.Env, toolset string) bool {
	if len(env.Toolsets) == 0 {
		return true
	}
	for _, t := range env.Toolsets {
		if t == toolset {
			return true
		}
	}
	return false
}

// graphKind is logseq for a graph at the root, obsidian when the folder
// has Obsidian's settings, else plain Markdown.
func graphKind(v *vault.Vault) string {
	if v.Kind == vault.KindLogseq {
		return "logseq"
	}
	if st, err := os.Stat(filepath.Join(v.Root, ".obsidian")); err == nil && st.IsDir() {
		return "obsidian"
	}
	return "plain"
}
