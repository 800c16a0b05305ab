package aiops

import (
	"encoding/json"

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
	res, err := s.Resolve(nil)
	if err != nil {
		return nil, errs.New(errs.CodeAISchemaInvalid, "the schema is not a valid JSON Schema: %v", err).With("errors", []string{err.Error()})
	}
	return res, nil
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
