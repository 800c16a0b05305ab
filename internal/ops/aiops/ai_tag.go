package aiops

import (
	"context"
	"regexp"
	"strings"
	"sync"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// AITagIn is the input of ai_tag.
type AITagIn struct {
	AIScope
	AIOpts
	AIApply
	Candidates    []string `json:"candidates,omitempty" jsonschema:"only these tags may be proposed"`
	Forbid        []string `json:"forbid,omitempty" jsonschema:"never propose these tags"`
	Namespace     string   `json:"namespace,omitempty" jsonschema:"put proposed tags under this namespace (ns/tag)"`
	MaxPerNote    int      `json:"max_per_note,omitempty" jsonschema:"at most this many tags per note, 1-20 (default 5)"`
	MinConfidence float64  `json:"min_confidence,omitempty" jsonschema:"drop tags under this confidence, 0-1 (default 0.5)"`
	Mode          string   `json:"mode,omitempty" jsonschema:"with apply: merge (default: add to the note's tags) or replace (the tags list becomes the proposal)"`
}

// Validate checks the bounds.
func (in *AITagIn) Validate() error {
	if in.AIScope.empty() {
		return errs.New(errs.CodeInvalidInput, "a scope is required: paths, glob, tag, query or note")
	}
	if in.MaxPerNote < 0 || in.MaxPerNote > 20 {
		return errs.New(errs.CodeInvalidInput, "max_per_note must be between 1 and 20")
	}
	if in.MinConfidence < 0 || in.MinConfidence > 1 {
		return errs.New(errs.CodeInvalidInput, "min_confidence must be between 0 and 1")
	}
	if in.Mode != "" && in.Mode != "merge" && in.Mode != "replace" {
		return errs.New(errs.CodeInvalidInput, "mode must be merge or replace")
	}
	return in.AIScope.validate()
}

// SuggestedTag is a proposed tag.
type SuggestedTag struct {
	Tag        string     `json:"tag" jsonschema:"the tag, normalized, without #"`
	Confidence float64    `json:"confidence" jsonschema:"0-1"`
	Existing   bool       `json:"existing" jsonschema:"the vault already uses this tag"`
	Rationale  string     `json:"rationale,omitempty" jsonschema:"why"`
	Citations  []Citation `json:"citations" jsonschema:"evidence"`
}

// NoteTags is ai_tag's result for one note.
type NoteTags struct {
	Path  string           `json:"path" jsonschema:"the note"`
	Etag  string           `json:"etag" jsonschema:"the version read"`
	Tags  []SuggestedTag   `json:"tags" jsonschema:"proposed tags"`
	Write *ops.WriteResult `json:"write,omitempty" jsonschema:"the change (a preview unless apply)"`
}

// AITagOut is the output of ai_tag.
type AITagOut struct {
	AIMeta
	Notes []NoteTags `json:"notes" jsonschema:"one entry per note"`
}

// AITag is the ai_tag operation.
func AITag() ops.Def[AITagIn, AITagOut] {
	return ops.Def[AITagIn, AITagOut]{
		Name:  "ai_tag",
		Title: "Suggest tags",
		Description: "Propose tags for the notes of a scope, biased toward the vault's existing tags, with confidence and citations; candidates, forbid, namespace, max_per_note and min_confidence constrain them, " +
			"invalid ones are dropped (tag_invalid, tag_below_threshold). Each note gets a preview diff; apply=true writes them (merge or replace) through the safe-write pipeline, guarded by the etag the model read.",
		Annotations: ops.Annotations{Idempotent: true},
		CLI:         ops.CLI{Use: "ai tag"},
		Errors:      aiApplyErrors,
		Example:     `{"paths": ["Ideas/Zettelkasten.md"], "max_per_note": 3}`,
		Toolset:     ops.ToolsetAI,
		Handler:     idempotentAI[AITagIn, AITagOut]("ai_tag", aiTag),
	}
}

var tagSpace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\s+`) })

// aiTagShape is the stricter shape of a generated tag: letters, digits,
// - _ and / (nesting).
var aiTagShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[\p{L}\p{N}_\-/]+$`) })

func aiTag(ctx context.Context, env *ops.Env, in *AITagIn) (out *AITagOut, err error) {
	out = &AITagOut{Notes: []NoteTags{}}
	c, err := beginAI(ctx, env, "ai_tag", in.Vault, true, &out.AIMeta)
	if err != nil {
		return nil, err
	}
	defer func() { c.finish(err) }()
	if in.Apply {
		if err := c.requireWrites(); err != nil {
			return nil, err
		}
	}
	if err := c.resolve(ctx, &in.AIScope); err != nil {
		return nil, err
	}
	vocab := map[string]string{}
	var vlist []string
	hidden, err := c.fence.Hidden(ctx, c.vh)
	if err != nil {
		return nil, err
	}
	// The vault's tags, from the notes the caller may read only.
	if tc, err := c.vh.Index.Tags(ctx, hidden...); err == nil {
		for i, t := range tc {
			vocab[strings.ToLower(t.Tag)] = t.Tag
			if i < 200 {
				vlist = append(vlist, t.Tag)
			}
		}
	}
	err = cached(ctx, c, in, in.useCache(), out, func() error {
		schema := map[string]any{"type": "object", "required": []string{"notes"}, "properties": map[string]any{
			"notes": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"path", "tags"}, "properties": map[string]any{
				"path": map[string]any{"type": "string"},
				"tags": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"tag"}, "properties": map[string]any{
					"tag": map[string]any{"type": "string"}, "confidence": map[string]any{"type": "number"}, "rationale": map[string]any{"type": "string"}, "citations": citationsSchema()}}}}}}}}
		sys := "You propose tags for notes. Prefer the vault's existing tags: " + strings.Join(vlist, ", ") + ". "
		if len(in.Candidates) > 0 {
			sys += "Only use these candidates: " + strings.Join(in.Candidates, ", ") + ". "
		}
		sys += groundingRules + ` Shape: {"notes": [{"path", "tags": [{"tag", "confidence", "rationale", "citations"}]}]}.`
		bs, err := c.batches(c.notes, sys)
		if err != nil {
			return err
		}
		min := in.MinConfidence
		if min == 0 {
			min = 0.5
		}
		max := ops.OrDefault(in.MaxPerNote, 5)
		got := map[string]*NoteTags{}
		for _, b := range bs {
			var res struct {
				Notes []struct {
					Path string `json:"path"`
					Tags []struct {
						Tag        string        `json:"tag"`
						Confidence float64       `json:"confidence"`
						Rationale  string        `json:"rationale"`
						Citations  []rawCitation `json:"citations"`
					} `json:"tags"`
				} `json:"notes"`
			}
			if err := c.generate(ctx, "tags", schema, sys, render(b), &res, nil); err != nil {
				return err
			}
			for _, rn := range res.Notes {
				n := c.byPath[rn.Path]
				if n == nil {
					out.warn("citation_invalid", rn.Path, "tags proposed for %q, which is not in the scope", rn.Path)
					continue
				}
				nt := got[n.Path]
				if nt == nil {
					nt = &NoteTags{Path: n.Path, Etag: n.Etag, Tags: []SuggestedTag{}}
					got[n.Path] = nt
				}
				for _, rt := range rn.Tags {
					t := strings.TrimPrefix(strings.TrimSpace(rt.Tag), "#")
					t = tagSpace().ReplaceAllString(t, "-")
					if in.Namespace != "" && !strings.HasPrefix(strings.ToLower(t), strings.ToLower(in.Namespace)+"/") {
						t = strings.Trim(in.Namespace, "/#") + "/" + t
					}
					if v, ok := vocab[strings.ToLower(t)]; ok {
						t = v
					}
					switch {
					case noteedit.ValidTag(t) != nil || !aiTagShape().MatchString(t) || strings.Contains(t, "//") || strings.HasPrefix(t, "/") || strings.HasSuffix(t, "/"):
						out.warn("tag_invalid", n.Path, "dropped %q: not a valid tag", rt.Tag)
						continue
					case noteedit.ContainsFold(in.Forbid, t) || (len(in.Candidates) > 0 && !noteedit.ContainsFold(in.Candidates, t)):
						out.warn("tag_invalid", n.Path, "dropped %q: forbidden or not a candidate", t)
						continue
					case rt.Confidence < min:
						out.warn("tag_below_threshold", n.Path, "dropped %q: confidence %.2f under %.2f", t, rt.Confidence, min)
						continue
					case len(nt.Tags) >= max:
						continue
					}
					dup := false
					for _, x := range nt.Tags {
						dup = dup || strings.EqualFold(x.Tag, t)
					}
					if dup {
						continue
					}
					cits := c.verify(rt.Citations)
					if len(cits) == 0 && in.cite() {
						out.warn("ungrounded_dropped", n.Path, "dropped %q: no verified citation", t)
						continue
					}
					if cits == nil {
						cits = []Citation{}
					}
					_, existing := vocab[strings.ToLower(t)]
					nt.Tags = append(nt.Tags, SuggestedTag{Tag: t, Confidence: clamp01(rt.Confidence), Existing: existing, Rationale: rt.Rationale, Citations: cits})
				}
			}
		}
		for _, n := range c.notes {
			if nt := got[n.Path]; nt != nil {
				out.Notes = append(out.Notes, *nt)
			}
		}
		if in.cite() && len(out.Citations) == 0 && len(c.notes) > 0 {
			return groundingFailed(out.Warnings)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out.Notes {
		nt := &out.Notes[i]
		if len(nt.Tags) == 0 {
			continue
		}
		tags := make([]string, len(nt.Tags))
		for j, t := range nt.Tags {
			tags[j] = t.Tag
		}
		p := noteedit.Patch{Op: "add_tags", Tags: tags}
		if in.Mode == "replace" {
			p = noteedit.Patch{Op: "set_frontmatter", Key: "tags", Value: noteedit.ToAny(tags)}
		}
		nt.Write = c.patchEach(ctx, nt.Path, nt.Etag, []noteedit.Patch{p}, in.Apply)
	}
	return out, nil
}
