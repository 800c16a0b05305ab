package mcpserver

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// Facade mode (Options.Facade; server.facade, --facade): MCP lists three
// tools instead of one per operation, for clients that cap the number of
// tools a server may bring. find_capability and describe_capability show a
// principal what it may call (the same rule as tools/list: ops.Env.Offered);
// call_capability runs any operation through Registry.Call as the same
// caller, so every check of the pipeline applies as if the operation had
// been called as its own tool. Resources and prompts are unchanged.

// The facade's tools.
const (
	FindCapability     = "find_capability"
	DescribeCapability = "describe_capability"
	CallCapability     = "call_capability"
)

type findIn struct {
	Query   string `json:"query,omitempty" jsonschema:"words describing what you want to do (e.g. search notes by tag, edit a heading); empty lists every operation you may call"`
	Toolset string `json:"toolset,omitempty" jsonschema:"only operations of this toolset: read, write, logseq, ai or admin"`
}

// capability is one operation as find_capability lists it.
type capability struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Summary string `json:"summary" jsonschema:"the first sentence of the operation's description"`
	Scope   string `json:"scope" jsonschema:"the right the call needs: read, write, destructive, ai or admin"`
	Toolset string `json:"toolset"`
}

type findOut struct {
	Capabilities []capability `json:"capabilities" jsonschema:"best match first; call one with call_capability"`
}

type describeIn struct {
	Name string `json:"name" jsonschema:"the operation's name, as find_capability lists it"`
}

type describeOut struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Scope       string          `json:"scope"`
	Toolset     string          `json:"toolset"`
	Annotations ops.Annotations `json:"annotations"`
	InputSchema any             `json:"input_schema" jsonschema:"JSON Schema of the arguments call_capability passes on"`
	Example     any             `json:"example,omitempty" jsonschema:"arguments of a typical call"`
}

type callIn struct {
	Name      string         `json:"name" jsonschema:"the operation to run, as find_capability lists it"`
	Arguments map[string]any `json:"arguments,omitempty" jsonschema:"the operation's input, as describe_capability's input_schema says (default {})"`
}

func (s *Server) addFacade() {
	tool := func(name, title, desc string, in, out *jsonschema.Schema, readOnly bool, h mcp.ToolHandler) {
		f := false
		t := &mcp.Tool{Name: name, Title: title, Description: desc, InputSchema: in,
			Annotations: &mcp.ToolAnnotations{Title: title, ReadOnlyHint: readOnly, OpenWorldHint: &f}}
		if out != nil {
			t.OutputSchema = out
		}
		if !readOnly {
			t.Annotations.DestructiveHint = nil // depends on the operation called
		}
		s.mcp.AddTool(t, h)
	}
	tool(FindCapability, "Find an operation",
		"List the loci operations you may call that match a few words (name, title, one-line summary, the scope it needs, its toolset), best match first. Start here; then describe_capability for the input, and call_capability to run it.",
		schemaFor[findIn](), schemaFor[findOut](), true, s.findCapability)
	tool(DescribeCapability, "Describe an operation",
		"Show one operation you may call: its full description, the JSON Schema of its input, the scope it needs and an example of arguments.",
		schemaFor[describeIn](), schemaFor[describeOut](), true, s.describeCapability)
	tool(CallCapability, "Call an operation",
		"Run one operation with its arguments and return its result, exactly as if it were its own tool: the same checks (scope, vault, write settings, confirmation of destructive calls) and the same errors.",
		schemaFor[callIn](), nil, false, s.callCapability)
}

func schemaFor[T any]() *jsonschema.Schema {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // a programming error in the types above, caught by every test
	}
	return sc
}

// decodeArgs decodes a facade tool's arguments strictly.
func decodeArgs(raw json.RawMessage, into any) *errs.Error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return errs.New(errs.CodeInvalidInput, "invalid arguments: %v", err)
	}
	return nil
}

func structured(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResult(errs.Wrap(err, errs.CodeInternal, "cannot encode the result"))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

func (s *Server) findCapability(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in findIn
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return errorResult(err), nil
	}
	if in.Toolset != "" {
		ts, err := ops.ParseToolsets([]string{in.Toolset})
		if err != nil {
			return errorResult(errs.As(err)), nil
		}
		in.Toolset = strings.Join(ts, ",")
	}
	p := principalOf(req.Extra)
	words := queryWords(in.Query)
	type scored struct {
		c     capability
		score int
	}
	var hits []scored
	for _, op := range s.reg.List() {
		if !s.env.Offered(op, p) || (in.Toolset != "" && op.Group() != in.Toolset) {
			continue
		}
		score := matchScore(op, words)
		if len(words) > 0 && score == 0 {
			continue
		}
		hits = append(hits, scored{capability{Name: op.Name, Title: op.Title, Summary: summary(op.Description),
			Scope: string(op.Scope), Toolset: op.Group()}, score})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	out := findOut{Capabilities: []capability{}}
	for _, h := range hits {
		out.Capabilities = append(out.Capabilities, h.c)
	}
	return structured(out), nil
}

// offered returns the operation if the request's principal may call
// it, else the error a call would get (unknown_operation or forbidden).
func (s *Server) offered(req *mcp.CallToolRequest, name string) (*ops.Op, *errs.Error) {
	op, ok := s.reg.Get(name)
	if !ok {
		return nil, errs.New(errs.CodeUnknownOp, "unknown operation %q (find_capability lists them)", name).With("operation", name)
	}
	if err := s.env.Permits(principalOf(req.Extra), op); err != nil {
		return nil, err
	}
	return op, nil
}

func (s *Server) describeCapability(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in describeIn
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return errorResult(err), nil
	}
	op, err := s.offered(req, in.Name)
	if err != nil {
		return errorResult(err), nil
	}
	out := describeOut{Name: op.Name, Title: op.Title, Description: op.Description, Scope: string(op.Scope),
		Toolset: op.Group(), Annotations: op.Annotations, InputSchema: op.InputSchema}
	if op.Example != "" {
		out.Example = json.RawMessage(op.Example)
	}
	return structured(out), nil
}

func (s *Server) callCapability(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return errorResult(err), nil
	}
	if in.Name == "" {
		return errorResult(errs.New(errs.CodeInvalidInput, "name is required: the operation to run (find_capability lists them)")), nil
	}
	args := in.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	// No check of our own here: the pipeline refuses what the principal
	// may not call, exactly as for the operation's own tool.
	return s.runOp(ctx, req, in.Name, args), nil
}

// queryWords are the lower-cased words of a find query, without a plural
// s, short words dropped.
func queryWords(q string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if len(w) < 3 {
			continue
		}
		if len(w) > 3 && strings.HasSuffix(w, "s") {
			w = w[:len(w)-1]
		}
		out = append(out, w)
	}
	return out
}

// matchScore weighs each query word found in the name (3), title (2) or
// description (1) of op.
func matchScore(op *ops.Op, words []string) int {
	name := strings.ReplaceAll(op.Name, "_", " ")
	title, desc := strings.ToLower(op.Title), strings.ToLower(op.Description)
	score := 0
	for _, w := range words {
		switch {
		case strings.Contains(name, w):
			score += 3
		case strings.Contains(title, w):
			score += 2
		case strings.Contains(desc, w):
			score++
		}
	}
	return score
}

// summary is the first sentence of a description.
func summary(d string) string {
	if i := strings.Index(d, ". "); i >= 0 {
		return d[:i+1]
	}
	return d
}
