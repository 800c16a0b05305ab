package aiops

import (
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/ai"
)

// AIOpts are the options every AI operation shares.
type AIOpts struct {
	Cite           *bool  `json:"cite,omitempty" jsonschema:"require citations (default true): claims without a verified citation are dropped, and with none left the call fails with ai_grounding_failed"`
	Cache          *bool  `json:"cache,omitempty" jsonschema:"use the AI cache (default true): the same input over the same note versions within 24 h is answered from .loci/ai-cache.db at no cost"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a unique key for this call: a retry with the same key and input within 24 h returns the first result (warning idempotent_replay) without calling the model or writing again; the same key with another input fails with idempotency_key_reused; calls sharing a key run one at a time"`
	Vault          string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

func (o *AIOpts) opts() *AIOpts { return o }

func (o *AIOpts) cite() bool { return o.Cite == nil || *o.Cite }

func (o *AIOpts) useCache() bool { return o.Cache == nil || *o.Cache }

// AIWarning is a non-fatal condition (docs/ai.md lists the codes).
type AIWarning struct {
	Code      string `json:"code" jsonschema:"warning code: ai_cache_hit, idempotent_replay, citation_invalid, citation_drift, ungrounded_dropped, globs_excluded, unsupported_question, scope_truncated, truncated, chat_unavailable, embeddings_unavailable, tag_invalid, tag_below_threshold, metadata_invalid, metadata_missing, extract_invalid, map_reduce, price_unknown, apply_failed, idempotency_not_stored"`
	Message   string `json:"message" jsonschema:"what happened"`
	Path      string `json:"path,omitempty" jsonschema:"the note concerned"`
	ErrorCode string `json:"error_code,omitempty" jsonschema:"apply_failed: the error code of the note's failed write (etag_mismatch, path_denied, conflict, ...)"`
}

// AIMeta is carried by every AI output.
type AIMeta struct {
	Scope     []string    `json:"scope" jsonschema:"the notes read (after allow/deny globs)"`
	Citations []Citation  `json:"citations" jsonschema:"every verified citation of the result"`
	Usage     ai.Usage    `json:"usage" jsonschema:"tokens and cost of this call (zero on a cache hit)"`
	Warnings  []AIWarning `json:"warnings" jsonschema:"non-fatal conditions"`
	Provider  string      `json:"provider,omitempty" jsonschema:"chat provider used"`
	Model     string      `json:"model,omitempty" jsonschema:"chat model used"`
}

func (m *AIMeta) meta() *AIMeta { return m }

func (m *AIMeta) warn(code, path, format string, args ...any) {
	m.Warnings = append(m.Warnings, AIWarning{Code: code, Path: path, Message: fmt.Sprintf(format, args...)})
}

func textCitations(b *strings.Builder, cs []Citation) {
	for i, c := range cs {
		loc := c.Path
		if c.Line > 0 {
			loc += fmt.Sprintf(":%d-%d", c.Line, c.EndLine)
		}
		fmt.Fprintf(b, "[%d] %s  %s\n", i+1, loc, c.Snippet)
	}
}

func textWarnings(b *strings.Builder, ws []AIWarning) {
	for _, w := range ws {
		fmt.Fprintf(b, "warning %s: %s\n", w.Code, w.Message)
	}
}

func hasWarning(ws []AIWarning, codes ...string) bool {
	for _, w := range ws {
		if contains(codes, w.Code) {
			return true
		}
	}
	return false
}
