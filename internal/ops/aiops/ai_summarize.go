package aiops

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// AISummarizeIn is the input of ai_summarize.
type AISummarizeIn struct {
	AIScope
	AIOpts
	Style    string   `json:"style,omitempty" jsonschema:"neutral (default), bullets, executive or technical"`
	Length   string   `json:"length,omitempty" jsonschema:"short, medium (default) or long"`
	Include  []string `json:"include,omitempty" jsonschema:"parts to produce: tldr, key_points, open_questions, outline (default all)"`
	Language string   `json:"language,omitempty" jsonschema:"output language (default: the notes' language)"`
	Stream   bool     `json:"stream,omitempty" jsonschema:"stream the answer's text as it grows (ai.partial events), then usage and citations: SSE on REST with Accept: text/event-stream, NDJSON on the CLI, progress notifications over MCP; the final result is the same"`
}

// Validate checks the enums and scope.
func (in *AISummarizeIn) Validate() error {
	if in.AIScope.empty() {
		return errs.New(errs.CodeInvalidInput, "a scope is required: paths, glob, tag, query or note")
	}
	if s := in.Style; s != "" && s != "neutral" && s != "bullets" && s != "executive" && s != "technical" {
		return errs.New(errs.CodeInvalidInput, "style must be neutral, bullets, executive or technical")
	}
	if l := in.Length; l != "" && l != "short" && l != "medium" && l != "long" {
		return errs.New(errs.CodeInvalidInput, "length must be short, medium or long")
	}
	for _, p := range in.Include {
		if p != "tldr" && p != "key_points" && p != "open_questions" && p != "outline" {
			return errs.New(errs.CodeInvalidInput, "include takes tldr, key_points, open_questions, outline")
		}
	}
	return in.AIScope.validate()
}

// KeyPoint is a grounded statement of a summary.
type KeyPoint struct {
	Text      string     `json:"text" jsonschema:"the point"`
	Citations []Citation `json:"citations" jsonschema:"where it comes from (at least one)"`
}

// AISummarizeOut is the output of ai_summarize.
type AISummarizeOut struct {
	AIMeta
	TLDR          string     `json:"tldr,omitempty" jsonschema:"one or two sentences"`
	KeyPoints     []KeyPoint `json:"key_points" jsonschema:"grounded key points; points without a verified citation are dropped"`
	OpenQuestions []string   `json:"open_questions" jsonschema:"questions the notes leave open"`
	Outline       []string   `json:"outline" jsonschema:"a short outline of the material"`
}

// AISummarize is the ai_summarize operation.
func AISummarize() ops.Def[AISummarizeIn, AISummarizeOut] {
	return ops.Def[AISummarizeIn, AISummarizeOut]{
		Name:  "ai_summarize",
		Title: "Summarize notes",
		Description: "Summarize a scope (paths, glob, tag, query, note+include_linked): tldr, key points, open questions, outline, in a style and length. " +
			"Every key point carries at least one verified citation, or is dropped (ungrounded_dropped). Scopes over the input budget are summarized in parts and merged (map-reduce).",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "ai summarize", Text: textAISummary},
		Errors:      aiErrors,
		Example:     `{"paths": ["Projects/Project Atlas.md"], "style": "bullets", "length": "short"}`,
		Toolset:     ops.ToolsetAI,
		Handler:     idempotentAI[AISummarizeIn, AISummarizeOut]("ai_summarize", aiSummarize),
	}
}

type summaryPart struct {
	TLDR      string `json:"tldr"`
	KeyPoints []struct {
		Text      string        `json:"text"`
		Citations []rawCitation `json:"citations"`
	} `json:"key_points"`
	OpenQuestions []string `json:"open_questions"`
	Outline       []string `json:"outline"`
}

var summarySchema = map[string]any{"type": "object", "required": []string{"tldr", "key_points"}, "properties": map[string]any{
	"tldr": map[string]any{"type": "string"},
	"key_points": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"text", "citations"},
		"properties": map[string]any{"text": map[string]any{"type": "string"}, "citations": citationsSchema()}}},
	"open_questions": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	"outline":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}

func aiSummarize(ctx context.Context, env *ops.Env, in *AISummarizeIn) (out *AISummarizeOut, err error) {
	out = &AISummarizeOut{KeyPoints: []KeyPoint{}, OpenQuestions: []string{}, Outline: []string{}}
	c, err := beginAI(ctx, env, "ai_summarize", in.Vault, true, &out.AIMeta)
	if err != nil {
		return nil, err
	}
	defer func() { c.finish(err) }()
	if err := c.resolve(ctx, &in.AIScope); err != nil {
		return nil, err
	}
	if len(c.notes) == 0 {
		return nil, errs.New(errs.CodeNotFound, "the scope selects no note the AI may read")
	}
	want := map[string]bool{}
	for _, p := range orList(in.Include, []string{"tldr", "key_points", "open_questions", "outline"}) {
		want[p] = true
	}
	err = cached(ctx, c, in, in.useCache(), out, func() error {
		target := map[string]string{"short": "about 50 words", "medium": "about 150 words", "long": "about 450 words"}[orStr(in.Length, "medium")]
		sys := "You summarize notes of a personal knowledge vault. " + groundingRules +
			fmt.Sprintf(` Style: %s. Length: %s overall. Every key point must carry at least one citation. Shape: {"tldr", "key_points": [{"text", "citations"}], "open_questions": [string], "outline": [string]}.`, orStr(in.Style, "neutral"), target)
		if in.Language != "" {
			sys += " Write in language: " + in.Language + "."
		}
		bs, err := c.batches(c.notes, sys)
		if err != nil {
			return err
		}
		var parts []summaryPart
		var text *partialSpec // a map-reduce summary streams its merge step only
		if len(bs) == 1 {
			text = summaryText
		}
		for _, b := range bs {
			var p summaryPart
			if err := c.generate(ctx, "summary", summarySchema, sys, render(b), &p, text); err != nil {
				return err
			}
			parts = append(parts, p)
		}
		final := parts[0]
		if len(parts) > 1 {
			// Reduce: merge the partial summaries; key points keep the
			// citations of their map step.
			out.warn("map_reduce", "", "the scope exceeded the input budget: summarized in %d parts and merged", len(parts))
			var summaries []string
			for i, p := range parts {
				summaries = append(summaries, fmt.Sprintf("Part %d TLDR: %s\nOpen questions: %s\nOutline: %s\n\n", i+1, p.TLDR, strings.Join(p.OpenQuestions, "; "), strings.Join(p.Outline, "; ")))
			}
			reduceSchema := map[string]any{"type": "object", "required": []string{"tldr"}, "properties": map[string]any{
				"tldr": map[string]any{"type": "string"}, "open_questions": summarySchema["properties"].(map[string]any)["open_questions"], "outline": summarySchema["properties"].(map[string]any)["outline"]}}
			merge := "Merge these partial summaries of one set of notes into one. Reply with one JSON object {\"tldr\", \"open_questions\", \"outline\"}."
			// The merge prompt is held to the input budget too: the parts
			// that do not fit are left out of the merge (their key points
			// stay).
			n := c.fitting(summaries, merge)
			if n == 0 {
				return c.tooLarge("the merge step's prompt with its first partial summary", tokens(merge, summaries[0]))
			}
			if n < len(summaries) {
				out.warn("scope_truncated", "", "the partial summaries exceed the input budget: the merge step read the first %d of %d (the key points of every part are kept)", n, len(summaries))
			}
			var r summaryPart
			if err := c.generate(ctx, "summary_reduce", reduceSchema, merge, strings.Join(summaries[:n], ""), &r, tldrText); err != nil {
				return err
			}
			final.TLDR, final.OpenQuestions, final.Outline = r.TLDR, r.OpenQuestions, r.Outline
			for _, p := range parts[1:] {
				final.KeyPoints = append(final.KeyPoints, p.KeyPoints...)
			}
		}
		for _, kp := range final.KeyPoints {
			cits := c.verify(kp.Citations)
			if len(cits) == 0 && in.cite() {
				out.warn("ungrounded_dropped", "", "dropped a key point without a verified citation: %s", truncRunes(kp.Text, 120))
				continue
			}
			if cits == nil {
				cits = []Citation{}
			}
			out.KeyPoints = append(out.KeyPoints, KeyPoint{Text: kp.Text, Citations: cits})
		}
		if in.cite() && len(out.Citations) == 0 {
			return groundingFailed(out.Warnings)
		}
		if want["tldr"] {
			out.TLDR = strings.TrimSpace(final.TLDR)
		}
		if !want["key_points"] {
			out.KeyPoints = []KeyPoint{}
		}
		if want["open_questions"] && final.OpenQuestions != nil {
			out.OpenQuestions = final.OpenQuestions
		}
		if want["outline"] && final.Outline != nil {
			out.Outline = final.Outline
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func orList(l, def []string) []string {
	if len(l) == 0 {
		return def
	}
	return l
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
