package ops

import (
	"encoding/json"

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
// from false).
func tidySchema(s *jsonschema.Schema, input bool) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && (s.Types[0] == "null" || s.Types[1] == "null") {
		other := s.Types[0]
		if other == "null" {
			other = s.Types[1]
		}
		if other == "array" || input {
			s.Types = nil
			s.Type = other
		}
	}
	tidySchema(s.Items, input)
	tidySchema(s.AdditionalProperties, input)
	for _, p := range s.Properties {
		tidySchema(p, input)
	}
	for _, list := range [][]*jsonschema.Schema{s.PrefixItems, s.AllOf, s.AnyOf, s.OneOf} {
		for _, x := range list {
			tidySchema(x, input)
		}
	}
	for _, d := range s.Defs {
		tidySchema(d, input)
	}
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
