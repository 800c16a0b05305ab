package read

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// InspectACLIn is the input of inspect_acl.
type InspectACLIn struct {
	Path      string `json:"path" jsonschema:"vault-relative path to check, e.g. HR/Salaries.md (it need not exist)"`
	Principal string `json:"principal,omitempty" jsonschema:"the principal to check, by name (owner, or a name from loci token list); default: the caller"`
	Vault     string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the path is given.
func (in *InspectACLIn) Validate() error {
	if strings.TrimSpace(in.Path) == "" {
		return errs.New(errs.CodeInvalidInput, "path is empty")
	}
	return nil
}

// InspectACLOut is the output of inspect_acl.
type InspectACLOut struct {
	Path      string          `json:"path" jsonschema:"the path checked, in canonical form"`
	Vault     string          `json:"vault" jsonschema:"the vault"`
	Principal string          `json:"principal" jsonschema:"the principal checked"`
	Read      ops.ACLDecision `json:"read" jsonschema:"whether the principal may read the path, and the rule that decided"`
	Write     ops.ACLDecision `json:"write" jsonschema:"whether the principal may write the path, and the rule that decided"`
}

// InspectACL is the inspect_acl operation.
func InspectACL() ops.Def[InspectACLIn, InspectACLOut] {
	return ops.Def[InspectACLIn, InspectACLOut]{
		Name:  "inspect_acl",
		Title: "Explain read and write access",
		Description: "For a principal (default: the caller) and a vault-relative path: whether it may read and write it, and which rule decided " +
			"(the note rule, the vault's read_paths/deny_read_paths, the principal's own read globs, writes on or off, write_paths/deny_paths, its scopes and vaults, or default). " +
			"Admin only: it tells what the fences of others are.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		Scope:       auth.ScopeAdmin,
		CLI:         ops.CLI{Use: "inspect-acl", Args: []string{"path"}, Text: textACL, Short: "Whether a principal may read and write a path, and the rule that decided"},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeVaultNotFound},
		Example:     `{"path": "HR/Salaries.md", "principal": "research-agent"}`,
		Handler: func(ctx context.Context, env *ops.Env, in *InspectACLIn) (*InspectACLOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			p := ops.CallerFrom(ctx).Principal
			if in.Principal != "" {
				if p, err = env.Principal(in.Principal); err != nil {
					return nil, err
				}
			}
			// Confined like any path input (the note need not exist): a
			// path out of the vault or into a closed folder is path_denied.
			_, clean, err := vh.Vault.Abs(in.Path)
			if err != nil {
				return nil, err
			}
			return &InspectACLOut{Path: clean, Vault: vh.Name, Principal: p.Label(),
				Read: env.DecideRead(vh, p, clean), Write: env.DecideWrite(vh, p, clean)}, nil
		},
	}
}

func textACL(o any) string {
	out := o.(*InspectACLOut)
	line := func(what string, d ops.ACLDecision) string {
		verdict := "denied"
		if d.Allowed {
			verdict = "allowed"
		}
		rule := d.Setting
		if d.Glob != "" {
			rule += " " + d.Glob
		}
		return fmt.Sprintf("%-6s %-8s %s: %s\n", what, verdict, rule, d.Reason)
	}
	return fmt.Sprintf("%s in %s for %s\n", out.Path, out.Vault, out.Principal) + line("read", out.Read) + line("write", out.Write)
}
