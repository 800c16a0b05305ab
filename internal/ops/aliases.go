package ops

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
)

// Alias is a parameter name that agents written against another tool's
// documentation send (the "seed" documents loci follows: the Logseq skill,
// AILSS, the indx AI runtime). The decoder rewrites it to loci's canonical
// field before validation, so the advertised JSON Schemas keep loci's names
// only; docs/tools.md lists each operation's aliases.
type Alias struct {
	// Name is the alias as callers send it.
	Name string
	// Canonical is loci's field it maps to ("" when the alias carries no
	// field of its own: it is accepted and dropped, or refused for values
	// loci cannot honour).
	Canonical string
	// Within is the array field whose items take the alias ("patches":
	// each patch); "" is the top level of the input.
	Within string
	// Type is the JSON type the alias takes: string, boolean, object or
	// array (the CLI's hidden alias flags follow it).
	Type string
	// Seed names the document the alias comes from.
	Seed string
	// Note says how the value is converted, when it is not copied as is.
	Note string
	// convert turns the alias's value into canonical fields; nil copies
	// the value to Canonical.
	convert func(v any) (map[string]any, error)
}

// Seed documents aliases come from.
const (
	SeedLogseq = "Logseq skill"
	SeedAILSS  = "AILSS"
	SeedIndx   = "indx AI runtime"
)

// aliasRule attaches an alias to the operations listed, or, when ops is
// empty, to every operation whose input has the canonical field.
type aliasRule struct {
	ops []string
	Alias
}

// seedAliases is the table of every alias, in the order docs/tools.md
// lists them.
var seedAliases = []aliasRule{
	{ops: []string{"get_page", "update_page", "delete_page"}, Alias: Alias{Name: "page_name", Type: "string", Canonical: "name", Seed: SeedLogseq}},
	{ops: []string{"create_block"}, Alias: Alias{Name: "page_name", Type: "string", Canonical: "page", Seed: SeedLogseq}},
	{ops: []string{"get_block", "update_block", "delete_block", "move_block"}, Alias: Alias{Name: "block_uuid", Type: "string", Canonical: "uuid", Seed: SeedLogseq}},
	{ops: []string{"get_block"}, Alias: Alias{Name: "include_children", Type: "boolean", Canonical: "depth", Seed: SeedLogseq,
		Note:    "true is loci's default (every level of children); false becomes depth 1 (direct children only: loci always returns the block's first level)",
		convert: boolTo("depth", nil, 1)}},
	{ops: []string{"get_page"}, Alias: Alias{Name: "include_blocks", Type: "boolean", Canonical: "depth", Seed: SeedLogseq,
		Note:    "true is loci's default (the whole block tree); false becomes depth 1 (top-level blocks only: loci always returns them)",
		convert: boolTo("depth", nil, 1)}},
	{ops: []string{"search_notes"}, Alias: Alias{Name: "include_blocks", Type: "boolean", Canonical: "group_by", Seed: SeedLogseq,
		Note:    `true becomes group_by "section" (one result per section; a Logseq block's uuid is in block_uuid); false is the default, one result per note`,
		convert: boolTo("group_by", "section", nil)}},
	{ops: []string{"update_block"}, Alias: Alias{Name: "replace_content", Type: "boolean", Seed: SeedLogseq,
		Note:    "true is what loci always does (content replaces the block's text) and is dropped; false is refused, since loci has no append mode for a block's text",
		convert: refuseFalse("replace_content", "update_block always replaces the block's text with content; to add text, pass the old text with the addition, or create_block a child")}},
	{ops: []string{"delete_page"}, Alias: Alias{Name: "force", Type: "boolean", Seed: SeedLogseq,
		Note: "accepted and dropped: delete_page always moves the page to .trash/ (undo restores it) and warns about pages that still link to it",
		convert: func(v any) (map[string]any, error) {
			if _, ok := v.(bool); !ok {
				return nil, errs.New(errs.CodeInvalidInput, "force must be a boolean").With("field", "force")
			}
			return nil, nil
		}}},
	{Alias: Alias{Name: "reindex_after_apply", Type: "boolean", Canonical: "reindex", Seed: SeedAILSS}},
	{ops: []string{"relocate_note"}, Alias: Alias{Name: "overwrite", Type: "boolean", Seed: SeedAILSS,
		Note:    "false (the default in both) is dropped; true is refused: relocate_note never replaces an existing note",
		convert: refuseTrue("overwrite", "relocate_note never replaces an existing note; delete_note the target first (it stays undoable), then relocate")}},
	{ops: []string{"edit_note"}, Alias: Alias{Name: "lines", Type: "array", Canonical: "content", Within: "patches", Seed: SeedAILSS,
		Note:    "a list of lines, joined with newlines into content (a string is taken as is)",
		convert: linesToContent}},
	{ops: []string{"ai_metadata", "ai_tag"}, Alias: Alias{Name: "apply_mode", Type: "string", Canonical: "mode", Seed: SeedIndx}},
	{ops: []string{"ai_metadata"}, Alias: Alias{Name: "key", Type: "string", Canonical: "name", Within: "fields", Seed: SeedIndx}},
	{Alias: Alias{Name: "scope", Type: "object", Canonical: "paths, glob, tag, query, max_notes, note, include_linked", Seed: SeedIndx,
		Note:    `an object {kind, ...} flattened into loci's scope fields: paths {paths}, glob {path_glob → glob}, tag {tag}, query {q → query, limit → max_notes}, note {path → note, include_linked}; mode and filters of a query scope are refused`,
		convert: scopeToFields}},
}

// attachAliases sets op.Aliases from the table: an alias applies where
// the operation has its canonical field and no field of the alias's name.
func attachAliases(op *Op) {
	props := op.InputSchema.Properties
	for _, r := range seedAliases {
		if len(r.ops) > 0 && !slices.Contains(r.ops, op.Name) {
			continue
		}
		if _, clash := props[r.Name]; clash && r.Within == "" {
			continue
		}
		if len(r.ops) == 0 {
			// Generic rules need every canonical field.
			ok := true
			for _, c := range strings.Split(r.Canonical, ", ") {
				if _, has := props[c]; !has {
					ok = false
				}
			}
			if !ok {
				continue
			}
		}
		op.Aliases = append(op.Aliases, r.Alias)
	}
}

// applyAliases rewrites the aliases of one input object (m) to canonical
// fields. A canonical field also given by the caller must carry the same
// value, or the call fails with validation_failed naming both.
func (op *Op) applyAliases(m map[string]any) (changed bool, err error) {
	if changed, err = rewrite(m, op.Aliases, ""); err != nil {
		return false, err
	}
	within := map[string]bool{}
	for _, a := range op.Aliases {
		if a.Within != "" {
			within[a.Within] = true
		}
	}
	for field := range within {
		items, ok := m[field].([]any)
		if !ok {
			continue
		}
		for i, it := range items {
			if obj, ok := it.(map[string]any); ok {
				c, err := rewrite(obj, op.Aliases, field)
				if err != nil {
					e := errs.As(err)
					e.Message = fmt.Sprintf("%s[%d]: %s", field, i, e.Message)
					return false, e
				}
				changed = changed || c
			}
		}
	}
	return changed, nil
}

func rewrite(m map[string]any, aliases []Alias, within string) (bool, error) {
	set := map[string]string{} // canonical field → the alias that set it
	var present []Alias
	for _, a := range aliases {
		if a.Within == within {
			if _, ok := m[a.Name]; ok {
				present = append(present, a)
			}
		}
	}
	sort.Slice(present, func(i, j int) bool { return present[i].Name < present[j].Name })
	for _, a := range present {
		v := m[a.Name]
		delete(m, a.Name)
		var fields map[string]any
		if a.convert != nil {
			f, err := a.convert(v)
			if err != nil {
				return false, err
			}
			fields = f
		} else {
			fields = map[string]any{a.Canonical: v}
		}
		names := make([]string, 0, len(fields))
		for k := range fields {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			nv := fields[k]
			old, given := m[k]
			if given && !reflect.DeepEqual(old, nv) {
				by := set[k]
				if by == "" {
					by = k
				}
				return false, errs.New(errs.CodeInvalidInput, "%s (an alias of %s) and %s disagree; pass one of them", a.Name, k, by).
					With("alias", a.Name).With("field", k)
			}
			m[k] = nv
			if set[k] == "" {
				set[k] = a.Name
			}
		}
	}
	return len(present) > 0, nil
}

// boolTo converts a boolean alias: true sets field to onTrue, false to
// onFalse (nil: nothing).
func boolTo(field string, onTrue, onFalse any) func(v any) (map[string]any, error) {
	return func(v any) (map[string]any, error) {
		b, ok := v.(bool)
		if !ok {
			return nil, errs.New(errs.CodeInvalidInput, "expected a boolean, got %s", jsonText(v))
		}
		out := onFalse
		if b {
			out = onTrue
		}
		if out == nil {
			return nil, nil
		}
		if n, isInt := out.(int); isInt {
			out = float64(n) // as JSON decodes numbers
		}
		return map[string]any{field: out}, nil
	}
}

func refuseFalse(name, why string) func(v any) (map[string]any, error) {
	return refuseWhen(name, false, why)
}

func refuseTrue(name, why string) func(v any) (map[string]any, error) {
	return refuseWhen(name, true, why)
}

func refuseWhen(name string, bad bool, why string) func(v any) (map[string]any, error) {
	return func(v any) (map[string]any, error) {
		b, ok := v.(bool)
		if !ok {
			return nil, errs.New(errs.CodeInvalidInput, "%s must be a boolean", name).With("field", name)
		}
		if b == bad {
			return nil, errs.New(errs.CodeInvalidInput, "%s: %v is not supported: %s", name, b, why).With("field", name)
		}
		return nil, nil
	}
}

func linesToContent(v any) (map[string]any, error) {
	switch t := v.(type) {
	case string:
		return map[string]any{"content": t}, nil
	case []any:
		parts := make([]string, len(t))
		for i, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, errs.New(errs.CodeInvalidInput, "lines must be a list of strings").With("field", "lines")
			}
			parts[i] = s
		}
		return map[string]any{"content": strings.Join(parts, "\n")}, nil
	}
	return nil, errs.New(errs.CodeInvalidInput, "lines must be a list of strings").With("field", "lines")
}

// scopeKinds maps each indx scope kind to its fields: the indx name → loci's.
var scopeKinds = map[string]map[string]string{
	"paths": {"paths": "paths"},
	"glob":  {"path_glob": "glob", "glob": "glob"},
	"tag":   {"tag": "tag"},
	"query": {"q": "query", "query": "query", "limit": "max_notes"},
	"note":  {"path": "note", "note": "note", "include_linked": "include_linked"},
}

func scopeToFields(v any) (map[string]any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errs.New(errs.CodeInvalidInput, `scope must be an object {"kind": ...}`).With("field", "scope")
	}
	kind, _ := obj["kind"].(string)
	fields, ok := scopeKinds[kind]
	if !ok {
		return nil, errs.New(errs.CodeInvalidInput, "scope kind %s is not one of paths, glob, tag, query, note", jsonText(obj["kind"])).With("field", "scope.kind")
	}
	out := map[string]any{}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "kind" {
			continue
		}
		to, ok := fields[k]
		if !ok {
			return nil, errs.New(errs.CodeInvalidInput, "scope kind %s does not take %s", kind, k).With("field", "scope."+k)
		}
		if prev, dup := out[to]; dup && !reflect.DeepEqual(prev, obj[k]) {
			return nil, errs.New(errs.CodeInvalidInput, "scope gives %s twice with different values", to).With("field", "scope."+k)
		}
		out[to] = obj[k]
	}
	return out, nil
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
