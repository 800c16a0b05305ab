package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/search"
)

// --- ai_relate ---------------------------------------------------------------

// relationLabels are the relation kinds of ai_relate.
var relationLabels = []string{"extends", "summarizes", "cites", "contradicts", "same_topic", "precedes", "depends_on", "duplicates"}

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
	if err := EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	return CheckLimit(in.Limit, 30)
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

func aiRelate(ctx context.Context, env *Env, in *AIRelateIn) (out *AIRelateOut, err error) {
	out = &AIRelateOut{Relations: []Relation{}}
	// The note is resolved first: a path outside the vault is path_denied
	// whether or not AI is configured.
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	rel, _, _, err := NotePath(ctx, vh, in.Path, in.Note)
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
	limit := OrDefault(in.Limit, 8)
	scores := map[string]float64{}
	var order []string
	if _, sim, err := SimilarNotes(ctx, vh, rel, limit*2, ""); err == nil {
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
	if res, err := SearcherFor(c.vh).Search(ctx, search.Query{Text: search.ClipQuery(self.Title), Limit: limit, Mode: "lexical"}); err == nil {
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
	rows, err := c.vh.Index.DB.QueryContext(ctx, `SELECT DISTINCT d.path FROM links l JOIN notes s ON s.id = l.src_id JOIN notes d ON d.id = l.dst_id WHERE s.path = ?`, rel)
	if err == nil {
		for rows.Next() {
			var p string
			rows.Scan(&p)
			linked[p] = true
		}
		rows.Close()
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
	if err := c.generate(ctx, "relations", schema, sys, render(c.notes), &res, false); err != nil {
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

// --- ai_tag ------------------------------------------------------------------

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
	Path  string         `json:"path" jsonschema:"the note"`
	Etag  string         `json:"etag" jsonschema:"the version read"`
	Tags  []SuggestedTag `json:"tags" jsonschema:"proposed tags"`
	Write *WriteResult   `json:"write,omitempty" jsonschema:"the change (a preview unless apply)"`
}

// AITagOut is the output of ai_tag.
type AITagOut struct {
	AIMeta
	Notes []NoteTags `json:"notes" jsonschema:"one entry per note"`
}

var tagSpace = regexp.MustCompile(`\s+`)

// aiTagShape is the stricter shape of a generated tag: letters, digits,
// - _ and / (nesting).
var aiTagShape = regexp.MustCompile(`^[\p{L}\p{N}_\-/]+$`)

func aiTag(ctx context.Context, env *Env, in *AITagIn) (out *AITagOut, err error) {
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
	if tc, err := c.vh.Index.Tags(ctx); err == nil {
		for i, t := range tc {
			vocab[strings.ToLower(t.Tag)] = t.Tag
			if i < 200 {
				vlist = append(vlist, t.Tag)
			}
		}
	}
	err = cached(ctx, c, in, in.useCache(), out, func() error {
		bs, err := c.batches(c.notes, 4000)
		if err != nil {
			return err
		}
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
		min := in.MinConfidence
		if min == 0 {
			min = 0.5
		}
		max := OrDefault(in.MaxPerNote, 5)
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
			if err := c.generate(ctx, "tags", schema, sys, render(b), &res, false); err != nil {
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
					t = tagSpace.ReplaceAllString(t, "-")
					if in.Namespace != "" && !strings.HasPrefix(strings.ToLower(t), strings.ToLower(in.Namespace)+"/") {
						t = strings.Trim(in.Namespace, "/#") + "/" + t
					}
					if v, ok := vocab[strings.ToLower(t)]; ok {
						t = v
					}
					switch {
					case noteedit.ValidTag(t) != nil || !aiTagShape.MatchString(t) || strings.Contains(t, "//") || strings.HasPrefix(t, "/") || strings.HasSuffix(t, "/"):
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
		w, err := c.aiPatch(ctx, nt.Path, nt.Etag, []noteedit.Patch{p}, in.Apply)
		if err != nil {
			return nil, err
		}
		nt.Write = w
	}
	return out, nil
}

// --- ai_metadata -------------------------------------------------------------

// FieldSpec describes one frontmatter field ai_metadata fills.
type FieldSpec struct {
	Name        string   `json:"name" jsonschema:"the frontmatter key"`
	Type        string   `json:"type" jsonschema:"string, number, boolean, date (YYYY-MM-DD), datetime (RFC 3339), list (of strings) or enum"`
	Description string   `json:"description,omitempty" jsonschema:"what the field means, for the model"`
	Enum        []string `json:"enum,omitempty" jsonschema:"enum: the allowed values"`
	Pattern     string   `json:"pattern,omitempty" jsonschema:"string, list items: a regular expression the value must match"`
	Min         *float64 `json:"min,omitempty" jsonschema:"number: minimum"`
	Max         *float64 `json:"max,omitempty" jsonschema:"number: maximum"`
	Default     any      `json:"default,omitempty" jsonschema:"value used when the notes do not give one"`
	Required    bool     `json:"required,omitempty" jsonschema:"warn (metadata_missing) when no value is found"`
}

// AIMetadataIn is the input of ai_metadata.
type AIMetadataIn struct {
	AIScope
	AIOpts
	AIApply
	Fields []FieldSpec `json:"fields" jsonschema:"the fields to fill"`
	Mode   string      `json:"mode,omitempty" jsonschema:"with apply: set_missing (default: only keys the note lacks), overwrite, or merge (lists are united, missing scalars set)"`
}

// Validate checks the field specs.
func (in *AIMetadataIn) Validate() error {
	if in.AIScope.empty() {
		return errs.New(errs.CodeInvalidInput, "a scope is required: paths, glob, tag, query or note")
	}
	if len(in.Fields) == 0 {
		return errs.New(errs.CodeInvalidInput, "fields is required")
	}
	for _, f := range in.Fields {
		switch f.Type {
		case "string", "number", "boolean", "date", "datetime", "list", "enum":
		default:
			return errs.New(errs.CodeInvalidInput, "field %s: unknown type %q", f.Name, f.Type)
		}
		if f.Name == "" {
			return errs.New(errs.CodeInvalidInput, "every field needs a name")
		}
		if f.Type == "enum" && len(f.Enum) == 0 {
			return errs.New(errs.CodeInvalidInput, "field %s: enum needs enum values", f.Name)
		}
		if f.Pattern != "" {
			if _, err := regexp.Compile(f.Pattern); err != nil {
				return errs.New(errs.CodeInvalidInput, "field %s: bad pattern: %v", f.Name, err)
			}
		}
	}
	if in.Mode != "" && in.Mode != "set_missing" && in.Mode != "overwrite" && in.Mode != "merge" {
		return errs.New(errs.CodeInvalidInput, "mode must be set_missing, overwrite or merge")
	}
	return in.AIScope.validate()
}

// FieldValue is a generated value.
type FieldValue struct {
	Name      string     `json:"name" jsonschema:"the key"`
	Value     any        `json:"value" jsonschema:"the validated value"`
	Source    string     `json:"source" jsonschema:"model or default"`
	Citations []Citation `json:"citations" jsonschema:"evidence"`
}

// NoteMetadata is ai_metadata's result for one note.
type NoteMetadata struct {
	Path   string       `json:"path" jsonschema:"the note"`
	Etag   string       `json:"etag" jsonschema:"the version read"`
	Fields []FieldValue `json:"fields" jsonschema:"validated values"`
	Write  *WriteResult `json:"write,omitempty" jsonschema:"the change (a preview unless apply)"`
}

// AIMetadataOut is the output of ai_metadata.
type AIMetadataOut struct {
	AIMeta
	Notes []NoteMetadata `json:"notes" jsonschema:"one entry per note"`
}

// checkField validates (and normalizes) a value against its spec.
func checkField(f FieldSpec, v any) (any, error) {
	str := func() (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("not a string")
		}
		return strings.TrimSpace(s), nil
	}
	match := func(s string) error {
		if f.Pattern != "" && !regexp.MustCompile(f.Pattern).MatchString(s) {
			return fmt.Errorf("%q does not match %s", s, f.Pattern)
		}
		return nil
	}
	switch f.Type {
	case "string":
		s, err := str()
		if err == nil {
			err = match(s)
		}
		return s, err
	case "number":
		n, ok := v.(float64)
		if !ok {
			return nil, fmt.Errorf("not a number")
		}
		if (f.Min != nil && n < *f.Min) || (f.Max != nil && n > *f.Max) {
			return nil, fmt.Errorf("%v is out of range", n)
		}
		return n, nil
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("not a boolean")
		}
		return b, nil
	case "date", "datetime":
		s, err := str()
		if err != nil {
			return nil, err
		}
		layout := "2006-01-02"
		if f.Type == "datetime" {
			layout = time.RFC3339
		}
		if _, err := time.Parse(layout, s); err != nil {
			return nil, fmt.Errorf("%q is not a %s", s, f.Type)
		}
		return s, nil
	case "enum":
		s, err := str()
		if err == nil && !contains(f.Enum, s) {
			err = fmt.Errorf("%q is not one of %s", s, strings.Join(f.Enum, ", "))
		}
		return s, err
	case "list":
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("not a list")
		}
		out := []any{}
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("list items must be strings")
			}
			if err := match(s); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown type")
}

func aiMetadata(ctx context.Context, env *Env, in *AIMetadataIn) (out *AIMetadataOut, err error) {
	out = &AIMetadataOut{Notes: []NoteMetadata{}}
	c, err := beginAI(ctx, env, "ai_metadata", in.Vault, true, &out.AIMeta)
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
	err = cached(ctx, c, in, in.useCache(), out, func() error {
		bs, err := c.batches(c.notes, 4000)
		if err != nil {
			return err
		}
		spec, _ := json.Marshal(in.Fields)
		schema := map[string]any{"type": "object", "required": []string{"notes"}, "properties": map[string]any{
			"notes": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"path", "fields"}, "properties": map[string]any{
				"path": map[string]any{"type": "string"},
				"fields": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"name"}, "properties": map[string]any{
					"name": map[string]any{"type": "string"}, "value": map[string]any{}, "citations": citationsSchema()}}}}}}}}
		sys := "You fill frontmatter fields of notes from their content. Field specs: " + string(spec) + ". Omit a field the note does not support. " + groundingRules +
			` Shape: {"notes": [{"path", "fields": [{"name", "value", "citations"}]}]}.`
		got := map[string]*NoteMetadata{}
		for _, b := range bs {
			var res struct {
				Notes []struct {
					Path   string `json:"path"`
					Fields []struct {
						Name      string        `json:"name"`
						Value     any           `json:"value"`
						Citations []rawCitation `json:"citations"`
					} `json:"fields"`
				} `json:"notes"`
			}
			if err := c.generate(ctx, "metadata", schema, sys, render(b), &res, false); err != nil {
				return err
			}
			for _, rn := range res.Notes {
				n := c.byPath[rn.Path]
				if n == nil {
					out.warn("citation_invalid", rn.Path, "values proposed for %q, which is not in the scope", rn.Path)
					continue
				}
				nm := &NoteMetadata{Path: n.Path, Etag: n.Etag, Fields: []FieldValue{}}
				got[n.Path] = nm
				for _, rf := range rn.Fields {
					var spec *FieldSpec
					for i := range in.Fields {
						if in.Fields[i].Name == rf.Name {
							spec = &in.Fields[i]
						}
					}
					if spec == nil || rf.Value == nil {
						continue
					}
					v, err := checkField(*spec, rf.Value)
					if err != nil {
						out.warn("metadata_invalid", n.Path, "dropped %s: %v", rf.Name, err)
						continue
					}
					cits := c.verify(rf.Citations)
					if len(cits) == 0 && in.cite() {
						out.warn("ungrounded_dropped", n.Path, "dropped %s: no verified citation", rf.Name)
						continue
					}
					if cits == nil {
						cits = []Citation{}
					}
					nm.Fields = append(nm.Fields, FieldValue{Name: rf.Name, Value: v, Source: "model", Citations: cits})
				}
			}
		}
		for _, n := range c.notes {
			nm := got[n.Path]
			if nm == nil {
				nm = &NoteMetadata{Path: n.Path, Etag: n.Etag, Fields: []FieldValue{}}
			}
			for _, f := range in.Fields {
				have := false
				for _, fv := range nm.Fields {
					have = have || fv.Name == f.Name
				}
				if have {
					continue
				}
				if f.Default != nil {
					if v, err := checkField(f, f.Default); err == nil {
						nm.Fields = append(nm.Fields, FieldValue{Name: f.Name, Value: v, Source: "default", Citations: []Citation{}})
						continue
					}
				}
				if f.Required {
					out.warn("metadata_missing", n.Path, "no value found for required field %s", f.Name)
				}
			}
			out.Notes = append(out.Notes, *nm)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	mode := orStr(in.Mode, "set_missing")
	for i := range out.Notes {
		nm := &out.Notes[i]
		n := c.byPath[nm.Path]
		info, _ := c.vh.Index.NoteByPath(ctx, nm.Path)
		var patches []noteedit.Patch
		for _, fv := range nm.Fields {
			var cur any
			if info != nil {
				cur = info.Frontmatter[fv.Name]
			}
			val := fv.Value
			switch mode {
			case "set_missing":
				if cur != nil {
					continue
				}
			case "merge":
				if l, ok := cur.([]any); ok {
					if nl, ok := val.([]any); ok {
						merged := append([]any{}, l...)
						for _, x := range nl {
							if !noteedit.ContainsAnyFold(merged, fmt.Sprint(x)) {
								merged = append(merged, x)
							}
						}
						val = merged
					}
				} else if cur != nil {
					continue
				}
			}
			patches = append(patches, noteedit.Patch{Op: "set_frontmatter", Key: fv.Name, Value: val})
		}
		if len(patches) == 0 || n == nil {
			continue
		}
		w, err := c.aiPatch(ctx, nm.Path, nm.Etag, patches, in.Apply)
		if err != nil {
			return nil, err
		}
		nm.Write = w
	}
	return out, nil
}

// --- ai_extract --------------------------------------------------------------

// AIExtractIn is the input of ai_extract.
type AIExtractIn struct {
	AIScope
	AIOpts
	AIApply
	Schema       map[string]any `json:"schema" jsonschema:"a JSON Schema (draft 2020-12) the extracted data of each note must satisfy; checked before any model call"`
	Instructions string         `json:"instructions,omitempty" jsonschema:"what to extract, in words"`
	Destination  string         `json:"destination,omitempty" jsonschema:"json (default: only returned) or frontmatter (written under key, preview unless apply)"`
	Key          string         `json:"key,omitempty" jsonschema:"destination frontmatter: the frontmatter key"`
}

// Validate checks the destination.
func (in *AIExtractIn) Validate() error {
	if in.AIScope.empty() {
		return errs.New(errs.CodeInvalidInput, "a scope is required: paths, glob, tag, query or note")
	}
	if in.Schema == nil {
		return errs.New(errs.CodeInvalidInput, "schema is required")
	}
	switch in.Destination {
	case "", "json":
	case "frontmatter":
		if in.Key == "" {
			return errs.New(errs.CodeInvalidInput, "destination frontmatter needs key")
		}
	default:
		return errs.New(errs.CodeInvalidInput, "destination must be json or frontmatter")
	}
	return in.AIScope.validate()
}

// Extracted is the data of one note.
type Extracted struct {
	Path      string       `json:"path" jsonschema:"the note"`
	Etag      string       `json:"etag" jsonschema:"the version read"`
	Data      any          `json:"data" jsonschema:"the extracted data, valid against the schema"`
	Citations []Citation   `json:"citations" jsonschema:"evidence"`
	Write     *WriteResult `json:"write,omitempty" jsonschema:"destination frontmatter: the change (a preview unless apply)"`
}

// AIExtractOut is the output of ai_extract.
type AIExtractOut struct {
	AIMeta
	Records []Extracted `json:"records" jsonschema:"one record per note with data"`
}

func aiExtract(ctx context.Context, env *Env, in *AIExtractIn) (out *AIExtractOut, err error) {
	out = &AIExtractOut{Records: []Extracted{}}
	c, err := beginAI(ctx, env, "ai_extract", in.Vault, true, &out.AIMeta)
	if err != nil {
		return nil, err
	}
	defer func() { c.finish(err) }()
	user, err := compileSchema(in.Schema)
	if err != nil {
		return nil, err
	}
	if in.Apply {
		if err := c.requireWrites(); err != nil {
			return nil, err
		}
	}
	if err := c.resolve(ctx, &in.AIScope); err != nil {
		return nil, err
	}
	err = cached(ctx, c, in, in.useCache(), out, func() error {
		bs, err := c.batches(c.notes, 4000)
		if err != nil {
			return err
		}
		schema := map[string]any{"type": "object", "required": []string{"records"}, "properties": map[string]any{
			"records": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"path", "data"}, "properties": map[string]any{
				"path": map[string]any{"type": "string"}, "data": map[string]any{}, "citations": citationsSchema()}}}}}
		us, _ := json.Marshal(in.Schema)
		sys := "You extract structured data from notes. For each note with relevant content return data valid against this JSON Schema: " + string(us) + ". "
		if in.Instructions != "" {
			sys += "Instructions: " + in.Instructions + ". "
		}
		sys += groundingRules + ` Shape: {"records": [{"path", "data", "citations"}]}.`
		for _, b := range bs {
			var res struct {
				Records []struct {
					Path      string          `json:"path"`
					Data      json.RawMessage `json:"data"`
					Citations []rawCitation   `json:"citations"`
				} `json:"records"`
			}
			if err := c.generate(ctx, "extract", schema, sys, render(b), &res, false); err != nil {
				return err
			}
			for _, r := range res.Records {
				n := c.byPath[r.Path]
				if n == nil {
					out.warn("citation_invalid", r.Path, "data extracted for %q, which is not in the scope", r.Path)
					continue
				}
				if err := validateResolved(user, r.Data); err != nil {
					out.warn("extract_invalid", n.Path, "dropped the record of %s: %v", n.Path, err)
					continue
				}
				cits := c.verify(r.Citations)
				if len(cits) == 0 && in.cite() {
					out.warn("ungrounded_dropped", n.Path, "dropped the record of %s: no verified citation", n.Path)
					continue
				}
				if cits == nil {
					cits = []Citation{}
				}
				var data any
				json.Unmarshal(r.Data, &data)
				out.Records = append(out.Records, Extracted{Path: n.Path, Etag: n.Etag, Data: data, Citations: cits})
			}
		}
		sort.SliceStable(out.Records, func(i, j int) bool { return out.Records[i].Path < out.Records[j].Path })
		if in.cite() && len(out.Records) == 0 && len(out.Citations) == 0 && hasWarning(out.Warnings, "ungrounded_dropped", "citation_invalid", "citation_drift") {
			return groundingFailed(out.Warnings)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if in.Destination == "frontmatter" {
		for i := range out.Records {
			r := &out.Records[i]
			w, err := c.aiPatch(ctx, r.Path, r.Etag, []noteedit.Patch{{Op: "set_frontmatter", Key: in.Key, Value: r.Data}}, in.Apply)
			if err != nil {
				return nil, err
			}
			r.Write = w
		}
	}
	return out, nil
}

func hasWarning(ws []AIWarning, codes ...string) bool {
	for _, w := range ws {
		if contains(codes, w.Code) {
			return true
		}
	}
	return false
}
