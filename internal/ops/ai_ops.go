package ops

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/errs"
)

// --- ai_status ---------------------------------------------------------------

// AIStatusIn is the input of ai_status.
type AIStatusIn struct {
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// AIStatusOut is the output of ai_status.
type AIStatusOut struct {
	Enabled         bool      `json:"enabled" jsonschema:"AI is configured (chat or embeddings-only)"`
	Chat            bool      `json:"chat" jsonschema:"a chat model is configured"`
	Provider        string    `json:"provider,omitempty" jsonschema:"the configured provider"`
	Model           string    `json:"model,omitempty" jsonschema:"the chat model"`
	Embeddings      string    `json:"embeddings,omitempty" jsonschema:"the embedding model of the index's vectors, if any"`
	Operations      []string  `json:"operations" jsonschema:"the AI operations usable now"`
	MaxInputTokens  int       `json:"max_input_tokens,omitempty" jsonschema:"input budget of one model call"`
	MaxOutputTokens int       `json:"max_output_tokens,omitempty" jsonschema:"output limit of one model call"`
	AllowGlobs      []string  `json:"allow_globs,omitempty" jsonschema:"only notes matching these may reach the provider"`
	DenyGlobs       []string  `json:"deny_globs,omitempty" jsonschema:"notes matching these never reach the provider (deny wins)"`
	CacheEntries    int       `json:"cache_entries" jsonschema:"results in the AI cache (.loci/ai-cache.db)"`
	Spend           *ai.Spend `json:"spend,omitempty" jsonschema:"today's tokens and estimated cost against the daily ceiling"`
}

func aiStatus(ctx context.Context, env *Env, in *AIStatusIn) (*AIStatusOut, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	out := &AIStatusOut{Operations: []string{}}
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
		if rt.HasChat() || contains(aiNoChat, op) {
			out.Operations = append(out.Operations, op)
		}
	}
	out.CacheEntries = rt.CacheEntries(ctx)
	sp := rt.Today(ctx)
	out.Spend = &sp
	return out, nil
}

var aiOpNames = []string{"ai_ask", "ai_extract", "ai_metadata", "ai_relate", "ai_status", "ai_summarize", "ai_tag", "ai_toc"}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// --- ai_toc ------------------------------------------------------------------

// AITocIn is the input of ai_toc.
type AITocIn struct {
	AIScope
	AIOpts
	AIApply
	Mode     string `json:"mode,omitempty" jsonschema:"note (default): the outline of one note (note or paths[0]) from its headings, no model call; moc: a map of content of the scope"`
	GroupBy  string `json:"group_by,omitempty" jsonschema:"moc: folder (default), tag, topic (needs a chat model) or frontmatter:<key>"`
	MaxDepth int    `json:"max_depth,omitempty" jsonschema:"note mode: deepest heading level to include (1-6, default 6)"`
	WriteTo  string `json:"write_to,omitempty" jsonschema:"moc: write the map of content to this note (preview unless apply)"`
	IfMatch  string `json:"if_match,omitempty" jsonschema:"with write_to: the etag of the note to replace (needed when it exists)"`
}

// Validate checks the mode and scope.
func (in *AITocIn) Validate() error {
	switch in.Mode {
	case "", "note", "moc":
	default:
		return errs.New(errs.CodeInvalidInput, "mode must be note or moc")
	}
	if in.MaxDepth < 0 || in.MaxDepth > 6 {
		return errs.New(errs.CodeInvalidInput, "max_depth must be between 1 and 6")
	}
	if g := in.GroupBy; g != "" && g != "folder" && g != "tag" && g != "topic" && !strings.HasPrefix(g, "frontmatter:") {
		return errs.New(errs.CodeInvalidInput, "group_by must be folder, tag, topic or frontmatter:<key>")
	}
	if in.WriteTo != "" && in.Mode != "moc" {
		return errs.New(errs.CodeInvalidInput, "write_to needs mode moc")
	}
	return in.AIScope.validate()
}

// TocEntry is one heading of a note's outline.
type TocEntry struct {
	Level  int    `json:"level" jsonschema:"heading level (1-6)"`
	Text   string `json:"text" jsonschema:"heading text"`
	Line   int    `json:"line" jsonschema:"line of the heading"`
	Anchor string `json:"anchor" jsonschema:"link target: Note#Heading"`
}

// MocGroup is one group of a map of content.
type MocGroup struct {
	Name  string    `json:"name" jsonschema:"group name (folder, tag, topic or frontmatter value)"`
	Notes []MocNote `json:"notes" jsonschema:"the notes of the group"`
}

// MocNote is a note in a map of content.
type MocNote struct {
	Path  string `json:"path" jsonschema:"vault-relative path"`
	Title string `json:"title" jsonschema:"note title"`
}

// AITocOut is the output of ai_toc.
type AITocOut struct {
	AIMeta
	Mode     string       `json:"mode" jsonschema:"note or moc"`
	Entries  []TocEntry   `json:"entries,omitempty" jsonschema:"note mode: the outline"`
	Groups   []MocGroup   `json:"groups,omitempty" jsonschema:"moc mode: the groups"`
	Markdown string       `json:"markdown" jsonschema:"the table of contents / map of content as Markdown with wikilinks"`
	Write    *WriteResult `json:"write,omitempty" jsonschema:"with write_to: the write (a preview unless apply)"`
}

func linkName(p string) string { return strings.TrimSuffix(p, ".md") }

func aiToc(ctx context.Context, env *Env, in *AITocIn) (out *AITocOut, err error) {
	out = &AITocOut{Mode: orStr(in.Mode, "note")}
	needChat := in.Mode == "moc" && in.GroupBy == "topic"
	c, err := beginAI(ctx, env, "ai_toc", in.Vault, needChat, &out.AIMeta)
	if err != nil {
		return nil, err
	}
	defer func() { c.finish(err) }()
	if out.Mode == "note" {
		ref := in.Note
		if ref == "" && len(in.Paths) > 0 {
			ref = in.Paths[0]
		}
		if ref == "" {
			return nil, errs.New(errs.CodeInvalidInput, "note mode needs note (or paths with one note)")
		}
		if err := c.resolve(ctx, &AIScope{Note: ref}); err != nil {
			return nil, err
		}
		if len(c.notes) == 0 {
			return nil, errs.New(errs.CodePathDenied, "%s is excluded by the AI globs", ref).With("path", ref)
		}
		n := c.notes[0]
		depth := OrDefault(in.MaxDepth, 6)
		var sb strings.Builder
		min := 7
		for _, h := range n.Headings {
			if h.Level <= depth && h.Level < min {
				min = h.Level
			}
		}
		out.Entries = []TocEntry{}
		for _, h := range n.Headings {
			if h.Level > depth {
				continue
			}
			e := TocEntry{Level: h.Level, Text: h.Text, Line: h.Line, Anchor: linkName(n.Path) + "#" + h.Text}
			out.Entries = append(out.Entries, e)
			fmt.Fprintf(&sb, "%s- [[%s|%s]]\n", strings.Repeat("  ", h.Level-min), e.Anchor, h.Text)
		}
		out.Markdown = sb.String()
		c.addCitation(Citation{Path: n.Path, Etag: n.Etag, Snippet: truncRunes(n.Title, 240)})
		return out, nil
	}
	if in.AIScope.empty() {
		return nil, errs.New(errs.CodeInvalidInput, "moc mode needs a scope: paths, glob, tag, query or note")
	}
	if err := c.resolve(ctx, &in.AIScope); err != nil {
		return nil, err
	}
	group := orStr(in.GroupBy, "folder")
	if group == "topic" {
		if err := cached(ctx, c, in, in.useCache(), out, func() error { return c.topicGroups(ctx, in, out) }); err != nil {
			return nil, err
		}
		c.meta = &out.AIMeta
	} else {
		groups := map[string][]MocNote{}
		for _, n := range c.notes {
			var keys []string
			switch {
			case group == "folder":
				d := path.Dir(n.Path)
				if d == "." {
					d = "(root)"
				}
				keys = []string{d}
			case group == "tag":
				info, err := c.vh.Index.NoteByPath(ctx, n.Path)
				if err == nil {
					keys = info.Tags
				}
			default:
				key := strings.TrimPrefix(group, "frontmatter:")
				if info, err := c.vh.Index.NoteByPath(ctx, n.Path); err == nil {
					switch v := info.Frontmatter[key].(type) {
					case nil:
					case []any:
						for _, x := range v {
							keys = append(keys, fmt.Sprint(x))
						}
					default:
						keys = []string{fmt.Sprint(v)}
					}
				}
			}
			if len(keys) == 0 {
				keys = []string{"(none)"}
			}
			for _, k := range keys {
				groups[k] = append(groups[k], MocNote{Path: n.Path, Title: n.Title})
			}
			c.addCitation(Citation{Path: n.Path, Etag: n.Etag, Snippet: truncRunes(n.Title, 240)})
		}
		names := make([]string, 0, len(groups))
		for k := range groups {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			out.Groups = append(out.Groups, MocGroup{Name: k, Notes: groups[k]})
		}
	}
	var sb strings.Builder
	sb.WriteString("# Map of content\n")
	for _, g := range out.Groups {
		fmt.Fprintf(&sb, "\n## %s\n\n", g.Name)
		for _, n := range g.Notes {
			fmt.Fprintf(&sb, "- [[%s|%s]]\n", linkName(n.Path), n.Title)
		}
	}
	out.Markdown = sb.String()
	if in.WriteTo != "" {
		w, err := c.aiCreate(ctx, in.WriteTo, in.IfMatch, out.Markdown, in.Apply)
		if err != nil {
			return nil, err
		}
		out.Write = w
	}
	return out, nil
}

func (c *aiCall) topicGroups(ctx context.Context, in *AITocIn, out *AITocOut) error {
	var sb strings.Builder
	for _, n := range c.notes {
		head := []string{}
		for _, h := range n.Headings {
			head = append(head, h.Text)
		}
		fmt.Fprintf(&sb, "- path=%q etag=%q title=%q headings=%q\n", n.Path, n.Etag, n.Title, strings.Join(head, " | "))
	}
	schema := map[string]any{"type": "object", "required": []string{"groups"}, "properties": map[string]any{
		"groups": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"name", "paths"}, "properties": map[string]any{
			"name": map[string]any{"type": "string"}, "paths": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}}}}
	var res struct {
		Groups []struct {
			Name  string   `json:"name"`
			Paths []string `json:"paths"`
		} `json:"groups"`
	}
	sys := "You group notes of a personal knowledge vault into a few topics for a map of content. Use only the paths listed. Reply with one JSON object: {\"groups\": [{\"name\", \"paths\"}]}."
	if err := c.generate(ctx, "moc_groups", schema, sys, sb.String(), &res, false); err != nil {
		return err
	}
	placed := map[string]bool{}
	for _, g := range res.Groups {
		mg := MocGroup{Name: strings.TrimSpace(g.Name)}
		for _, p := range g.Paths {
			n := c.byPath[p]
			if n == nil {
				c.meta.warn("citation_invalid", p, "the model grouped %q, which is not in the scope", p)
				continue
			}
			placed[p] = true
			mg.Notes = append(mg.Notes, MocNote{Path: p, Title: n.Title})
			c.addCitation(Citation{Path: n.Path, Etag: n.Etag, Snippet: truncRunes(n.Title, 240)})
		}
		if len(mg.Notes) > 0 && mg.Name != "" {
			out.Groups = append(out.Groups, mg)
		}
	}
	var other []MocNote
	for _, n := range c.notes {
		if !placed[n.Path] {
			other = append(other, MocNote{Path: n.Path, Title: n.Title})
		}
	}
	if len(other) > 0 {
		out.Groups = append(out.Groups, MocGroup{Name: "Other", Notes: other})
	}
	return nil
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// --- ai_ask ------------------------------------------------------------------

// IDontKnow is ai_ask's answer when the vault does not support one.
const IDontKnow = "I don't know based on the indexed vault."

// AIAskIn is the input of ai_ask.
type AIAskIn struct {
	Question string `json:"question" jsonschema:"the question"`
	AIScope
	AIOpts
	History []ai.Message `json:"history,omitempty" jsonschema:"earlier turns (role user or assistant, content) for a follow-up question; loci keeps no conversation state"`
	Stream  bool         `json:"stream,omitempty" jsonschema:"stream progress (SSE on REST with Accept: text/event-stream, NDJSON on the CLI); the final result is the same"`
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

func aiAsk(ctx context.Context, env *Env, in *AIAskIn) (out *AIAskOut, err error) {
	out = &AIAskOut{FollowUps: []string{}, Retrieved: []RetrievedNote{}}
	c, err := beginAI(ctx, env, "ai_ask", in.Vault, true, &out.AIMeta)
	if err != nil {
		return nil, err
	}
	defer func() { c.finish(err) }()
	scope := in.AIScope
	if scope.empty() {
		scope.Query, scope.MaxNotes = in.Question, OrDefault(scope.MaxNotes, 8)
	}
	if err := c.resolve(ctx, &scope); err != nil {
		return nil, err
	}
	for _, n := range c.notes {
		out.Retrieved = append(out.Retrieved, RetrievedNote{Path: n.Path, Title: n.Title, Etag: n.Etag})
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
		bs, err := c.batches(c.notes, 4000)
		if err != nil {
			return err
		}
		if len(bs) > 1 {
			out.warn("scope_truncated", "", "the retrieved notes exceed the input budget; the first %d were used", len(bs[0]))
		}
		schema := map[string]any{"type": "object", "required": []string{"supported", "answer", "citations"}, "properties": map[string]any{
			"supported": map[string]any{"type": "boolean"}, "answer": map[string]any{"type": "string"},
			"confidence": map[string]any{"type": "number"}, "citations": citationsSchema(),
			"follow_ups": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}
		var hist strings.Builder
		for _, m := range in.History {
			fmt.Fprintf(&hist, "%s: %s\n", m.Role, m.Content)
		}
		user := render(bs[0])
		if hist.Len() > 0 {
			user += "Conversation so far:\n" + hist.String() + "\n"
		}
		user += "Question: " + in.Question
		sys := "You answer questions about a personal knowledge vault. " + groundingRules +
			` Shape: {"supported": bool, "answer": string, "confidence": 0-1, "citations": [...], "follow_ups": [string]}. If the notes do not contain the answer set supported=false.`
		var res struct {
			Supported  bool          `json:"supported"`
			Answer     string        `json:"answer"`
			Confidence float64       `json:"confidence"`
			Citations  []rawCitation `json:"citations"`
			FollowUps  []string      `json:"follow_ups"`
		}
		if err := c.generate(ctx, "answer", schema, sys, user, &res, true); err != nil {
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

func clamp01(f float64) float64 {
	if f < 0 {
		return 0
	}
	if f > 1 {
		return 1
	}
	return f
}

func groundingFailed(w []AIWarning) error {
	dropped := []string{}
	for _, x := range w {
		if x.Code == "citation_invalid" || x.Code == "citation_drift" {
			dropped = append(dropped, x.Code+": "+x.Message)
		}
	}
	return errs.New(errs.CodeAIGrounding, "no citation of the model survived verification against the vault, so nothing is returned (cite=true)").With("dropped", dropped)
}

// --- ai_summarize ------------------------------------------------------------

// AISummarizeIn is the input of ai_summarize.
type AISummarizeIn struct {
	AIScope
	AIOpts
	Style    string   `json:"style,omitempty" jsonschema:"neutral (default), bullets, executive or technical"`
	Length   string   `json:"length,omitempty" jsonschema:"short, medium (default) or long"`
	Include  []string `json:"include,omitempty" jsonschema:"parts to produce: tldr, key_points, open_questions, outline (default all)"`
	Language string   `json:"language,omitempty" jsonschema:"output language (default: the notes' language)"`
	Stream   bool     `json:"stream,omitempty" jsonschema:"stream progress (SSE on REST with Accept: text/event-stream, NDJSON on the CLI); the final result is the same"`
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

func aiSummarize(ctx context.Context, env *Env, in *AISummarizeIn) (out *AISummarizeOut, err error) {
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
		bs, err := c.batches(c.notes, 4000)
		if err != nil {
			return err
		}
		target := map[string]string{"short": "about 50 words", "medium": "about 150 words", "long": "about 450 words"}[orStr(in.Length, "medium")]
		sys := "You summarize notes of a personal knowledge vault. " + groundingRules +
			fmt.Sprintf(` Style: %s. Length: %s overall. Every key point must carry at least one citation. Shape: {"tldr", "key_points": [{"text", "citations"}], "open_questions": [string], "outline": [string]}.`, orStr(in.Style, "neutral"), target)
		if in.Language != "" {
			sys += " Write in language: " + in.Language + "."
		}
		var parts []summaryPart
		for _, b := range bs {
			var p summaryPart
			if err := c.generate(ctx, "summary", summarySchema, sys, render(b), &p, len(bs) == 1); err != nil {
				return err
			}
			parts = append(parts, p)
		}
		final := parts[0]
		if len(parts) > 1 {
			// Reduce: merge the partial summaries; key points keep the
			// citations of their map step.
			out.warn("map_reduce", "", "the scope exceeded the input budget: summarized in %d parts and merged", len(parts))
			var sb strings.Builder
			for i, p := range parts {
				fmt.Fprintf(&sb, "Part %d TLDR: %s\nOpen questions: %s\nOutline: %s\n\n", i+1, p.TLDR, strings.Join(p.OpenQuestions, "; "), strings.Join(p.Outline, "; "))
			}
			reduceSchema := map[string]any{"type": "object", "required": []string{"tldr"}, "properties": map[string]any{
				"tldr": map[string]any{"type": "string"}, "open_questions": summarySchema["properties"].(map[string]any)["open_questions"], "outline": summarySchema["properties"].(map[string]any)["outline"]}}
			var r summaryPart
			if err := c.generate(ctx, "summary_reduce", reduceSchema, "Merge these partial summaries of one set of notes into one. Reply with one JSON object {\"tldr\", \"open_questions\", \"outline\"}.", sb.String(), &r, true); err != nil {
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
