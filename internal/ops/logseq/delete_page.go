package logseq

import (
	"context"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// DeletePageIn is the input of delete_page.
type DeletePageIn struct {
	Name string `json:"name,omitempty" jsonschema:"the page name (case-insensitive; aliases and journal dates work too)"`
	Path string `json:"path,omitempty" jsonschema:"vault-relative path of the page file, instead of name"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks the page.
func (in *DeletePageIn) Validate() error {
	if err := onePage(in.Name, in.Path); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// DeletePage is the delete_page operation.
func DeletePage() ops.Def[DeletePageIn, ops.WriteResult] {
	return ops.Def[DeletePageIn, ops.WriteResult]{
		Name:        "delete_page",
		Title:       "Delete a Logseq page",
		Description: "Move a Logseq page's file to the vault's .trash/ folder; the result warns about pages that still reference it. Undo restores it. Preview by default.",
		Annotations: ops.Annotations{Destructive: true},
		Scope:       auth.ScopeDestructive,
		CLI:         ops.CLI{Use: "delete-page", Args: []string{"name"}, Text: ops.TextWrite, Short: "Move a Logseq page to .trash/ (preview; --apply does it)"},
		Errors:      logseqErrors,
		Example:     `{"name": "graph/design"}`,
		Toolset:     ops.ToolsetWrites,
		Handler:     deletePage,
	}
}

func deletePage(ctx context.Context, env *ops.Env, in *DeletePageIn) (*ops.WriteResult, error) {
	vh, rel, err := pageFor(ctx, env, in.Vault, in.Name, in.Path)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	return ops.Idempotent(ctx, env, vh, "delete_page", in, &in.WriteOpts, func() (*ops.WriteResult, error) {
		return ops.RunWrite(ctx, env, ops.WriteSpec{Op: "delete_page", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *ops.Stage) error {
			f, err := s.Read(rel)
			if err != nil {
				return err
			}
			if !f.Exists {
				return errs.New(errs.CodeNotFound, "page file not found: %s", rel).With("path", rel)
			}
			if err := ops.CheckGuard(f, want); err != nil {
				return err
			}
			s.Main = rel
			if err := s.Trash(f); err != nil {
				return err
			}
			s.Warnings = append(s.Warnings, ops.InboundWarning(ctx, vh, rel)...)
			return nil
		}})
	})
}
