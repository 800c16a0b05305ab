package write

import (
	"context"
	"strings"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/vault"
)

// WriteNoteIn is the input of write_note.
type WriteNoteIn struct {
	Path      string `json:"path" jsonschema:"vault-relative path of the note (.md)"`
	Content   string `json:"content" jsonschema:"the note's full text; an existing note keeps its line endings, byte order mark and final newline"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"replace an existing note without if_match (the old text stays in the undo journal); prefer if_match"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks the path and the guard.
func (in *WriteNoteIn) Validate() error {
	if in.Path == "" {
		return errs.New(errs.CodeInvalidInput, "path is empty")
	}
	if strings.ContainsRune(in.Content, 0) {
		return errs.New(errs.CodeInvalidInput, "content holds NUL bytes")
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// WriteNote is the write_note operation.
func WriteNote() ops.Def[WriteNoteIn, ops.WriteResult] {
	return ops.Def[WriteNoteIn, ops.WriteResult]{
		Name:  "write_note",
		Title: "Write a note",
		Description: "Write a note's full text: create it, or replace it (replacing needs if_match with the etag you read, or overwrite=true). " +
			"A replaced note keeps its line endings, BOM and final newline. Prefer edit_note for changes to part of a note. Preview by default; apply=true writes it.",
		Annotations: ops.Annotations{Destructive: true},
		CLI:         ops.CLI{Use: "write", Args: []string{"path"}, Text: ops.TextWrite, Short: "Create or replace a note's text (preview; --apply writes it)"},
		Errors:      ops.WithErrors(errs.CodeInvalidUTF8),
		Example:     `{"path": "Notes/Reading list.md", "content": "# Reading list\n\n- How to Take Smart Notes\n"}`,
		Toolset:     ops.ToolsetWrites,
		ScopeFor:    writeNoteScope,
		Handler:     writeNote,
	}
}

// writeNoteScope: a write_note that may replace an existing note is
// destructive (the note exists, or the call passes if_match or overwrite,
// which only serve a replacement); creating a note is a write. The handler
// checks again under the note's lock, so a note created in between does
// not slip through as a mere write.
func writeNoteScope(ctx context.Context, env *ops.Env, in *WriteNoteIn) auth.Scope {
	if in.Overwrite || in.IfMatch != "" || in.ExpectedSHA256 != "" {
		return auth.ScopeDestructive
	}
	_, w, err := ops.WriteVault(env, in.Vault)
	if err != nil {
		return "" // the handler answers
	}
	if _, _, exists, err := w.ReadState(in.Path); err == nil && exists {
		return auth.ScopeDestructive
	}
	return ""
}

func writeNote(ctx context.Context, env *ops.Env, in *WriteNoteIn) (*ops.WriteResult, error) {
	vh, w, err := ops.WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	rel, err := w.Target(in.Path)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	return ops.Idempotent(ctx, env, vh, "write_note", in, &in.WriteOpts, func() (*ops.WriteResult, error) {
		return ops.RunWrite(ctx, env, ops.WriteSpec{Op: "write_note", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *ops.Stage) error {
			f, err := s.Read(rel)
			if err != nil {
				return err
			}
			s.Main = rel
			if !f.Exists {
				if want != "" {
					return ops.CheckGuard(f, want)
				}
				s.Create(rel, in.Content)
				return nil
			}
			if err := ops.RequireScope(ctx, "write_note", auth.ScopeDestructive); err != nil {
				return err // the note appeared after the pipeline checked the scope
			}
			if err := vault.CheckText(rel, f.Raw); err != nil {
				return err
			}
			f.Text = f.Format.Decode(f.Raw)
			switch {
			case want != "":
				if err := ops.CheckGuard(f, want); err != nil {
					return err
				}
			case !in.Overwrite:
				return errs.New(errs.CodeConflict, "%s already exists; pass if_match=%q (its current etag) to replace it after reading it, or overwrite=true", rel, f.Etag).
					With("path", rel).With("current_etag", f.Etag)
			}
			s.Put(f, strings.ReplaceAll(in.Content, "\r\n", "\n"))
			return nil
		}})
	})
}
