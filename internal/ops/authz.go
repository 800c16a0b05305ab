package ops

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

// ConfirmationField is the input field a destructive call repeats with the
// id a human confirmed (confirmation_required → confirm → retry). The
// pipeline adds it to the input schema of every operation that can be
// destructive and takes it out before the input is decoded.
const ConfirmationField = "confirmation_id"

// defaultScope derives an operation's scope when its Def sets none.
func defaultScope(a Annotations, toolset string) auth.Scope {
	switch {
	case toolset == ToolsetAI:
		return auth.ScopeAI
	case !a.ReadOnly:
		return auth.ScopeWrite
	}
	return auth.ScopeRead
}

// Needs lists the scopes a call at scope s needs: destructive calls need
// write as well.
func Needs(s auth.Scope) []auth.Scope {
	if s == auth.ScopeDestructive {
		return []auth.Scope{auth.ScopeWrite, auth.ScopeDestructive}
	}
	return []auth.Scope{s}
}

func addConfirmationField(in *jsonschema.Schema) {
	if in.Properties == nil {
		in.Properties = map[string]*jsonschema.Schema{}
	}
	in.Properties[ConfirmationField] = &jsonschema.Schema{Type: "string",
		Description: "the id of a confirmation a human gave (only when a previous call answered confirmation_required: repeat the same call with this id)"}
}

// Group is the toolset a principal's toolsets and the facade name an
// operation by: admin, ai, logseq, write or read.
func (op *Op) Group() string {
	switch {
	case op.Scope == auth.ScopeAdmin:
		return "admin"
	case op.Toolset == ToolsetAI:
		return "ai"
	case op.Family == "logseq":
		return "logseq"
	case op.IsWrite():
		return "write"
	}
	return "read"
}

// Groups are the toolsets, in the order docs list them.
var Groups = []string{"read", "write", "logseq", "ai", "admin"}

// authorize is the pipeline's first check, before anything is decoded:
// the caller holds the operation's scope, may use the vault the input
// names (the default vault when none), and has the operation's toolset.
// Missing rights are forbidden (403) naming what is missing.
func (e *Env) authorize(c Caller, op *Op, raw json.RawMessage) *errs.Error {
	p := c.Principal
	if err := e.Permits(p, op); err != nil {
		return err
	}
	if p == nil || p.IsOwner() || len(e.Vaults) == 0 {
		return nil
	}
	var named struct {
		Vault string `json:"vault"`
	}
	_ = json.Unmarshal(raw, &named) // undecodable input: the decoder answers, on the default vault
	name := e.Vaults[0].Name
	if named.Vault != "" {
		vh, err := e.Vault(named.Vault)
		if err != nil {
			if len(p.Vaults) == 0 {
				return nil // the handler's vault_not_found
			}
			// Do not tell a principal which vaults exist beyond its own.
			return forbiddenVault(p, op, named.Vault)
		}
		name = vh.Name
	}
	if !p.MayUse(name) {
		return forbiddenVault(p, op, name)
	}
	return nil
}

// Permits is the part of authorize that does not depend on a call's
// input: the server offers op's toolset (Env.Toolsets, which binds the
// owner too), and p holds op's scope and toolset. Nil means p may call op
// (on some vault); the surfaces list exactly the operations it permits.
func (e *Env) Permits(p *auth.Principal, op *Op) *errs.Error {
	if !e.Served(op) {
		return errs.New(errs.CodeForbidden, "%s is in the %s toolset, which this server does not offer (its toolsets: %s)", op.Name, op.Group(), strings.Join(e.Toolsets, ", ")).
			With("operation", op.Name).With("missing_toolset", op.Group()).With("server_toolsets", e.Toolsets)
	}
	if p == nil || p.IsOwner() {
		return nil
	}
	if err := scopeError(p, op, op.Scope); err != nil {
		return err
	}
	if len(p.Toolsets) > 0 && !containsString(p.Toolsets, op.Group()) {
		return errs.New(errs.CodeForbidden, "%s is in the %s toolset, which principal %q does not have (its toolsets: %s)", op.Name, op.Group(), p.Name, strings.Join(p.Toolsets, ", ")).
			With("operation", op.Name).With("principal", p.Name).With("missing_toolset", op.Group())
	}
	return nil
}

func forbiddenVault(p *auth.Principal, op *Op, name string) *errs.Error {
	return errs.New(errs.CodeForbidden, "principal %q may not use vault %q (its vaults: %s)", p.Name, name, strings.Join(p.Vaults, ", ")).
		With("operation", op.Name).With("principal", p.Name).With("missing_vault", name)
}

// scopeError is forbidden naming the scopes p lacks for op at scope s, or
// nil.
func scopeError(p *auth.Principal, op *Op, s auth.Scope) *errs.Error {
	missing := p.Missing(Needs(s)...)
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, len(missing))
	for i, m := range missing {
		names[i] = string(m)
	}
	return errs.New(errs.CodeForbidden, "%s needs the %s scope, which principal %q does not have", op.Name, strings.Join(names, " and "), p.Name).
		With("operation", op.Name).With("principal", p.Name).With("missing_scopes", names)
}

// CallScope is the scope one decoded call needs: the operation's, raised
// by its ScopeFor.
func (op *Op) CallScope(ctx context.Context, env *Env, in any) auth.Scope {
	if op.scopeFor != nil {
		if s := op.scopeFor(ctx, env, in); s != "" {
			return s
		}
	}
	return op.Scope
}

// ScopeRaised reports whether some inputs need more than Scope (Def.ScopeFor).
func (op *Op) ScopeRaised() bool { return op.scopeFor != nil }

// splitConfirmation takes the confirmation id out of a call's arguments:
// the operation's own input type does not have it.
func splitConfirmation(op *Op, raw json.RawMessage) (json.RawMessage, string, *errs.Error) {
	if op.Scope != auth.ScopeDestructive && op.scopeFor == nil {
		return raw, "", nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw, "", nil // the decoder answers
	}
	v, ok := m[ConfirmationField]
	if !ok {
		return raw, "", nil
	}
	var id string
	if err := json.Unmarshal(v, &id); err != nil {
		return nil, "", errs.New(errs.CodeInvalidInput, "invalid arguments for %s: %s must be a string", op.Name, ConfirmationField).With("operation", op.Name)
	}
	delete(m, ConfirmationField)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, "", errs.New(errs.CodeInternal, "cannot re-encode the arguments: %v", err)
	}
	return b, id, nil
}

// RequireScope refuses the call in ctx unless its principal holds s: for
// a right an operation needs only on one of its paths (an AI operation
// that applies its proposal needs write).
func RequireScope(ctx context.Context, op string, s auth.Scope) error {
	p := CallerFrom(ctx).Principal
	if p == nil || p.IsOwner() {
		return nil
	}
	missing := p.Missing(Needs(s)...)
	if len(missing) == 0 {
		return nil
	}
	return errs.New(errs.CodeForbidden, "%s needs the %s scope for this, which principal %q does not have", op, s, p.Name).
		With("operation", op).With("principal", p.Name).With("missing_scopes", missing)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
