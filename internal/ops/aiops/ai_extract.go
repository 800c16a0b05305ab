package aiops

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

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
		if err := noteedit.CheckKey(in.Key); err != nil {
			return errs.New(errs.CodeInvalidInput, "key %q is not a frontmatter key: %s", in.Key, errs.As(err).Message).With("key", in.Key)
		}
	default:
		return errs.New(errs.CodeInvalidInput, "destination must be json or frontmatter")
	}
	return in.AIScope.validate()
}

// writes reports whether the call writes: only apply with destination
// frontmatter does (destination json only returns the data).
func (in *AIExtractIn) writes() bool { return in.Apply && in.Destination == "frontmatter" }

// Extracted is the data of one note.
type Extracted struct {
	Path      string           `json:"path" jsonschema:"the note"`
	Etag      string           `json:"etag" jsonschema:"the version read"`
	Data      any              `json:"data" jsonschema:"the extracted data, valid against the schema"`
	Citations []Citation       `json:"citations" jsonschema:"evidence"`
	Write     *ops.WriteResult `json:"write,omitempty" jsonschema:"destination frontmatter: the change (a preview unless apply)"`
}

// AIExtractOut is the output of ai_extract.
type AIExtractOut struct {
	AIMeta
	Records []Extracted `json:"records" jsonschema:"one record per note with data"`
}

// AIExtract is the ai_extract operation.
func AIExtract() ops.Def[AIExtractIn, AIExtractOut] {
	return ops.Def[AIExtractIn, AIExtractOut]{
		Name:  "ai_extract",
		Title: "Extract structured data",
		Description: "Extract data matching a caller-supplied JSON Schema (draft 2020-12; an invalid schema, an unknown type name included, is ai_schema_invalid before any model call) from each note of a scope, with citations. " +
			"An array item that fails the schema is dropped and the rest of its record kept; a record that still fails is dropped (extract_invalid both). destination json returns them; destination frontmatter writes each under key (preview unless apply=true).",
		Annotations: ops.Annotations{Idempotent: true},
		CLI:         ops.CLI{Use: "ai extract"},
		Errors:      append(append([]string{}, aiApplyErrors...), errs.CodeAISchemaInvalid),
		Example:     `{"glob": "People/**", "schema": {"type": "object", "properties": {"name": {"type": "string"}, "role": {"type": "string"}}, "required": ["name"]}}`,
		Toolset:     ops.ToolsetAI,
		Handler:     idempotentAI[AIExtractIn, AIExtractOut]("ai_extract", aiExtract),
	}
}

func aiExtract(ctx context.Context, env *ops.Env, in *AIExtractIn) (out *AIExtractOut, err error) {
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
	if in.writes() { // destination json writes nothing
		if err := c.requireWrites(); err != nil {
			return nil, err
		}
	}
	if err := c.resolve(ctx, &in.AIScope); err != nil {
		return nil, err
	}
	err = cached(ctx, c, in, in.useCache(), out, func() error {
		schema := map[string]any{"type": "object", "required": []string{"records"}, "properties": map[string]any{
			"records": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"path", "data"}, "properties": map[string]any{
				"path": map[string]any{"type": "string"}, "data": map[string]any{}, "citations": citationsSchema()}}}}}
		us, _ := json.Marshal(in.Schema)
		sys := "You extract structured data from notes. For each note with relevant content return data valid against this JSON Schema: " + string(us) + ". "
		if in.Instructions != "" {
			sys += "Instructions: " + in.Instructions + ". "
		}
		sys += groundingRules + ` Shape: {"records": [{"path", "data", "citations"}]}.`
		bs, err := c.batches(c.notes, sys)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, b := range bs {
			var res struct {
				Records []struct {
					Path      string          `json:"path"`
					Data      json.RawMessage `json:"data"`
					Citations []rawCitation   `json:"citations"`
				} `json:"records"`
			}
			if err := c.generate(ctx, "extract", schema, sys, render(b), &res, nil); err != nil {
				return err
			}
			for _, r := range res.Records {
				n := c.byPath[r.Path]
				if n == nil {
					out.warn("citation_invalid", r.Path, "data extracted for %q, which is not in the scope", r.Path)
					continue
				}
				if seen[n.Path] {
					// One record per note: a second one would be a second
					// write of the same key, refused as the note changed.
					out.warn("extract_invalid", n.Path, "dropped a second record for %s: one record per note, the first is kept", n.Path)
					continue
				}
				data, err := validData(user, r.Data)
				if err != nil {
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
				for _, d := range data.dropped {
					out.warn("extract_invalid", n.Path, "kept the record of %s without an item that fails the schema: %s", n.Path, d)
				}
				seen[n.Path] = true
				out.Records = append(out.Records, Extracted{Path: n.Path, Etag: n.Etag, Data: data.value, Citations: cits})
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
			r.Write = c.patchEach(ctx, r.Path, r.Etag, []noteedit.Patch{{Op: "set_frontmatter", Key: in.Key, Value: r.Data}}, in.Apply)
		}
	}
	return out, nil
}

// extracted is a record's data once valid, with the items dropped to make
// it so.
type extracted struct {
	value   any
	dropped []string
}

// validData validates a record's data against the user's schema; data
// that fails only because of array items that fail their items schema
// keeps the rest (the dropped items listed); anything else fails with the
// first error.
func validData(user *jsonschema.Resolved, raw json.RawMessage) (extracted, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return extracted{}, err
	}
	err := user.Validate(v)
	if err == nil {
		return extracted{value: v}, nil
	}
	var dropped []string
	pruned := pruneItems(user.Schema(), user.Schema(), v, "", &dropped)
	if len(dropped) == 0 || user.Validate(pruned) != nil {
		return extracted{}, err
	}
	return extracted{value: pruned, dropped: dropped}, nil
}
