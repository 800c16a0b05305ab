package aiops

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/search"
)

// AIRelateIn is the input of ai_relate.
type AIRelateIn struct {
	Path         string `json:"path,omitempty" jsonschema:"the note (vault-relative path; or use note)"`
	Note         string `json:"note,omitempty" jsonschema:"the note by reference (id, title, alias, file name); instead of path"`
	Limit        int    `json:"limit,omitempty" jsonschema:"number of neighbours, 1-30 (default 8)"`
	Heuristic    bool   `json:"heuristic,omitempty" jsonschema:"label with the deterministic heuristic even when a chat model is configured"`
	ProposeLinks bool   `json:"propose_links,omitempty" jsonschema:"also return draft edit_note patches that add links to the unlinked neighbours (never applied)"`
	AIOpts
}

// Validate checks the note and limit.
func (in *AIRelateIn) Validate() error {
	if err := ops.EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	return ops.CheckLimit(in.Limit, 30)
}

// Relation is one neighbour with its label.
type Relation struct {
	Path       string     `json:"path" jsonschema:"the neighbour"`
	Title      string     `json:"title" jsonschema:"its title"`
	Score      float64    `json:"score" jsonschema:"retrieval score (vector similarity, or fused rank for lexical)"`
	Label      string     `json:"label" jsonschema:"extends, summarizes, cites, contradicts, same_topic, precedes, depends_on or duplicates (from the note's point of view)"`
	Confidence float64    `json:"confidence" jsonschema:"0-1"`
	Rationale  string     `json:"rationale" jsonschema:"why"`
	Source     string     `json:"source" jsonschema:"model or heuristic"`
	Linked     bool       `json:"linked" jsonschema:"the note already links to it"`
	Citations  []Citation `json:"citations" jsonschema:"evidence (model labels)"`
}

// LinkDraft is a proposed change, never applied by ai_relate.
type LinkDraft struct {
	Path    string           `json:"path" jsonschema:"the note to edit"`
	IfMatch string           `json:"if_match" jsonschema:"its etag"`
	Patches []noteedit.Patch `json:"patches" jsonschema:"edit_note patches; pass them to edit_note to apply"`
}

// AIRelateOut is the output of ai_relate.
type AIRelateOut struct {
	AIMeta
	Path      string      `json:"path" jsonschema:"the note"`
	Relations []Relation  `json:"relations" jsonschema:"neighbours, best first"`
	Drafts    []LinkDraft `json:"drafts,omitempty" jsonschema:"with propose_links: draft patches"`
}

// AIRelate is the ai_relate operation.
func AIRelate() ops.Def[AIRelateIn, AIRelateOut] {
	return ops.Def[AIRelateIn, AIRelateOut]{
		Name:  "ai_relate",
		Title: "Relate a note",
		Description: "The notes related to a note (vector neighbours plus lexical matches), each labelled extends, summarizes, cites, contradicts, same_topic, precedes, depends_on or duplicates " +
			"with a confidence and rationale: by the chat model when one is configured (with citations), by a heuristic otherwise. propose_links returns draft edit_note patches; nothing is written.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "ai relate", Args: []string{"path"}},
		Errors:      append(append([]string{}, aiErrors...), errs.CodeEmbedUnavailable, errs.CodeEmbedMismatch),
		Example:     `{"path": "Projects/Project Atlas.md", "limit": 5, "propose_links": true}`,
		Toolset:     ops.ToolsetAI,
		Handler:     idempotentAI[AIRelateIn, AIRelateOut]("ai_relate", aiRelate),
	}
}

// relationLabels are the relation kinds of ai_relate.
var relationLabels = []string{"extends", "summarizes", "cites", "contradicts", "same_topic", "precedes", "depends_on", "duplicates"}

func aiRelate(ctx context.Context, env *ops.Env, in *AIRelateIn) (out *AIRelateOut, err error) {
	out = &AIRelateOut{Relations: []Relation{}}
	// The note is resolved first: a path outside the vault is path_denied
	// whether or not AI is configured.
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	rel, _, _, err := ops.NotePath(ctx, vh, in.Path, in.Note)
	if err != nil {
		return nil, err
	}
	c, err := beginAI(ctx, env, "ai_relate", in.Vault, false, &out.AIMeta)
	if err != nil {
		return nil, err
	}
	defer func() { c.finish(err) }()
	if !c.rt.Settings.PathAllowed(rel) {
		return nil, errs.New(errs.CodePathDenied, "%s is excluded by the AI globs", rel).With("path", rel)
	}
	out.Path = rel
	limit := ops.OrDefault(in.Limit, 8)
	scores := map[string]float64{}
	var order []string
	if _, sim, err := ops.SimilarNotes(ctx, vh, rel, limit*2, ""); err == nil {
		for _, n := range sim {
			if _, ok := scores[n.Path]; !ok {
				order = append(order, n.Path)
			}
			scores[n.Path] = n.Score
		}
	} else {
		out.warn("embeddings_unavailable", "", "no vectors for this note; neighbours come from lexical search only")
	}
	self, err := c.readNote(rel)
	if err != nil {
		return nil, err
	}
	if res, err := ops.Search(ctx, c.vh, search.Query{Text: search.ClipQuery(self.Title), Limit: limit, Mode: "lexical"}); err == nil {
		for i, r := range res.Results {
			if r.Path == rel {
				continue
			}
			if _, ok := scores[r.Path]; !ok {
				order = append(order, r.Path)
				scores[r.Path] = 0.5 / float64(i+1)
			}
		}
	}
	linked := map[string]bool{}
	outlinks, err := c.linkedPaths(ctx, rel)
	if err != nil {
		return nil, err
	}
	for _, p := range outlinks {
		linked[p] = true
	}
	paths := []string{rel}
	excluded := 0
	for _, p := range order {
		if len(paths) > limit {
			break
		}
		if !c.rt.Settings.PathAllowed(p) {
			excluded++
			continue
		}
		paths = append(paths, p)
	}
	if excluded > 0 {
		out.warn("globs_excluded", "", "%d neighbour(s) excluded by the AI allow/deny globs", excluded)
	}
	if err := c.resolve(ctx, &AIScope{Paths: paths, MaxNotes: len(paths)}); err != nil {
		return nil, err
	}
	for _, p := range paths[1:] {
		n := c.byPath[p]
		if n == nil {
			continue
		}
		r := Relation{Path: p, Title: n.Title, Score: scores[p], Linked: linked[p], Source: "heuristic", Citations: []Citation{}}
		switch {
		case r.Score >= 0.95:
			r.Label, r.Rationale = "duplicates", "nearly identical in meaning (similarity ≥ 0.95)"
		case r.Linked:
			r.Label, r.Rationale = "cites", "the note links to it"
		default:
			r.Label, r.Rationale = "same_topic", "close in meaning or wording"
		}
		r.Confidence = clamp01(r.Score)
		out.Relations = append(out.Relations, r)
	}
	if c.rt.HasChat() && !in.Heuristic && len(out.Relations) > 0 {
		err := cached(ctx, c, in, in.useCache(), out, func() error { return c.labelRelations(ctx, out) })
		if err != nil {
			return nil, err
		}
	} else if !c.rt.HasChat() {
		out.warn("chat_unavailable", "", "no chat model: labels come from a heuristic")
	}
	c.addCitation(Citation{Path: self.Path, Etag: self.Etag, Snippet: truncRunes(self.Title, 240)})
	if in.ProposeLinks {
		var patches []noteedit.Patch
		for _, r := range out.Relations {
			if !r.Linked {
				patches = append(patches, noteedit.Patch{Op: "insert_lines", Line: len(self.Lines) + 1, Content: fmt.Sprintf("- [[%s]] (%s)", linkName(r.Path), r.Label)})
			}
		}
		if len(patches) > 0 {
			out.Drafts = []LinkDraft{{Path: rel, IfMatch: self.Etag, Patches: patches}}
		}
	}
	return out, nil
}

func (c *aiCall) labelRelations(ctx context.Context, out *AIRelateOut) error {
	schema := map[string]any{"type": "object", "required": []string{"relations"}, "properties": map[string]any{
		"relations": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"path", "label"}, "properties": map[string]any{
			"path": map[string]any{"type": "string"}, "label": map[string]any{"type": "string", "enum": relationLabels},
			"confidence": map[string]any{"type": "number"}, "rationale": map[string]any{"type": "string"}, "citations": citationsSchema()}}}}}
	var res struct {
		Relations []struct {
			Path       string        `json:"path"`
			Label      string        `json:"label"`
			Confidence float64       `json:"confidence"`
			Rationale  string        `json:"rationale"`
			Citations  []rawCitation `json:"citations"`
		} `json:"relations"`
	}
	sys := fmt.Sprintf("You classify how the first note (%s) relates to each other note. Labels: %s. ", out.Path, strings.Join(relationLabels, ", ")) + groundingRules +
		` Shape: {"relations": [{"path", "label", "confidence", "rationale", "citations"}]}.`
	// The note first, then as many neighbours as fit the input budget; the
	// others keep their heuristic labels.
	bs, err := c.batches(c.notes, sys)
	if err != nil {
		return err
	}
	if len(bs) > 1 {
		out.warn("scope_truncated", "", "the note and its neighbours exceed the input budget: the model labelled the first %d neighbour(s), the others keep the heuristic label", len(bs[0])-1)
	}
	if err := c.generate(ctx, "relations", schema, sys, render(bs[0]), &res, nil); err != nil {
		return err
	}
	for _, lr := range res.Relations {
		for i := range out.Relations {
			r := &out.Relations[i]
			if r.Path != lr.Path {
				continue
			}
			if !contains(relationLabels, lr.Label) {
				break
			}
			cits := c.verify(lr.Citations)
			if len(cits) == 0 {
				out.warn("ungrounded_dropped", r.Path, "the model's label for %s had no verified citation; the heuristic label stays", r.Path)
				break
			}
			r.Label, r.Confidence, r.Rationale, r.Source, r.Citations = lr.Label, clamp01(lr.Confidence), lr.Rationale, "model", cits
		}
	}
	return nil
}
