// Package aiops holds the AI operations (docs/ai.md): ai_status, ai_toc,
// ai_ask, ai_summarize, ai_relate, ai_tag, ai_metadata and ai_extract. Each
// reads a scope of notes, prompts the vault's chat model with numbered
// lines, keeps only what verified citations support, and applies a result
// only through the write pipeline. The AI runtime itself (providers, cache,
// cost ledger) is internal/ai.
package aiops

import (
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// Ops returns the AI operations, in registration order.
func Ops() []ops.Tool {
	return []ops.Tool{
		AIStatus(),
		AIToc(),
		AIAsk(),
		AISummarize(),
		AIRelate(),
		AITag(),
		AIMetadata(),
		AIExtract(),
	}
}

// aiErrors are the codes every AI operation may return.
var aiErrors = []string{errs.CodeInvalidInput, errs.CodeVaultNotFound, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodePathDenied, errs.CodeIdempotencyReuse,
	errs.CodeAIUnavailable, errs.CodeAIQuota, errs.CodeAIProvider, errs.CodeAIGrounding, errs.CodeAIInputTooLarge}

// aiApplyErrors adds the codes of the write pipeline.
var aiApplyErrors = append(append([]string{}, aiErrors...), errs.CodeWritesDisabled, errs.CodeEtagMismatch, errs.CodeConflict,
	errs.CodeIdempotencyReuse, errs.CodeNoteLocked, errs.CodeInvalidUTF8)
