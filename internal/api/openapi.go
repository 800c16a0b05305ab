package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// serveOpenAPI serves the OpenAPI document of the operations the
// request's principal may call (ops.Env.Permits), encoded once per set of
// operations.
func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	p := auth.From(r.Context())
	var key strings.Builder
	for _, op := range h.reg.List() {
		if h.env.Permits(p, op) == nil {
			key.WriteString(op.Name)
			key.WriteByte(',')
		}
	}
	h.openapiMu.Lock()
	b := h.openapi[key.String()]
	h.openapiMu.Unlock()
	if b == nil {
		var err error
		b, err = json.MarshalIndent(h.openAPIFor(p), "", "  ")
		if err != nil {
			h.log.Error("cannot encode the OpenAPI document", "err", err)
			WriteError(w, errs.New(errs.CodeInternal, "cannot encode the OpenAPI document"))
			return
		}
		h.openapiMu.Lock()
		if h.openapi == nil || len(h.openapi) >= maxOpenAPIDocs {
			h.openapi = map[string][]byte{} // a bound; each principal's rights make one key
		}
		h.openapi[key.String()] = b
		h.openapiMu.Unlock()
	}
	writeJSON(w, http.StatusOK, b)
}

// maxOpenAPIDocs bounds the cache of encoded OpenAPI documents (one per
// distinct set of operations principals may call).
const maxOpenAPIDocs = 32

// OpenAPI returns an OpenAPI 3.1 document generated from the registry: each
// operation as POST /v1/ops/<name> (request body = input schema, 200 =
// {ok, result: output schema}), the catalog, the GET aliases, /healthz and
// the bearer security scheme.
func (h *Handler) OpenAPI() map[string]any { return h.openAPIFor(nil) }

// openAPIFor is the document p sees: only the operations (and their
// aliases) it may call.
func (h *Handler) openAPIFor(p *auth.Principal) map[string]any {
	schemas := map[string]any{
		"Error": errorSchema(),
	}
	paths := map[string]any{}
	paths["/v1/ops"] = map[string]any{
		"get": map[string]any{
			"operationId": "list_operations",
			"summary":     "List the operations",
			"description": "Every operation with its title, description, annotations, input and output JSON Schemas and CLI command.",
			"tags":        []string{"catalog"},
			"responses": responses(map[string]any{
				"type":     "object",
				"required": []string{"operations"},
				"properties": map[string]any{
					"operations": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
				},
			}, http.StatusUnauthorized),
		},
	}
	for _, op := range h.reg.List() {
		if h.env.Permits(p, op) != nil {
			continue
		}
		in := hoist(op.InputSchema, op.Name+".input", schemas)
		out := hoist(op.OutputSchema, op.Name+".output", schemas)
		tag := "read"
		if !op.Annotations.ReadOnly {
			tag = "write"
		}
		paths["/v1/ops/"+op.Name] = map[string]any{
			"post": map[string]any{
				"operationId": op.Name,
				"summary":     op.Title,
				"description": op.Description,
				"tags":        []string{tag},
				"requestBody": map[string]any{
					"required":    false,
					"description": "The operation's input as a JSON object (an empty body means {}).",
					"content":     map[string]any{"application/json": map[string]any{"schema": in}},
				},
				"responses":          responses(out, opErrorStatuses...),
				"x-loci-annotations": op.Annotations,
			},
		}
	}
	for _, a := range aliases {
		op, ok := h.reg.Get(a.op)
		if !ok || h.env.Permits(p, op) != nil {
			continue
		}
		out := map[string]any{"$ref": "#/components/schemas/" + op.Name + ".output"}
		params := aliasParams(op, a)
		get := map[string]any{
			"operationId": op.Name + "_get",
			"summary":     op.Title + " (GET alias of POST /v1/ops/" + op.Name + ")",
			"description": "Runs " + op.Name + " through the same pipeline as POST /v1/ops/" + op.Name + "; query parameters are its input fields.",
			"tags":        []string{"aliases"},
			"parameters":  params,
			"responses":   responses(out, opErrorStatuses...),
		}
		paths[a.display()] = map[string]any{"get": get}
	}
	paths["/healthz"] = map[string]any{
		"get": map[string]any{
			"operationId": "healthz",
			"summary":     "Liveness check (no authentication)",
			"security":    []any{},
			"responses": map[string]any{
				"200": map[string]any{"description": "the server is up", "content": map[string]any{"application/json": map[string]any{
					"schema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"const": true}}},
				}}},
			},
		},
	}
	return map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{
			"title":   "loci",
			"version": h.opt.Version,
			"description": "REST surface of loci, a local-first memory engine for Markdown vaults. " +
				"Every operation is POST /v1/ops/{name} with its JSON input as the body; responses are {\"ok\":true,\"result\":...} " +
				"or {\"ok\":false,\"error\":{\"code\",\"message\",\"details\"}}. The same operations are MCP tools at /mcp.",
		},
		"security": []any{map[string]any{"bearer": []string{}}},
		"paths":    paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{
					"type":        "http",
					"scheme":      "bearer",
					"description": "The token printed by `loci serve` and `loci token` (Authorization: Bearer <token>).",
				},
			},
		},
	}
}

// opErrorStatuses are the error statuses any operation call may answer with.
var opErrorStatuses = []int{
	http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
	http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests,
	http.StatusInternalServerError, http.StatusServiceUnavailable,
}

func responses(result any, errStatuses ...int) map[string]any {
	out := map[string]any{
		"200": map[string]any{
			"description": "success",
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"type":       "object",
				"required":   []string{"ok", "result"},
				"properties": map[string]any{"ok": map[string]any{"const": true}, "result": result},
			}}},
		},
	}
	for _, st := range errStatuses {
		var codes []string
		for _, e := range statusTable {
			if e.Status == st {
				codes = append(codes, e.Code)
			}
		}
		desc := http.StatusText(st)
		if len(codes) > 0 {
			desc += ": " + strings.Join(codes, ", ")
		}
		out[strconv.Itoa(st)] = map[string]any{
			"description": desc,
			"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
		}
	}
	return out
}

func errorSchema() map[string]any {
	var codes []string
	for _, e := range statusTable {
		codes = append(codes, e.Code)
	}
	return map[string]any{
		"type":     "object",
		"required": []string{"ok", "error"},
		"properties": map[string]any{
			"ok": map[string]any{"const": false},
			"error": map[string]any{
				"type":     "object",
				"required": []string{"code", "message"},
				"properties": map[string]any{
					"code":    map[string]any{"type": "string", "description": "stable snake_case code, e.g. " + strings.Join(codes, ", ")},
					"message": map[string]any{"type": "string"},
					"details": map[string]any{"type": "object"},
				},
			},
		},
	}
}

// aliasParams describes a GET alias's parameters from the operation's input
// schema.
func aliasParams(op *ops.Op, a alias) []any {
	short := map[string]string{}
	for q, f := range a.renames {
		short[f] = q
	}
	var params []any
	if a.withRel {
		params = append(params, map[string]any{
			"name": "path", "in": "path", "required": true,
			"description": "vault-relative note path; its slashes may be written as is (e.g. /v1/notes/Projects/Alpha.md)",
			"schema":      map[string]any{"type": "string"},
		})
	}
	names := make([]string, 0, len(op.InputSchema.Properties))
	for n := range op.InputSchema.Properties {
		if a.withRel && n == "path" {
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		ps := op.InputSchema.Properties[n]
		q := n
		if s, ok := short[n]; ok {
			q = s
		}
		p := map[string]any{"name": q, "in": "query", "required": slices.Contains(op.InputSchema.Required, n), "description": ps.Description}
		switch schemaKind(ps) {
		case kindStringList:
			p["schema"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
			p["style"], p["explode"] = "form", true
			p["description"] = ps.Description + " (repeat the parameter)"
		case kindStringMap:
			p["schema"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
			p["style"], p["explode"] = "form", true
			p["description"] = ps.Description + " (key=value, repeat the parameter)"
		case kindInteger:
			p["schema"] = map[string]any{"type": "integer"}
		case kindNumber:
			p["schema"] = map[string]any{"type": "number"}
		case kindBool:
			p["schema"] = map[string]any{"type": "boolean"}
		default:
			p["schema"] = map[string]any{"type": "string"}
		}
		params = append(params, p)
	}
	return params
}

// hoist stores a schema under components/schemas/<name> and returns a $ref to
// it. Local definitions ($defs, referenced as #/$defs/X) would not resolve
// inside an OpenAPI document, so they move to components/schemas/<name>.X and
// their references are rewritten.
func hoist(s *jsonschema.Schema, name string, schemas map[string]any) map[string]any {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("api: schema %s: %v", name, err)) // schemas come from Go types; tests catch this
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		panic(fmt.Sprintf("api: schema %s: %v", name, err))
	}
	schemas[name] = hoistDefs(v, name, schemas)
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func hoistDefs(v any, prefix string, schemas map[string]any) any {
	switch t := v.(type) {
	case map[string]any:
		for _, key := range []string{"$defs", "definitions"} {
			defs, ok := t[key].(map[string]any)
			if !ok {
				continue
			}
			delete(t, key)
			for dn, dv := range defs {
				schemas[prefix+"."+dn] = hoistDefs(dv, prefix, schemas)
			}
		}
		for k, x := range t {
			if k == "$ref" {
				if ref, ok := x.(string); ok {
					if ref == "#" {
						t[k] = "#/components/schemas/" + prefix
					}
					for _, local := range []string{"#/$defs/", "#/definitions/"} {
						if strings.HasPrefix(ref, local) {
							t[k] = "#/components/schemas/" + prefix + "." + strings.TrimPrefix(ref, local)
						}
					}
				}
				continue
			}
			t[k] = hoistDefs(x, prefix, schemas)
		}
		return t
	case []any:
		for i := range t {
			t[i] = hoistDefs(t[i], prefix, schemas)
		}
		return t
	}
	return v
}
