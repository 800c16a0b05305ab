package aiops

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// IDontKnow is ai_ask's answer when the vault does not support one.
const IDontKnow = "I don't know based on the indexed vault."

// AIAskIn is the input of ai_ask.
type AIAskIn struct {
	Question string `json:"question" jsonschema:"the question"`
	AIScope
	AIOpts
	History []ai.Message `json:"history,omitempty" jsonschema:"earlier turns (role user or assistant, content) for a follow-up question; loci keeps no conversation state"`
	Stream  bool         `json:"stream,omitempty" jsonschema:"stream the answer's text as it grows (ai.partial events), then usage and citations: SSE on REST with Accept: text/event-stream, NDJSON on the CLI, progress notifications over MCP; the final result is the same"`
}

// Validate checks the question and history.
func (in *AIAskIn) Validate() error {
	if strings.TrimSpace(in.Question) == "" {
		return errs.New(errs.CodeInvalidInput, "question is required")
	}
	for _, m := range in.History {
		if m.Role != "user" && m.Role != "assistant" {
			return errs.New(errs.CodeInvalidInput, "history roles must be user or assistant")
		}
	}
	return in.AIScope.validate()
}

// RetrievedNote is a note ai_ask read.
type RetrievedNote struct {
	Path  string `json:"path" jsonschema:"vault-relative path"`
	Title string `json:"title" jsonschema:"note title"`
	Etag  string `json:"etag" jsonschema:"the version read"`
}

// AIAskOut is the output of ai_ask.
type AIAskOut struct {
	AIMeta
	Answer     string          `json:"answer" jsonschema:"the answer, only from the retrieved notes; \"I don't know based on the indexed vault.\" when they do not support one"`
	Supported  bool            `json:"supported" jsonschema:"false when the vault did not hold enough evidence"`
	Confidence float64         `json:"confidence" jsonschema:"0-1, the model's confidence"`
	FollowUps  []string        `json:"follow_ups" jsonschema:"suggested follow-up questions"`
	Retrieved  []RetrievedNote `json:"retrieved" jsonschema:"the notes given to the model"`
}

// AIAsk is the ai_ask operation.
func AIAsk() ops.Def[AIAskIn, AIAskOut] {
	return ops.Def[AIAskIn, AIAskOut]{
		Name:  "ai_ask",
		Title: "Ask the vault",
		Description: "Answer a question only from the vault: the best notes are retrieved (hybrid search, or the given scope), sent to the chat model with line numbers, " +
			"and the answer comes back with verified citations (path, etag, heading or lines, snippet), a confidence, the retrieved notes and follow-up questions. " +
			"Without enough evidence the answer is \"I don't know based on the indexed vault.\" with the warning unsupported_question. history carries earlier turns.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "ai ask", Args: []string{"question"}, Text: textAIAsk},
		Errors:      aiErrors,
		Example:     `{"question": "What are the goals of Project Atlas?"}`,
		Toolset:     ops.ToolsetAI,
		Handler:     idempotentAI[AIAskIn, AIAskOut]("ai_ask", aiAsk),
	}
}

func aiAsk(ctx context.Context, env *ops.Env, in *AIAskIn) (out *AIAskOut, err error) {
	out = &AIAskOut{FollowUps: []string{}, Retrieved: []RetrievedNote{}}
	c, err := beginAI(ctx, env, "ai_ask", in.Vault, true, &out.AIMeta)
	if err != nil {
		return nil, err
	}
	defer func() { c.finish(err) }()
	scope := in.AIScope
	if scope.empty() {
		scope.Query, scope.MaxNotes = in.Question, ops.OrDefault(scope.MaxNotes, 8)
	}
	if err := c.resolve(ctx, &scope); err != nil {
		return nil, err
	}
	idk := func() {
		out.Answer, out.Supported, out.Confidence = IDontKnow, false, 0
		out.warn("unsupported_question", "", "the retrieved notes do not support an answer")
	}
	if len(c.notes) == 0 {
		idk()
		return out, nil
	}
	err = cached(ctx, c, in, in.useCache(), out, func() error {
		schema := map[string]any{"type": "object", "required": []string{"supported", "answer", "citations"}, "properties": map[string]any{
			"supported": map[string]any{"type": "boolean"}, "answer": map[string]any{"type": "string"},
			"confidence": map[string]any{"type": "number"}, "citations": citationsSchema(),
			"follow_ups": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}
		var hist strings.Builder
		for _, m := range in.History {
			fmt.Fprintf(&hist, "%s: %s\n", m.Role, m.Content)
		}
		var tail string
		if hist.Len() > 0 {
			tail += "Conversation so far:\n" + hist.String() + "\n"
		}
		tail += "Question: " + in.Question
		sys := "You answer questions about a personal knowledge vault. " + groundingRules +
			` Shape: {"supported": bool, "answer": string, "confidence": 0-1, "citations": [...], "follow_ups": [string]}. If the notes do not contain the answer set supported=false.`
		bs, err := c.batches(c.notes, sys, tail)
		if err != nil {
			return err
		}
		if len(bs) > 1 {
			out.warn("scope_truncated", "", "the retrieved notes exceed the input budget; the first %d were used", len(bs[0]))
		}
		// Retrieved lists what the model is given: the notes that fit.
		for _, n := range bs[0] {
			out.Retrieved = append(out.Retrieved, RetrievedNote{Path: n.Path, Title: n.Title, Etag: n.Etag})
		}
		user := render(bs[0]) + tail
		var res struct {
			Supported  bool          `json:"supported"`
			Answer     string        `json:"answer"`
			Confidence float64       `json:"confidence"`
			Citations  []rawCitation `json:"citations"`
			FollowUps  []string      `json:"follow_ups"`
		}
		if err := c.generate(ctx, "answer", schema, sys, user, &res, answerText); err != nil {
			return err
		}
		if res.FollowUps != nil {
			out.FollowUps = res.FollowUps
		}
		if !res.Supported || strings.TrimSpace(res.Answer) == "" {
			idk()
			return nil
		}
		cits := c.verify(res.Citations)
		if len(cits) == 0 && in.cite() {
			return groundingFailed(out.Warnings)
		}
		out.Answer, out.Supported, out.Confidence = strings.TrimSpace(res.Answer), true, clamp01(res.Confidence)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func textAIAsk(o any) string {
	a := o.(*AIAskOut)
	var b strings.Builder
	b.WriteString(a.Answer + "\n\n")
	textCitations(&b, a.Citations)
	textWarnings(&b, a.Warnings)
	return b.String()
}
