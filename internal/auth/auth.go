// Package auth holds who may call loci and with which rights: principals
// (a name, scopes, the vaults they may use, their confirmation policy and
// optional narrowing of toolsets and read fences), the principals file
// that `loci token create` writes (only token hashes are stored), and the
// Authenticator every HTTP surface resolves a bearer token with (the
// vault's own token as the principal "owner", tokens from the principals
// file, and JWTs when configured). docs/security.md explains the model.
//
// The dispatch pipeline (internal/ops) enforces what a principal may do;
// this package only says who it is.
package auth

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
)

// Scope is one right a principal holds.
type Scope string

// The scopes. Each operation declares the one it needs (ops.Def.Scope);
// destructive operations need write as well.
const (
	// ScopeRead reads notes: search, context, read, links, tags, tree.
	ScopeRead Scope = "read"
	// ScopeWrite changes notes: capture, edit, frontmatter, blocks.
	ScopeWrite Scope = "write"
	// ScopeDestructive deletes, moves or renames notes, overwrites a
	// whole note, deletes a block with its children, or undoes another
	// principal's change.
	ScopeDestructive Scope = "destructive"
	// ScopeAI runs the AI operations (a model is called, money may be
	// spent); applying their proposals needs write too.
	ScopeAI Scope = "ai"
	// ScopeAdmin reads metrics and the calls log, handles confirmations,
	// inspects fences and manages tokens over HTTP.
	ScopeAdmin Scope = "admin"
)

// AllScopes lists every scope, in the order docs and errors name them.
var AllScopes = []Scope{ScopeRead, ScopeWrite, ScopeDestructive, ScopeAI, ScopeAdmin}

// ParseScopes reads scope names ("read,write" or several values), drops
// duplicates and keeps AllScopes' order; "all" stands for every scope.
// An unknown name is validation_failed naming it and the known ones.
func ParseScopes(items []string) ([]Scope, error) {
	names, err := ParseNames(items, ScopeNames(AllScopes), "scope", true)
	if err != nil {
		return nil, err
	}
	out := make([]Scope, len(names))
	for i, n := range names {
		out[i] = Scope(n)
	}
	return out, nil
}

// ParseNames reads names from a closed set (known): comma-separated or
// several values, any case, duplicates dropped, in known's order; "all"
// stands for every one when all is set. An unknown name is
// validation_failed naming it (details[what]) and the known ones.
func ParseNames(items, known []string, what string, all bool) ([]string, error) {
	seen := map[string]bool{}
	for _, it := range items {
		for _, s := range strings.Split(it, ",") {
			s = strings.ToLower(strings.TrimSpace(s))
			switch {
			case s == "":
			case all && s == "all":
				for _, k := range known {
					seen[k] = true
				}
			case slices.Contains(known, s):
				seen[s] = true
			default:
				return nil, errs.New(errs.CodeInvalidInput, "unknown %s %q: the %ss are %s", what, s, what, strings.Join(known, ", ")).
					With(what, s).With("known", known)
			}
		}
	}
	var out []string
	for _, k := range known {
		if seen[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// ScopeNames returns the scopes' names, in s's order.
func ScopeNames(s []Scope) []string {
	names := make([]string, len(s))
	for i, x := range s {
		names[i] = string(x)
	}
	return names
}

func scopeList(s []Scope) string { return strings.Join(ScopeNames(s), ", ") }

// How a principal authenticated (Principal.Via).
const (
	ViaOwnerToken = "owner-token" // the vault's own token (loci token)
	ViaToken      = "token"       // a token from the principals file
	ViaJWT        = "jwt"         // a verified JWT
	ViaLocal      = "local"       // the CLI or stdio: the user's own process
	ViaAnonymous  = "anonymous"   // --no-auth on loopback
)

// Confirmation policies for destructive calls (Principal.Confirm).
const (
	// PolicyConfirm: a destructive call that would apply first returns
	// confirmation_required; a human confirms; the retried call applies.
	PolicyConfirm = "confirm"
	// PolicyAllow: destructive calls apply without a human.
	PolicyAllow = "allow"
)

// OwnerName is the principal of the vault's own token, of the CLI, of
// stdio and of --no-auth: every scope, every vault.
const OwnerName = "owner"

// Principal is one caller identity and its rights.
type Principal struct {
	Name   string  `json:"name"`
	Scopes []Scope `json:"scopes"`
	// Vaults names the vaults the principal may use; empty means every
	// served vault.
	Vaults []string `json:"vaults,omitempty"`
	// Confirm is the policy for destructive calls: PolicyConfirm or
	// PolicyAllow ("" is allow).
	Confirm string `json:"confirm,omitempty"`
	// Toolsets, when set, narrow what the principal is offered and may
	// call to these toolsets (read, write, logseq, ai, admin).
	Toolsets []string `json:"toolsets,omitempty"`
	// ReadPaths and DenyReadPaths narrow the read fences of every vault
	// the principal uses (globs; they can only take away).
	ReadPaths     []string `json:"read_paths,omitempty"`
	DenyReadPaths []string `json:"deny_read_paths,omitempty"`
	// Via says how the principal authenticated (not stored).
	Via string `json:"-"`
	// Subject is the JWT's sub, when the principal came from a JWT.
	Subject string `json:"-"`
	// Expires is when the credential ends (a JWT's exp; zero: never). A
	// session started with it (the web UI's) ends then too.
	Expires time.Time `json:"-"`
}

// Expired reports whether p's credential has ended at now.
func (p *Principal) Expired(now time.Time) bool {
	return p != nil && !p.Expires.IsZero() && !now.Before(p.Expires)
}

// Owner is the principal with every right: the vault's own token, the
// CLI and stdio (the user's own process), and --no-auth on loopback.
func Owner(via string) *Principal {
	return &Principal{Name: OwnerName, Scopes: slices.Clone(AllScopes), Confirm: PolicyAllow, Via: via}
}

// IsOwner reports whether p is the owner (every right, no fences of its
// own).
func (p *Principal) IsOwner() bool {
	return p == nil || p.Via == ViaOwnerToken || p.Via == ViaLocal || p.Via == ViaAnonymous
}

// Has reports whether p holds scope s. A nil principal is the owner
// (in-process callers: the CLI and stdio).
func (p *Principal) Has(s Scope) bool { return p == nil || slices.Contains(p.Scopes, s) }

// Missing returns the scopes of need that p lacks.
func (p *Principal) Missing(need ...Scope) []Scope {
	var out []Scope
	for _, s := range need {
		if !p.Has(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// MayUse reports whether p may use the vault named name.
func (p *Principal) MayUse(name string) bool {
	return p == nil || len(p.Vaults) == 0 || slices.Contains(p.Vaults, name)
}

// MustConfirm reports whether p's destructive calls wait for a human.
func (p *Principal) MustConfirm() bool { return p != nil && p.Confirm == PolicyConfirm }

// Label is the name the calls log, the audit log and metrics record.
func (p *Principal) Label() string {
	if p == nil {
		return OwnerName
	}
	return p.Name
}

// ValidName checks a principal name: 1-64 characters of letters, digits,
// '.', '_', '-', '@'; not "owner" (reserved for the vault's token).
func ValidName(name string) error {
	if name == OwnerName {
		return errs.New(errs.CodeInvalidInput, "the name %q is the vault token's principal; choose another", name).With("name", name)
	}
	if name == "" || len(name) > 64 {
		return errs.New(errs.CodeInvalidInput, "a principal name has 1 to 64 characters").With("name", name)
	}
	for _, r := range name {
		ok := r == '.' || r == '_' || r == '-' || r == '@' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return errs.New(errs.CodeInvalidInput, "principal name %q: only letters, digits, '.', '_', '-' and '@' are allowed", name).With("name", name)
		}
	}
	return nil
}

// String describes p for logs: name, scopes and vaults.
func (p *Principal) String() string {
	if p == nil {
		return OwnerName
	}
	v := "every vault"
	if len(p.Vaults) > 0 {
		vs := slices.Clone(p.Vaults)
		sort.Strings(vs)
		v = strings.Join(vs, ",")
	}
	return fmt.Sprintf("%s (%s; %s)", p.Name, scopeList(p.Scopes), v)
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p (set by the HTTP authentication
// middleware, read by the surfaces when they build ops.Caller).
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// From returns the principal WithPrincipal set, or nil.
func From(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
