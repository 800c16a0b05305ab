package ops

import (
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
)

func registerAIOps(r *Registry) {
	register(r, AIStatus())
	register(r, AIToc())
	register(r, AIAsk())
	register(r, AISummarize())
	register(r, AIRelate())
	register(r, AITag())
	register(r, AIMetadata())
	register(r, AIExtract())
}

func textAIStatus(o any) string {
	s := o.(*AIStatusOut)
	if !s.Enabled {
		return "AI is off (no provider configured; see docs/ai.md)\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "provider: %s\nmodel: %s\nchat: %v\noperations: %s\ncache entries: %d\n", s.Provider, s.Model, s.Chat, strings.Join(s.Operations, ", "), s.CacheEntries)
	if s.Spend != nil {
		fmt.Fprintf(&b, "spend today: $%.4f (%d calls)\n", s.Spend.CostUSD, s.Spend.Calls)
	}
	return b.String()
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

func textAIAsk(o any) string {
	a := o.(*AIAskOut)
	var b strings.Builder
	b.WriteString(a.Answer + "\n\n")
	textCitations(&b, a.Citations)
	textWarnings(&b, a.Warnings)
	return b.String()
}

func textAISummary(o any) string {
	s := o.(*AISummarizeOut)
	var b strings.Builder
	if s.TLDR != "" {
		b.WriteString(s.TLDR + "\n\n")
	}
	for _, k := range s.KeyPoints {
		fmt.Fprintf(&b, "- %s\n", k.Text)
	}
	b.WriteString("\n")
	textCitations(&b, s.Citations)
	textWarnings(&b, s.Warnings)
	return b.String()
}

// AIStatus is the ai_status operation.
func AIStatus() Def[AIStatusIn, AIStatusOut] {
	return Def[AIStatusIn, AIStatusOut]{
		Name:  "ai_status",
		Title: "AI status",
		Description: "Whether the AI operations are on, with which provider and model, the embedding model, which AI operations are usable, " +
			"the AI cache size and today's token spend against the daily cost ceiling. Never calls the provider.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "ai status", Text: textAIStatus},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{}`,
		Toolset:     ToolsetAI,
		Handler:     aiStatus,
	}
}

// AIToc is the ai_toc operation.
func AIToc() Def[AITocIn, AITocOut] {
	return Def[AITocIn, AITocOut]{
		Name:  "ai_toc",
		Title: "Table of contents / map of content",
		Description: "mode=note: the outline of one note from its headings, as wikilinks (deterministic, no model call, cost 0). " +
			"mode=moc: a map of content for a scope (paths, glob, tag, query, note+include_linked) grouped by folder, tag, frontmatter:<key> (deterministic) or topic (chat model); " +
			"write_to writes it as a note through the safe-write pipeline (preview unless apply=true; writes must be enabled).",
		Annotations: Annotations{Idempotent: true},
		CLI:         CLI{Use: "ai toc", Args: []string{"note"}},
		Errors:      aiApplyErrors,
		Example:     `{"mode": "moc", "glob": "Projects/**", "group_by": "folder"}`,
		Toolset:     ToolsetAI,
		Handler:     idempotentAI[AITocIn, AITocOut]("ai_toc", aiToc),
	}
}

// AIAsk is the ai_ask operation.
func AIAsk() Def[AIAskIn, AIAskOut] {
	return Def[AIAskIn, AIAskOut]{
		Name:  "ai_ask",
		Title: "Ask the vault",
		Description: "Answer a question only from the vault: the best notes are retrieved (hybrid search, or the given scope), sent to the chat model with line numbers, " +
			"and the answer comes back with verified citations (path, etag, heading or lines, snippet), a confidence, the retrieved notes and follow-up questions. " +
			"Without enough evidence the answer is \"I don't know based on the indexed vault.\" with the warning unsupported_question. history carries earlier turns.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "ai ask", Args: []string{"question"}, Text: textAIAsk},
		Errors:      aiErrors,
		Example:     `{"question": "What are the goals of Project Atlas?"}`,
		Toolset:     ToolsetAI,
		Handler:     idempotentAI[AIAskIn, AIAskOut]("ai_ask", aiAsk),
	}
}

// AISummarize is the ai_summarize operation.
func AISummarize() Def[AISummarizeIn, AISummarizeOut] {
	return Def[AISummarizeIn, AISummarizeOut]{
		Name:  "ai_summarize",
		Title: "Summarize notes",
		Description: "Summarize a scope (paths, glob, tag, query, note+include_linked): tldr, key points, open questions, outline, in a style and length. " +
			"Every key point carries at least one verified citation, or is dropped (ungrounded_dropped). Scopes over the input budget are summarized in parts and merged (map-reduce).",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "ai summarize", Text: textAISummary},
		Errors:      aiErrors,
		Example:     `{"paths": ["Projects/Project Atlas.md"], "style": "bullets", "length": "short"}`,
		Toolset:     ToolsetAI,
		Handler:     idempotentAI[AISummarizeIn, AISummarizeOut]("ai_summarize", aiSummarize),
	}
}

// AIRelate is the ai_relate operation.
func AIRelate() Def[AIRelateIn, AIRelateOut] {
	return Def[AIRelateIn, AIRelateOut]{
		Name:  "ai_relate",
		Title: "Relate a note",
		Description: "The notes related to a note (vector neighbours plus lexical matches), each labelled extends, summarizes, cites, contradicts, same_topic, precedes, depends_on or duplicates " +
			"with a confidence and rationale: by the chat model when one is configured (with citations), by a heuristic otherwise. propose_links returns draft edit_note patches; nothing is written.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "ai relate", Args: []string{"path"}},
		Errors:      append(append([]string{}, aiErrors...), errs.CodeEmbedUnavailable, errs.CodeEmbedMismatch),
		Example:     `{"path": "Projects/Project Atlas.md", "limit": 5, "propose_links": true}`,
		Toolset:     ToolsetAI,
		Handler:     idempotentAI[AIRelateIn, AIRelateOut]("ai_relate", aiRelate),
	}
}

// AITag is the ai_tag operation.
func AITag() Def[AITagIn, AITagOut] {
	return Def[AITagIn, AITagOut]{
		Name:  "ai_tag",
		Title: "Suggest tags",
		Description: "Propose tags for the notes of a scope, biased toward the vault's existing tags, with confidence and citations; candidates, forbid, namespace, max_per_note and min_confidence constrain them, " +
			"invalid ones are dropped (tag_invalid, tag_below_threshold). Each note gets a preview diff; apply=true writes them (merge or replace) through the safe-write pipeline, guarded by the etag the model read.",
		Annotations: Annotations{Idempotent: true},
		CLI:         CLI{Use: "ai tag"},
		Errors:      aiApplyErrors,
		Example:     `{"paths": ["Ideas/Zettelkasten.md"], "max_per_note": 3}`,
		Toolset:     ToolsetAI,
		Handler:     idempotentAI[AITagIn, AITagOut]("ai_tag", aiTag),
	}
}

// AIMetadata is the ai_metadata operation.
func AIMetadata() Def[AIMetadataIn, AIMetadataOut] {
	return Def[AIMetadataIn, AIMetadataOut]{
		Name:  "ai_metadata",
		Title: "Fill frontmatter",
		Description: "Fill typed frontmatter fields (string, number, boolean, date, datetime, list, enum; pattern, min/max, default, required) for the notes of a scope from their content. " +
			"Values are re-validated (metadata_invalid drops them) and need a citation. Each note gets a preview diff; apply=true writes them (set_missing, overwrite or merge) through the safe-write pipeline.",
		Annotations: Annotations{Idempotent: true},
		CLI:         CLI{Use: "ai metadata"},
		Errors:      aiApplyErrors,
		Example:     `{"paths": ["Projects/Project Atlas.md"], "fields": [{"name": "status", "type": "enum", "enum": ["active", "done", "paused"]}]}`,
		Toolset:     ToolsetAI,
		Handler:     idempotentAI[AIMetadataIn, AIMetadataOut]("ai_metadata", aiMetadata),
	}
}

// AIExtract is the ai_extract operation.
func AIExtract() Def[AIExtractIn, AIExtractOut] {
	return Def[AIExtractIn, AIExtractOut]{
		Name:  "ai_extract",
		Title: "Extract structured data",
		Description: "Extract data matching a caller-supplied JSON Schema (draft 2020-12; an invalid schema is ai_schema_invalid before any model call) from each note of a scope, with citations. " +
			"Records that fail the schema are dropped (extract_invalid). destination json returns them; destination frontmatter writes each under key (preview unless apply=true).",
		Annotations: Annotations{Idempotent: true},
		CLI:         CLI{Use: "ai extract"},
		Errors:      append(append([]string{}, aiApplyErrors...), errs.CodeAISchemaInvalid),
		Example:     `{"glob": "People/**", "schema": {"type": "object", "properties": {"name": {"type": "string"}, "role": {"type": "string"}}, "required": ["name"]}}`,
		Toolset:     ToolsetAI,
		Handler:     idempotentAI[AIExtractIn, AIExtractOut]("ai_extract", aiExtract),
	}
}
