package aiops

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/errs"
)

// compileSchema turns a JSON Schema (draft 2020-12) given as JSON into a
// resolved schema; a schema that does not compile is ai_schema_invalid.
func compileSchema(raw any) (*jsonschema.Resolved, error) {
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, errs.New(errs.CodeAISchemaInvalid, "the schema is not JSON: %v", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, errs.New(errs.CodeAISchemaInvalid, "the schema is not a valid JSON Schema: %v", err).With("errors", []string{err.Error()})
	}
	// The validator accepts any type name (and then fails every value);
	// the meta-schema allows only the seven.
	var generic any
	json.Unmarshal(b, &generic)
	if bad := typeNames(generic, ""); len(bad) > 0 {
		return nil, errs.New(errs.CodeAISchemaInvalid, "the schema is not a valid JSON Schema: %s", strings.Join(bad, "; ")).With("errors", bad)
	}
	if bad := schemaShape(b, generic); len(bad) > 0 {
		return nil, errs.New(errs.CodeAISchemaInvalid, "the schema is not accepted: %s", strings.Join(bad, "; ")).With("errors", bad)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return nil, errs.New(errs.CodeAISchemaInvalid, "the schema is not a valid JSON Schema: %v", err).With("errors", []string{err.Error()})
	}
	return res, nil
}

// Bounds on a caller's schema: the validator recurses through it (and
// through $refs) for every value, so its size, its depth and its
// references are bounded before it is used. A schema of extraction fields
// needs none of what is refused.
const (
	maxSchemaBytes = 64 << 10
	maxSchemaDepth = 32
)

// schemaShape lists what loci refuses in a caller's schema (decoded as
// generic JSON): more than maxSchemaBytes or maxSchemaDepth levels of
// nesting; a $ref other than "#/$defs/<name>" or "#/definitions/<name>"
// (so never the root, "#", whose recursion would not end); $dynamicRef,
// $recursiveRef and a nested $id (which would move what refs resolve
// against); and definitions that reach themselves through refs (a ->
// ... -> a), which a value would follow without end.
func schemaShape(b []byte, s any) []string {
	var bad []string
	if len(b) > maxSchemaBytes {
		return []string{fmt.Sprintf("it is %d bytes; at most %d are accepted", len(b), maxSchemaBytes)}
	}
	defRefs := map[string][]string{} // "$defs/a" -> the definitions its subtree refers to
	var walk func(v any, at string, depth int, owner string)
	walk = func(v any, at string, depth int, owner string) {
		if depth > maxSchemaDepth {
			bad = append(bad, fmt.Sprintf("%s: nested more than %d levels deep", at, maxSchemaDepth))
			return
		}
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s/%d", at, i), depth+1, owner)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				e, ptr := x[k], at+"/"+pointerEscape(k)
				switch k {
				case "$ref":
					ref, _ := e.(string)
					target := ""
					for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
						if name, ok := strings.CutPrefix(ref, prefix); ok && name != "" && !strings.Contains(name, "/") {
							target = strings.TrimPrefix(prefix, "#/") + name
						}
					}
					if target == "" {
						bad = append(bad, fmt.Sprintf("%s: %q: only references to #/$defs/<name> or #/definitions/<name> are accepted", ptr, ref))
					} else if owner != "" {
						defRefs[owner] = append(defRefs[owner], target)
					}
					continue
				case "$dynamicRef", "$recursiveRef":
					bad = append(bad, fmt.Sprintf("%s: %s is not accepted", ptr, k))
					continue
				case "$id", "$anchor", "$dynamicAnchor":
					if at != "" || k != "$id" {
						bad = append(bad, fmt.Sprintf("%s: %s is not accepted inside a schema", ptr, k))
					}
					continue
				}
				o := owner
				if at == "" && (k == "$defs" || k == "definitions") {
					if m, ok := e.(map[string]any); ok {
						names := make([]string, 0, len(m))
						for n := range m {
							names = append(names, n)
						}
						slices.Sort(names)
						for _, n := range names {
							walk(m[n], ptr+"/"+pointerEscape(n), depth+2, k+"/"+n)
						}
						continue
					}
				}
				walk(e, ptr, depth+1, o)
			}
		}
	}
	walk(s, "", 0, "")
	// A definition that reaches itself through references.
	state := map[string]int{} // 0 new, 1 on the path, 2 done
	var visit func(d string) bool
	visit = func(d string) bool {
		switch state[d] {
		case 1:
			return true
		case 2:
			return false
		}
		state[d] = 1
		for _, t := range defRefs[d] {
			if visit(t) {
				return true
			}
		}
		state[d] = 2
		return false
	}
	defs := make([]string, 0, len(defRefs))
	for d := range defRefs {
		defs = append(defs, d)
	}
	slices.Sort(defs)
	for _, d := range defs {
		if visit(d) {
			bad = append(bad, fmt.Sprintf("/%s: refers back to itself through $ref (recursive schemas are not accepted)", d))
			break
		}
	}
	return bad
}

// validateAgainst validates JSON data against a schema given as a map.
func validateAgainst(schema map[string]any, raw json.RawMessage) error {
	res, err := compileSchema(schema)
	if err != nil {
		return err
	}
	return validateResolved(res, raw)
}

func validateResolved(res *jsonschema.Resolved, raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	return res.Validate(v)
}

// jsonTypes are the type names of JSON Schema.
var jsonTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

// Keywords whose value is a schema, a list of schemas, or a map of them.
var (
	subSchema  = []string{"additionalProperties", "propertyNames", "contains", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema", "items"}
	subSchemas = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaMaps = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)

// typeNames lists, by JSON Pointer, every "type" of a schema (given as
// decoded JSON) that names no JSON type.
func typeNames(s any, at string) []string {
	m, ok := s.(map[string]any)
	if !ok {
		return nil // true, false, or a value the decoder already refused
	}
	var bad []string
	check := func(v any, ptr string) {
		if name, ok := v.(string); ok && !slices.Contains(jsonTypes, name) {
			bad = append(bad, fmt.Sprintf("%s: unknown type %q (use %s)", ptr, name, strings.Join(jsonTypes, ", ")))
		}
	}
	switch t := m["type"].(type) {
	case string:
		check(t, at+"/type")
	case []any:
		for i, x := range t {
			check(x, fmt.Sprintf("%s/type/%d", at, i))
		}
	}
	for _, k := range subSchema {
		if _, isList := m[k].([]any); !isList {
			bad = append(bad, typeNames(m[k], at+"/"+k)...)
		}
	}
	for _, k := range subSchemas {
		if l, ok := m[k].([]any); ok {
			for i, x := range l {
				bad = append(bad, typeNames(x, fmt.Sprintf("%s/%s/%d", at, k, i))...)
			}
		}
	}
	for _, k := range schemaMaps {
		if sm, ok := m[k].(map[string]any); ok {
			keys := make([]string, 0, len(sm))
			for name := range sm {
				keys = append(keys, name)
			}
			slices.Sort(keys)
			for _, name := range keys {
				bad = append(bad, typeNames(sm[name], at+"/"+k+"/"+pointerEscape(name))...)
			}
		}
	}
	return bad
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// pruneItems drops the array items of v that fail their items schema
// (after pruning inside them first), following properties and local
// $refs (#/$defs/..., #/definitions/...) from the root schema; dropped
// lists each by JSON Pointer with the reason. The caller validates the
// result as a whole again: what is left may still fail (minItems, a
// required property).
func pruneItems(root, s *jsonschema.Schema, v any, at string, dropped *[]string) any {
	for depth := 0; s != nil && s.Ref != "" && depth < 16; depth++ {
		s = localRef(root, s.Ref)
	}
	if s == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range s.Properties {
			if pv, ok := x[k]; ok {
				x[k] = pruneItems(root, sub, pv, at+"/"+pointerEscape(k), dropped)
			}
		}
		return x
	case []any:
		if s.Items == nil {
			return x
		}
		items, err := standalone(root, s.Items)
		if err != nil {
			return x
		}
		kept := make([]any, 0, len(x))
		for i, el := range x {
			ptr := fmt.Sprintf("%s/%d", at, i)
			el = pruneItems(root, s.Items, el, ptr, dropped)
			if err := items.Validate(el); err != nil {
				*dropped = append(*dropped, fmt.Sprintf("%s: %v", ptr, err))
				continue
			}
			kept = append(kept, el)
		}
		return kept
	}
	return v
}

// localRef resolves a reference into the root's $defs or definitions.
func localRef(root *jsonschema.Schema, ref string) *jsonschema.Schema {
	for prefix, defs := range map[string]map[string]*jsonschema.Schema{"#/$defs/": root.Defs, "#/definitions/": root.Definitions} {
		if name, ok := strings.CutPrefix(ref, prefix); ok && !strings.Contains(name, "/") {
			name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
			return defs[name]
		}
	}
	return nil
}

// standalone resolves a subschema on its own, with the root's
// definitions beside it so its local $refs still resolve.
func standalone(root, sub *jsonschema.Schema) (*jsonschema.Resolved, error) {
	c := sub.CloneSchemas()
	if c.Defs == nil && root.Defs != nil {
		c.Defs = map[string]*jsonschema.Schema{}
		for k, d := range root.Defs {
			c.Defs[k] = d.CloneSchemas()
		}
	}
	if c.Definitions == nil && root.Definitions != nil {
		c.Definitions = map[string]*jsonschema.Schema{}
		for k, d := range root.Definitions {
			c.Definitions[k] = d.CloneSchemas()
		}
	}
	return c.Resolve(nil)
}
