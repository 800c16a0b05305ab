package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// OpInfo describes one operation in GET /v1/ops.
type OpInfo struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Annotations ops.Annotations `json:"annotations"`
	// Scope is the right a call needs; Toolset the group it belongs to.
	Scope        string             `json:"scope"`
	Toolset      string             `json:"toolset"`
	InputSchema  *jsonschema.Schema `json:"input_schema"`
	OutputSchema *jsonschema.Schema `json:"output_schema"`
	// Endpoint is the route that runs the operation: POST with the input as body.
	Endpoint string `json:"endpoint"`
	// Alias is the friendly GET route for the operation, if it has one.
	Alias string   `json:"alias,omitempty"`
	CLI   *CLIInfo `json:"cli,omitempty"`
}

// CLIInfo says how the operation is run from the command line.
type CLIInfo struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Usage   string   `json:"usage"`
}

func describe(op *ops.Op) OpInfo {
	info := OpInfo{
		Name: op.Name, Title: op.Title, Description: op.Description, Annotations: op.Annotations,
		Scope: string(op.Scope), Toolset: op.Group(),
		InputSchema: op.InputSchema, OutputSchema: op.OutputSchema, Endpoint: "/v1/ops/" + op.Name,
	}
	for _, a := range aliases {
		if a.op == op.Name {
			info.Alias = "GET " + a.display()
			break
		}
	}
	if op.CLI.Use != "" {
		usage := "loci " + op.CLI.Use
		for _, a := range op.CLI.Args {
			usage += " <" + a + ">"
		}
		info.CLI = &CLIInfo{Command: op.CLI.Use, Args: op.CLI.Args, Usage: usage}
	}
	return info
}

// catalog lists the operations p may call (ops.Env.Permits: its scopes
// and toolsets, and the server's toolsets); a nil p is the owner.
func (h *Handler) catalog(p *auth.Principal) []OpInfo {
	list := h.reg.List()
	out := make([]OpInfo, 0, len(list))
	for _, op := range list {
		if h.env.Permits(p, op) == nil {
			out = append(out, describe(op))
		}
	}
	return out
}

// routes is what GET /v1 returns: a map of the surface (the aliases of the
// operations p may call).
func (h *Handler) routes(p *auth.Principal) map[string]any {
	al := map[string]string{}
	for _, a := range aliases {
		if op, ok := h.reg.Get(a.op); ok && h.env.Permits(p, op) == nil {
			al["GET "+a.display()] = a.op
		}
	}
	return map[string]any{
		"operations":    "GET /v1/ops",
		"call":          "POST /v1/ops/{name}",
		"openapi":       "GET /openapi.json",
		"events":        "GET /v1/events?kinds=note,index,write.applied,watcher (Server-Sent Events)",
		"aliases":       al,
		"ai":            "POST /v1/ai/{op} (= POST /v1/ops/ai_{op}; Accept: text/event-stream streams ai_ask and ai_summarize; docs/ai.md)",
		"confirmations": "GET /v1/confirmations, POST /v1/confirmations/{id} {\"decision\": \"confirm\"|\"deny\"} (admin scope; docs/security.md)",
	}
}

// alias is a friendly GET route onto an operation. Query parameters are the
// operation's input fields (with a few short names); a trailing path, when the
// route has one, fills the "path" field.
type alias struct {
	route   string            // "/v1/search", or "/v1/notes/" for a path route
	op      string            // operation name
	withRel bool              // the rest of the URL path is the note path
	renames map[string]string // query name → input field
}

var aliases = []alias{
	{route: "/v1/search", op: "search_notes", renames: map[string]string{"q": "query", "tag": "tags"}},
	{route: "/v1/notes/", op: "read_note", withRel: true},
	{route: "/v1/links/", op: "get_links", withRel: true},
	{route: "/v1/tags", op: "list_tags"},
	{route: "/v1/status", op: "index_status"},
	{route: "/v1/ai/status", op: "ai_status"},
}

// aliasOf returns the alias route p is (the escaped request path).
func aliasOf(p string) (alias, bool) {
	for _, a := range aliases {
		if _, ok := a.match(p); ok {
			return a, true
		}
	}
	return alias{}, false
}

func (a alias) display() string {
	if a.withRel {
		return a.route + "{path}"
	}
	return a.route
}

// match reports whether the escaped request path p is this alias, and returns
// the escaped rest (the note path) for path routes.
func (a alias) match(p string) (string, bool) {
	if a.withRel {
		if strings.HasPrefix(p, a.route) {
			return p[len(a.route):], true
		}
		return "", p == strings.TrimSuffix(a.route, "/")
	}
	return "", p == a.route
}

func (h *Handler) serveAlias(w http.ResponseWriter, r *http.Request, a alias, rest string) {
	op, ok := h.reg.Get(a.op)
	if !ok {
		WriteError(w, errs.New(errs.CodeUnknownOp, "unknown operation %q", a.op))
		return
	}
	args, e := queryArgs(op, r.URL.Query(), a.renames)
	if e != nil {
		WriteError(w, e.With("operation", op.Name))
		return
	}
	if a.withRel {
		if _, dup := args["path"]; dup {
			WriteError(w, errs.New(errs.CodeInvalidInput, "the note path comes from the URL, not the path parameter").With("operation", op.Name))
			return
		}
		// Decode once: "%20" is a space, "%2F" a slash; whatever the decoded
		// path holds ("..", an absolute path, an encoded dot left over from a
		// double encoding) is judged by the vault's confinement check.
		rel, err := url.PathUnescape(rest)
		if err != nil {
			WriteError(w, errs.New(errs.CodeInvalidInput, "the note path in the URL is not validly escaped").With("operation", op.Name))
			return
		}
		args["path"] = rel
	}
	raw, err := json.Marshal(args)
	if err != nil {
		WriteError(w, errs.Wrap(err, errs.CodeInvalidInput, "cannot encode arguments"))
		return
	}
	h.call(w, r, op.Name, raw)
}

// paramKind is how a query string value is converted to an input field.
type paramKind int

const (
	kindString paramKind = iota
	kindInteger
	kindNumber
	kindBool
	kindStringList
	kindStringMap
)

func schemaKind(s *jsonschema.Schema) paramKind {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	switch {
	case slices.Contains(types, "array"):
		return kindStringList
	case slices.Contains(types, "object"):
		return kindStringMap
	case slices.Contains(types, "integer"):
		return kindInteger
	case slices.Contains(types, "number"):
		return kindNumber
	case slices.Contains(types, "boolean"):
		return kindBool
	}
	return kindString
}

// queryArgs turns a query string into an operation's JSON input, typed by the
// input schema: integers and booleans are parsed, list fields take repeated
// parameters, map fields take repeated key=value parameters. Unknown
// parameters are an error, as unknown JSON fields are.
func queryArgs(op *ops.Op, q url.Values, renames map[string]string) (map[string]any, *errs.Error) {
	args := map[string]any{}
	props := op.InputSchema.Properties
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		vals := q[k]
		field := k
		if f, ok := renames[k]; ok {
			field = f
		}
		ps, ok := props[field]
		if !ok {
			return nil, errs.New(errs.CodeInvalidInput, "unknown query parameter %q", k).With("parameters", queryNames(op, renames))
		}
		kind := schemaKind(ps)
		if kind != kindStringList && kind != kindStringMap && (len(vals) > 1 || args[field] != nil) {
			return nil, errs.New(errs.CodeInvalidInput, "query parameter %q is given more than once", k).With("parameter", k)
		}
		switch kind {
		case kindString:
			args[field] = vals[0]
		case kindInteger:
			n, err := strconv.Atoi(vals[0])
			if err != nil {
				return nil, errs.New(errs.CodeInvalidInput, "query parameter %q must be an integer, not %q", k, vals[0]).With("parameter", k)
			}
			args[field] = n
		case kindNumber:
			f, err := strconv.ParseFloat(vals[0], 64)
			if err != nil {
				return nil, errs.New(errs.CodeInvalidInput, "query parameter %q must be a number, not %q", k, vals[0]).With("parameter", k)
			}
			args[field] = f
		case kindBool:
			if vals[0] == "" {
				args[field] = true // ?flag alone means true
				break
			}
			b, err := strconv.ParseBool(vals[0])
			if err != nil {
				return nil, errs.New(errs.CodeInvalidInput, "query parameter %q must be true or false, not %q", k, vals[0]).With("parameter", k)
			}
			args[field] = b
		case kindStringList:
			list, _ := args[field].([]string)
			args[field] = append(list, vals...)
		case kindStringMap:
			m, _ := args[field].(map[string]string)
			if m == nil {
				m = map[string]string{}
			}
			for _, v := range vals {
				key, val, ok := strings.Cut(v, "=")
				if !ok || key == "" {
					return nil, errs.New(errs.CodeInvalidInput, "query parameter %q takes key=value, not %q", k, v).With("parameter", k)
				}
				m[key] = val
			}
			args[field] = m
		}
	}
	return args, nil
}

// queryNames lists the query parameters an operation accepts.
func queryNames(op *ops.Op, renames map[string]string) []string {
	short := map[string]string{}
	for q, f := range renames {
		short[f] = q
	}
	var out []string
	for name := range op.InputSchema.Properties {
		if q, ok := short[name]; ok {
			out = append(out, q)
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
