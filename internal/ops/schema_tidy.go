package ops

import (
	"encoding/json"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// Go slices are nullable, so schema inference types them ["null","array"].
// That is legal JSON Schema but not portable: clients that map tool schemas
// onto a single-type dialect (Gemini's function declarations, for one) drop
// or reject such tools, and the MCP Inspector's --strict check warns about
// every one. loci's contract is simpler: arrays are arrays. tidySchema
// rewrites the types, and NormalizeOutput turns any null the handler left in
// an array-typed place into [] so that outputs always match their schema.

// tidySchema makes every ["null","array"] type a plain "array", recursively;
// with input set, every ["null",T] becomes T (an optional input is omitted,
// not sent as null; Go pointers such as reindex *bool keep "absent" distinct
// from false). In outputs, an optional property typed ["null",T] (a pointer
// with omitempty, which encoding/json omits rather than writing null) becomes
// T too, and NormalizeOutput drops a null such a property might still carry.
// A subschema that accepts anything (a Go `any`, which infers to a bare
// `true`) becomes an explicit anyOf of the six JSON types: the same contract,
// but a schema object, which clients such as the MCP Inspector's --strict
// check require where a schema is expected.
func tidySchema(s *jsonschema.Schema, input bool) { tidy(s, input, false) }

func tidy(s *jsonschema.Schema, input, optional bool) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && (s.Types[0] == "null" || s.Types[1] == "null") {
		other := s.Types[0]
		if other == "null" {
			other = s.Types[1]
		}
		if other == "array" || input || optional {
			s.Types = nil
			s.Type = other
		}
	}
	anyValue(&s.Items)
	tidy(s.Items, input, false)
	tidy(s.AdditionalProperties, input, false)
	for name, p := range s.Properties {
		anyValue(&p)
		s.Properties[name] = p
		tidy(p, input, !slices.Contains(s.Required, name))
	}
	for _, list := range [][]*jsonschema.Schema{s.PrefixItems, s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			anyValue(&list[i])
			tidy(list[i], input, false)
		}
	}
	for _, d := range s.Defs {
		tidy(d, input, false)
	}
}

// anyValue replaces a schema that accepts any value (it marshals as a bare
// `true`) with an explicit anyOf of every JSON type.
func anyValue(p **jsonschema.Schema) {
	if *p == nil || !reflect.DeepEqual(**p, jsonschema.Schema{}) {
		return
	}
	var branches []*jsonschema.Schema
	for _, t := range []string{"string", "number", "boolean", "object", "array", "null"} {
		branches = append(branches, &jsonschema.Schema{Type: t})
	}
	*p = &jsonschema.Schema{AnyOf: branches}
}

// NormalizeOutput encodes an operation's output as JSON in which every
// array-typed value (per the op's output schema) is an array, never null.
func (op *Op) NormalizeOutput(out any) ([]byte, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	if !fillArrays(&v, op.OutputSchema) {
		return b, nil
	}
	return json.Marshal(v)
}

// fillArrays replaces nulls at array-typed places; it reports whether it
// changed anything.
func fillArrays(v *any, s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	if *v == nil {
		if s.Type == "array" {
			*v = []any{}
			return true
		}
		return false
	}
	changed := false
	switch x := (*v).(type) {
	case map[string]any:
		for k, p := range s.Properties {
			if e, ok := x[k]; ok && e == nil && p != nil && p.Type != "" && p.Type != "null" && !slices.Contains(s.Required, k) {
				delete(x, k) // an optional property the schema types as non-null
				changed = true
				continue
			}
			if e, ok := x[k]; ok {
				if fillArrays(&e, p) {
					x[k] = e
					changed = true
				}
			}
		}
		if s.AdditionalProperties != nil {
			for k, e := range x {
				if _, named := s.Properties[k]; named {
					continue
				}
				if fillArrays(&e, s.AdditionalProperties) {
					x[k] = e
					changed = true
				}
			}
		}
	case []any:
		for i := range x {
			if fillArrays(&x[i], s.Items) {
				changed = true
			}
		}
	}
	return changed
}
