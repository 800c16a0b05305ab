package write

import (
	"context"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// DeleteNoteIn is the input of delete_note.
type DeleteNoteIn struct {
	Path string `json:"path,omitempty" jsonschema:"vault-relative path of the note (or use note)"`
	Note string `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks the note and the guard.
func (in *DeleteNoteIn) Validate() error {
	if err := ops.EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// DeleteNote is the delete_note operation.
func DeleteNote() ops.Def[DeleteNoteIn, ops.WriteResult] {
	return ops.Def[DeleteNoteIn, ops.WriteResult]{
		Name:  "delete_note",
		Title: "Delete a note",
		Description: "Move a note to the vault's .trash/ folder (Obsidian's convention; nothing is unlinked), keeping its folders (.trash/Projects/A.md). " +
			"The result warns about notes that still link to it. Undo restores it. Preview by default; apply=true moves it.",
		Annotations: ops.Annotations{Destructive: true},
		Scope:       auth.ScopeDestructive,
		CLI:         ops.CLI{Use: "rm", Args: []string{"path"}, Text: ops.TextWrite, Short: "Move a note to .trash/ (preview; --apply does it)"},
		Errors:      ops.WithErrors(errs.CodeNotFound, errs.CodeAmbiguous),
		Example:     `{"path": "Inbox/Unsorted.md", "apply": true}`,
		Toolset:     ops.ToolsetWrites,
		Handler:     deleteNote,
	}
}

func deleteNote(ctx context.Context, env *ops.Env, in *DeleteNoteIn) (*ops.WriteResult, error) {
	return noteWrite(ctx, env, "delete_note", in, in.Vault, in.Path, in.Note, &in.Guard, &in.WriteOpts, func(s *ops.Stage, rel, want string) error {
		f, err := s.Read(rel)
		if err != nil {
			return err
		}
		if !f.Exists {
			return errs.New(errs.CodeNotFound, "note not found: %s", rel).With("path", rel)
		}
		if err := ops.CheckGuard(f, want); err != nil {
			return err
		}
		if utf8.Valid(f.Raw) {
			f.Text = f.Format.Decode(f.Raw)
		}
		s.Main = rel
		if err := s.Trash(f); err != nil {
			return err
		}
		s.Warnings = append(s.Warnings, ops.InboundWarning(ctx, s.Vault, rel)...)
		return nil
	})
}
