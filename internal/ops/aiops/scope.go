package aiops

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/vault"
)

// AIScope selects the notes an AI operation reads. Fields combine: the
// scope is the union of what each selects.
type AIScope struct {
	Paths         []string `json:"paths,omitempty" jsonschema:"vault-relative paths (or note references) of the notes"`
	Glob          string   `json:"glob,omitempty" jsonschema:"every note whose path matches this doublestar glob"`
	Tag           string   `json:"tag,omitempty" jsonschema:"every note carrying this tag (nested tags included)"`
	Query         string   `json:"query,omitempty" jsonschema:"the best notes for this search query (hybrid retrieval when vectors exist, else lexical)"`
	Note          string   `json:"note,omitempty" jsonschema:"one note (path or reference), optionally with the notes it links to (include_linked)"`
	IncludeLinked int      `json:"include_linked,omitempty" jsonschema:"with note: follow its links this many hops out (0-3)"`
	MaxNotes      int      `json:"max_notes,omitempty" jsonschema:"at most this many notes in the scope (default 20, at most 200)"`
}

func (s *AIScope) empty() bool {
	return len(s.Paths) == 0 && s.Glob == "" && s.Tag == "" && s.Query == "" && s.Note == ""
}

func (s *AIScope) validate() error {
	if s.IncludeLinked < 0 || s.IncludeLinked > 3 {
		return errs.New(errs.CodeInvalidInput, "include_linked must be between 0 and 3")
	}
	if s.IncludeLinked > 0 && s.Note == "" {
		return errs.New(errs.CodeInvalidInput, "include_linked needs note")
	}
	if err := ops.CheckGlob(s.Glob); err != nil {
		return err
	}
	return ops.CheckLimit(s.MaxNotes, 200)
}

// scopeNote is a note of the resolved scope, as read from disk.
type scopeNote struct {
	Path     string
	Title    string
	Etag     string
	Lines    []string
	Headings []markdown.Heading
}

// resolve turns a scope into notes, dropping the ones the globs exclude.
func (c *aiCall) resolve(ctx context.Context, s *AIScope) error {
	ix := c.vh.Index
	set := map[string]bool{}
	var order []string
	add := func(p string) {
		if !set[p] {
			set[p] = true
			order = append(order, p)
		}
	}
	for _, p := range s.Paths {
		rel, _, _, err := ops.NotePath(ctx, c.vh, "", p)
		if err != nil {
			return err
		}
		add(rel)
	}
	if s.Glob != "" || s.Tag != "" {
		notes, err := c.env.ListNotes(ctx, c.vh, false)
		if err != nil {
			return err
		}
		tagged := map[string]bool{}
		if s.Tag != "" {
			paths, err := ix.TaggedPaths(ctx, s.Tag)
			if err != nil {
				return err
			}
			for _, p := range paths {
				tagged[p] = true
			}
		}
		for _, n := range notes {
			if (s.Glob == "" || ops.GlobMatch(s.Glob, n.Path)) && (s.Tag == "" || tagged[n.Path]) {
				add(n.Path)
			}
		}
	}
	if s.Query != "" {
		res, err := ops.Search(ctx, c.vh, search.Query{Text: s.Query, Limit: ops.OrDefault(s.MaxNotes, 20)})
		if err != nil {
			return err
		}
		for _, r := range res.Results {
			add(r.Path)
		}
	}
	if s.Note != "" {
		rel, _, _, err := ops.NotePath(ctx, c.vh, "", s.Note)
		if err != nil {
			return err
		}
		add(rel)
		frontier := []string{rel}
		for hop := 0; hop < s.IncludeLinked; hop++ {
			var next []string
			for _, p := range frontier {
				linked, err := c.linkedPaths(ctx, p)
				if err != nil {
					return err
				}
				for _, q := range linked {
					if !set[q] {
						next = append(next, q)
					}
					add(q)
				}
			}
			frontier = next
		}
	}
	max := ops.OrDefault(s.MaxNotes, 20)
	var excluded []string
	var kept []string
	for _, p := range order {
		if !c.fence.Allows(p) {
			continue // never read, never named: as if not there
		}
		if !c.rt.Settings.PathAllowed(p) {
			excluded = append(excluded, p)
			continue
		}
		kept = append(kept, p)
	}
	if len(excluded) > 0 {
		c.meta.warn("globs_excluded", "", "%d note(s) excluded by the AI allow/deny globs were not read", len(excluded))
	}
	if len(kept) > max {
		c.meta.warn("scope_truncated", "", "the scope has %d notes; only the first %d were read (max_notes)", len(kept), max)
		kept = kept[:max]
	}
	// Order: paths as given, then glob/tag matches by path, then query hits
	// by rank, then the note and its links (deterministic for a vault state).
	for _, p := range kept {
		n, err := c.readNote(p)
		if err != nil {
			return err
		}
		c.notes = append(c.notes, n)
		c.byPath[p] = n
		c.meta.Scope = append(c.meta.Scope, p)
	}
	return nil
}

// linkedPaths lists, by path, the notes rel links to (resolved links of
// every kind: links, embeds, typed links) that the caller may read.
func (c *aiCall) linkedPaths(ctx context.Context, rel string) ([]string, error) {
	l, err := c.vh.Index.LinksOf(ctx, rel)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, r := range slices.Concat(l.Outgoing, l.TypedOut, l.Embeds) {
		if r.Resolved != "" && c.fence.Allows(r.Resolved) {
			set[r.Resolved] = true
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

func (c *aiCall) readNote(rel string) (*scopeNote, error) {
	b, clean, err := ops.ReadFencedNote(c.fence, c.vh, rel)
	if err != nil {
		return nil, err
	}
	rel, etag := clean, vault.Etag(b)
	outline, journal := c.vh.Vault.LogseqFile(rel)
	doc := markdown.Parse(b, markdown.Options{Path: rel, Logseq: outline, Journal: journal})
	text := strings.ReplaceAll(strings.TrimPrefix(string(b), "\ufeff"), "\r\n", "\n")
	return &scopeNote{Path: rel, Title: doc.Title, Etag: etag, Lines: strings.Split(text, "\n"), Headings: doc.Headings}, nil
}

// render prints notes for the prompt: a header with path and etag, then
// numbered lines, so the model can cite exact spans.
func render(notes []*scopeNote) string {
	var sb strings.Builder
	for _, n := range notes {
		fmt.Fprintf(&sb, "=== NOTE path=%q etag=%q title=%q\n", n.Path, n.Etag, n.Title)
		for i, l := range n.Lines {
			fmt.Fprintf(&sb, "%d| %s\n", i+1, l)
		}
		sb.WriteString("=== END NOTE\n\n")
	}
	return sb.String()
}

// inputBudget is what one request may hold: ai.max_input_tokens less an
// eighth of it kept for the estimate's error (token counts are estimated,
// not measured), so a local model's small context (2,048 tokens) still
// takes notes.
func (c *aiCall) inputBudget() int {
	max := c.rt.Settings.MaxInputTokens
	return max - max/8
}

// tokens estimates the tokens of the parts of a prompt.
func tokens(parts ...string) int {
	n := 0
	for _, p := range parts {
		n += ai.EstimateTokens(p)
	}
	return n
}

// tooLarge is ai_input_too_large for a prompt of about n tokens.
func (c *aiCall) tooLarge(what string, n int) error {
	max := c.rt.Settings.MaxInputTokens
	return errs.New(errs.CodeAIInputTooLarge, "%s is about %d tokens, over the input budget of %d (ai.max_input_tokens %d, an eighth kept for the estimate's error)", what, n, c.inputBudget(), max).
		With("tokens", n).With("budget", c.inputBudget()).With("max_input_tokens", max)
}

// fitting returns how many of items, in order, fit the input budget
// after the fixed parts of the prompt.
func (c *aiCall) fitting(items []string, fixed ...string) int {
	left := c.inputBudget() - tokens(fixed...)
	for i, it := range items {
		if left -= tokens(it); left < 0 {
			return i
		}
	}
	return len(items)
}

// batches splits notes so that each batch, with the rest of the prompt
// (fixed: the system prompt, question, history, instructions), fits the
// input budget (inputBudget). A fixed part that leaves no room, or one
// note alone over what is left, is ai_input_too_large.
func (c *aiCall) batches(notes []*scopeNote, fixed ...string) ([][]*scopeNote, error) {
	max := c.rt.Settings.MaxInputTokens
	prompt := tokens(fixed...)
	budget := c.inputBudget() - prompt
	if budget <= 0 {
		return nil, errs.New(errs.CodeAIInputTooLarge, "the prompt without the notes (instructions, question, history) is about %d tokens, "+
			"which leaves no room for notes in the input budget of %d tokens (ai.max_input_tokens, an eighth of it kept for the estimate's error)", prompt, max).
			With("tokens", prompt).With("max_input_tokens", max)
	}
	var out [][]*scopeNote
	var cur []*scopeNote
	size := 0
	for _, n := range notes {
		t := ai.EstimateTokens(render([]*scopeNote{n}))
		if t > budget {
			return nil, errs.New(errs.CodeAIInputTooLarge, "%s is about %d tokens, over the %d left for notes in the input budget of %d (ai.max_input_tokens)", n.Path, t, budget, max).
				With("path", n.Path).With("tokens", t).With("budget", budget).With("max_input_tokens", max)
		}
		if size+t > budget && len(cur) > 0 {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, n)
		size += t
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out, nil
}
