package aiops

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// FieldSpec describes one frontmatter field ai_metadata fills.
type FieldSpec struct {
	Name        string   `json:"name" jsonschema:"the frontmatter key"`
	Type        string   `json:"type" jsonschema:"string, number, boolean, date (YYYY-MM-DD), datetime (RFC 3339), list (of strings) or enum"`
	Description string   `json:"description,omitempty" jsonschema:"what the field means, for the model"`
	Enum        []string `json:"enum,omitempty" jsonschema:"enum: the allowed values"`
	Pattern     string   `json:"pattern,omitempty" jsonschema:"string, list items: a regular expression the value must match"`
	Min         *float64 `json:"min,omitempty" jsonschema:"number: minimum; list: fewest items (a shorter list is dropped)"`
	Max         *float64 `json:"max,omitempty" jsonschema:"number: maximum; list: most items (a longer list keeps its first max items)"`
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
		// The name becomes a frontmatter key: refused now, not once the
		// model has been paid.
		if err := noteedit.CheckKey(f.Name); err != nil {
			return errs.New(errs.CodeInvalidInput, "field %q: not a frontmatter key: %s", f.Name, errs.As(err).Message).With("field", f.Name)
		}
		if f.Type == "enum" && len(f.Enum) == 0 {
			return errs.New(errs.CodeInvalidInput, "field %s: enum needs enum values", f.Name)
		}
		if f.Pattern != "" {
			if _, err := regexp.Compile(f.Pattern); err != nil {
				return errs.New(errs.CodeInvalidInput, "field %s: bad pattern: %v", f.Name, err)
			}
		}
		if err := f.checkBounds(); err != nil {
			return err
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
	Path   string           `json:"path" jsonschema:"the note"`
	Etag   string           `json:"etag" jsonschema:"the version read"`
	Fields []FieldValue     `json:"fields" jsonschema:"validated values"`
	Write  *ops.WriteResult `json:"write,omitempty" jsonschema:"the change (a preview unless apply)"`
}

// AIMetadataOut is the output of ai_metadata.
type AIMetadataOut struct {
	AIMeta
	Notes []NoteMetadata `json:"notes" jsonschema:"one entry per note"`
}

// AIMetadata is the ai_metadata operation.
func AIMetadata() ops.Def[AIMetadataIn, AIMetadataOut] {
	return ops.Def[AIMetadataIn, AIMetadataOut]{
		Name:  "ai_metadata",
		Title: "Fill frontmatter",
		Description: "Fill typed frontmatter fields (string, number, boolean, date, datetime, list, enum; pattern, min/max, default, required) for the notes of a scope from their content. " +
			"Values are re-validated (metadata_invalid drops them) and need a citation. Each note gets a preview diff; apply=true writes them (set_missing, overwrite or merge) through the safe-write pipeline.",
		Annotations: ops.Annotations{Idempotent: true},
		CLI:         ops.CLI{Use: "ai metadata"},
		Errors:      aiApplyErrors,
		Example:     `{"paths": ["Projects/Project Atlas.md"], "fields": [{"name": "status", "type": "enum", "enum": ["active", "done", "paused"]}]}`,
		Toolset:     ops.ToolsetAI,
		Handler:     idempotentAI[AIMetadataIn, AIMetadataOut]("ai_metadata", aiMetadata),
	}
}

// checkBounds checks min and max: for a number any bounds with min <= max,
// for a list counts of items; other types take none.
func (f FieldSpec) checkBounds() error {
	if f.Min == nil && f.Max == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return errs.New(errs.CodeInvalidInput, "field %s: "+format, append([]any{f.Name}, args...)...).With("field", f.Name)
	}
	switch f.Type {
	case "number":
	case "list":
		for _, b := range []*float64{f.Min, f.Max} {
			if b != nil && (*b < 0 || *b != math.Trunc(*b)) {
				return bad("a list's min and max count items: whole numbers from 0, not %v", *b)
			}
		}
	default:
		return bad("min and max apply to number and list fields, not %s", f.Type)
	}
	if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
		return bad("min %v is over max %v", *f.Min, *f.Max)
	}
	return nil
}

// checkField validates (and normalizes) a value against its spec; notes
// say what was dropped from a value that is kept (list items that fail the
// pattern, items over max).
func checkField(f FieldSpec, v any) (any, []string, error) {
	if f.Type == "list" {
		return checkList(f, v)
	}
	x, err := checkScalar(f, v)
	return x, nil, err
}

// checkList keeps the string items that match the pattern, then the
// first max of them; fewer than min (or none left of a non-empty list)
// fails the field.
func checkList(f FieldSpec, v any) (any, []string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, nil, fmt.Errorf("not a list")
	}
	var notes []string
	out := []any{}
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			notes = append(notes, fmt.Sprintf("dropped the item %v of %s: list items must be strings", x, f.Name))
			continue
		}
		if f.Pattern != "" && !regexp.MustCompile(f.Pattern).MatchString(s) {
			notes = append(notes, fmt.Sprintf("dropped the item %q of %s: it does not match %s", s, f.Name, f.Pattern))
			continue
		}
		out = append(out, s)
	}
	if len(l) > 0 && len(out) == 0 {
		return nil, nil, fmt.Errorf("no item is valid: %s", strings.Join(notes, "; "))
	}
	if f.Max != nil && len(out) > int(*f.Max) {
		notes = append(notes, fmt.Sprintf("kept the first %d of the %d items of %s (max %d)", int(*f.Max), len(out), f.Name, int(*f.Max)))
		out = out[:int(*f.Max)]
	}
	if f.Min != nil && len(out) < int(*f.Min) {
		return nil, nil, fmt.Errorf("%d valid items, fewer than min %d", len(out), int(*f.Min))
	}
	return out, notes, nil
}

// checkScalar validates (and normalizes) a value of a type other than list.
func checkScalar(f FieldSpec, v any) (any, error) {
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
	}
	return nil, fmt.Errorf("unknown type")
}

func aiMetadata(ctx context.Context, env *ops.Env, in *AIMetadataIn) (out *AIMetadataOut, err error) {
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
		spec, _ := json.Marshal(in.Fields)
		schema := map[string]any{"type": "object", "required": []string{"notes"}, "properties": map[string]any{
			"notes": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"path", "fields"}, "properties": map[string]any{
				"path": map[string]any{"type": "string"},
				"fields": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"name"}, "properties": map[string]any{
					"name": map[string]any{"type": "string"}, "value": map[string]any{}, "citations": citationsSchema()}}}}}}}}
		sys := "You fill frontmatter fields of notes from their content. Field specs: " + string(spec) + ". Omit a field the note does not support. " + groundingRules +
			` Shape: {"notes": [{"path", "fields": [{"name", "value", "citations"}]}]}.`
		bs, err := c.batches(c.notes, sys)
		if err != nil {
			return err
		}
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
			if err := c.generate(ctx, "metadata", schema, sys, render(b), &res, nil); err != nil {
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
					v, notes, err := checkField(*spec, rf.Value)
					if err != nil {
						out.warn("metadata_invalid", n.Path, "dropped %s: %v", rf.Name, err)
						continue
					}
					for _, note := range notes {
						out.warn("metadata_invalid", n.Path, "%s", note)
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
					if v, _, err := checkField(f, f.Default); err == nil {
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
		nm.Write = c.patchEach(ctx, nm.Path, nm.Etag, patches, in.Apply)
	}
	return out, nil
}
