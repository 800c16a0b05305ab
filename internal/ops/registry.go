// Package ops is loci's operation registry. Every operation is defined once
// (typed input and output, JSON Schemas derived from them, annotations, an
// agent-facing description, a handler); the CLI, the MCP server and the REST
// API are generated from these definitions and all run the same dispatch
// pipeline (Registry.Call).
//
// The operations themselves live in families below this package (read,
// logseq, write, aiops), one file per operation, and catalog.All registers
// them. This package holds what they all stand on: the registry, the
// dispatch pipeline, Env with its vaults and event bus, and the helpers the
// families share (note references, cursors and pages, the searcher, and the
// write pipeline RunWrite).
package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

// Annotations mirror MCP tool annotations.
type Annotations struct {
	ReadOnly    bool `json:"readOnly"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
	OpenWorld   bool `json:"openWorld"`
}

// CLI describes how an operation appears as a command.
type CLI struct {
	// Use is the command name ("search"); empty hides the op from the CLI.
	Use string
	// Args are the JSON field names filled from positional arguments, in order.
	Args []string
	// Text renders the output for --format text; nil prints indented JSON.
	Text func(out any) string
	// Short overrides the one-line summary derived from the description.
	Short string
}

// Op is a type-erased operation, as the surfaces see it.
type Op struct {
	Name        string
	Title       string
	Description string
	Annotations Annotations
	CLI         CLI
	// Errors lists the error codes the operation may return (documented in
	// docs/tools.md); every op may also fail with internal or payload_too_large.
	Errors []string
	// Example is a JSON input that shows a typical call.
	Example string
	// Toolset groups operations that surfaces switch on and off together
	// ("writes": the write operations and their history, advertised over
	// MCP only when writes are enabled).
	Toolset string
	// Scope is the right a principal needs to call the operation
	// (auth.Scope*; destructive needs write as well). Def.Scope sets it;
	// when unset it is derived: ai for the AI toolset, write for other
	// writes, read otherwise.
	Scope auth.Scope
	// Family is the family that registered the operation (read, logseq,
	// write, aiops).
	Family string
	// Aliases are the other tools' parameter names the decoder accepts
	// (aliases.go); the input schema keeps loci's names only.
	Aliases []Alias
	// scopeFor, when set, raises the scope for one decoded input (a
	// write_note that replaces an existing note is destructive).
	scopeFor    func(ctx context.Context, env *Env, in any) auth.Scope
	InputType   reflect.Type
	OutputType  reflect.Type
	InputSchema *jsonschema.Schema
	// OutputSchema describes the structured result.
	OutputSchema *jsonschema.Schema
	resolved     *jsonschema.Resolved
	handler      func(ctx context.Context, env *Env, in any) (any, error)
	// derive fills the schemas and the aliases, once (ensure): deriving
	// them is most of what building the registry costs, and a CLI process
	// needs them for one operation only.
	derive     func(*Op)
	deriveOnce *sync.Once
}

// ensure derives the op's schemas and aliases if not done yet.
func (op *Op) ensure() *Op {
	if op.deriveOnce != nil {
		op.deriveOnce.Do(func() {
			op.derive(op)
			attachAliases(op)
		})
	}
	return op
}

// Def is the typed definition of an operation.
type Def[In, Out any] struct {
	Name        string
	Title       string
	Description string
	Annotations Annotations
	CLI         CLI
	// Errors lists the error codes the handler may return (errs.Code*).
	Errors []string
	// Example is a JSON input that shows a typical call; a test checks
	// that it decodes and validates.
	Example string
	// Toolset groups operations switched on and off together (see Op).
	Toolset string
	// Scope is the right needed to call the operation (see Op.Scope);
	// empty derives it from the annotations and the toolset.
	Scope auth.Scope
	// ScopeFor, when set, returns the scope one input needs when it can
	// be more than Scope (destructive for an overwrite, a recursive
	// delete, or undoing another principal's change); the pipeline checks
	// it after decoding, before the handler runs.
	ScopeFor func(ctx context.Context, env *Env, in *In) auth.Scope
	// TypeSchemas holds the schemas of types in In or Out that the
	// generator cannot derive on its own (recursive ones, such as a
	// Logseq block tree).
	TypeSchemas map[reflect.Type]*jsonschema.Schema
	Handler     func(ctx context.Context, env *Env, in *In) (*Out, error)
}

// Tool is one operation's definition, ready to register: a Def of any
// input and output types. Each family of operations lists its tools, and
// the catalog (internal/ops/catalog) registers the families.
type Tool interface {
	// build returns the operation as the surfaces see it, with its
	// derive function: its schemas are derived on first use (Op.ensure).
	build() *Op
}

// Registry holds every operation.
type Registry struct {
	ops   map[string]*Op
	order []string
}

// NewRegistry returns an empty registry; catalog.All returns one with
// every loci operation.
func NewRegistry() *Registry { return &Registry{ops: map[string]*Op{}} }

// Register adds a family's tools in order (family: read, logseq, write,
// aiops). It panics on programming errors: a duplicate name here, a type
// whose schema cannot be derived when the op is first used (Get, List);
// tests catch those. The schemas are derived on first use, so a process
// that calls one operation (a CLI command) derives one op's schemas.
func (r *Registry) Register(family string, tools ...Tool) {
	for _, t := range tools {
		op := t.build()
		op.Family = family
		op.deriveOnce = new(sync.Once)
		if _, dup := r.ops[op.Name]; dup {
			panic("ops: duplicate operation " + op.Name)
		}
		r.ops[op.Name] = op
		r.order = append(r.order, op.Name)
	}
}

func (d Def[In, Out]) build() *Op {
	h := d.Handler
	scope := d.Scope
	if scope == "" {
		scope = defaultScope(d.Annotations, d.Toolset)
	}
	var scopeFor func(ctx context.Context, env *Env, in any) auth.Scope
	if f := d.ScopeFor; f != nil {
		scopeFor = func(ctx context.Context, env *Env, in any) auth.Scope { return f(ctx, env, in.(*In)) }
	}
	return &Op{
		Name: d.Name, Title: d.Title, Description: d.Description, Annotations: d.Annotations, CLI: d.CLI,
		Errors: append([]string(nil), d.Errors...), Example: d.Example, Toolset: d.Toolset, Scope: scope, scopeFor: scopeFor,
		InputType: reflect.TypeFor[In](), OutputType: reflect.TypeFor[Out](),
		derive: d.schemas,
		handler: func(ctx context.Context, env *Env, in any) (any, error) {
			out, err := h(ctx, env, in.(*In))
			if err != nil {
				return nil, err
			}
			return out, nil
		},
	}
}

// schemas derives op's input and output schemas from In and Out.
func (d Def[In, Out]) schemas(op *Op) {
	opts := &jsonschema.ForOptions{TypeSchemas: d.TypeSchemas}
	in, err := jsonschema.For[In](opts)
	if err != nil {
		panic(fmt.Sprintf("ops: %s input schema: %v", d.Name, err))
	}
	out, err := jsonschema.For[Out](opts)
	if err != nil {
		panic(fmt.Sprintf("ops: %s output schema: %v", d.Name, err))
	}
	tidySchema(in, true)
	tidySchema(out, false)
	in.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	if op.Scope == auth.ScopeDestructive || op.scopeFor != nil {
		addConfirmationField(in)
	}
	res, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("ops: %s input schema resolve: %v", d.Name, err))
	}
	op.InputSchema, op.OutputSchema, op.resolved = in, out, res
}

// Get returns an op by name.
func (r *Registry) Get(name string) (*Op, bool) {
	op, ok := r.ops[name]
	if !ok {
		return nil, false
	}
	return op.ensure(), true
}

// List returns every op in name order.
func (r *Registry) List() []*Op {
	out := r.ListShallow()
	for _, op := range out {
		op.ensure()
	}
	return out
}

// ListShallow returns every op in name order without deriving the schemas
// and aliases of those not used yet: their InputSchema, OutputSchema and
// Aliases may be nil (Get returns the whole op). It is for the CLI, which
// lists every command but runs one.
func (r *Registry) ListShallow() []*Op {
	names := append([]string(nil), r.order...)
	sort.Strings(names)
	out := make([]*Op, 0, len(names))
	for _, n := range names {
		out = append(out, r.ops[n])
	}
	return out
}

// Decode validates raw JSON arguments against the op's input schema and
// decodes them into a fresh input value (a pointer to the In type).
func (op *Op) Decode(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, errs.New(errs.CodeInvalidInput, "arguments are not valid JSON: %v", err)
	}
	obj, ok := generic.(map[string]any)
	if !ok {
		return nil, errs.New(errs.CodeInvalidInput, "arguments must be a JSON object")
	}
	if len(op.Aliases) > 0 {
		changed, err := op.applyAliases(obj)
		if err != nil {
			return nil, errs.As(err).With("operation", op.Name)
		}
		if changed {
			if raw, err = json.Marshal(obj); err != nil {
				return nil, errs.New(errs.CodeInvalidInput, "arguments: %v", err)
			}
		}
	}
	if err := op.resolved.Validate(generic); err != nil {
		return nil, errs.New(errs.CodeInvalidInput, "invalid arguments for %s: %s", op.Name, cleanSchemaErr(err)).With("operation", op.Name)
	}
	in := reflect.New(op.InputType).Interface()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		return nil, errs.New(errs.CodeInvalidInput, "invalid arguments for %s: %v", op.Name, err).With("operation", op.Name)
	}
	if v, ok := in.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	return in, nil
}

func cleanSchemaErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "validating root: ")
	return s
}
