package write

import (
	"context"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// EditNoteIn is the input of edit_note.
type EditNoteIn struct {
	Path    string           `json:"path,omitempty" jsonschema:"vault-relative path of the note (or use note)"`
	Note    string           `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Patches []noteedit.Patch `json:"patches" jsonschema:"the changes, applied in order as one atomic edit; each patch sees the result of the previous ones (so list line-number patches bottom-up). All must apply or nothing is written"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks the note and every patch.
func (in *EditNoteIn) Validate() error {
	if err := ops.EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if len(in.Patches) == 0 || len(in.Patches) > 200 {
		return errs.New(errs.CodeInvalidInput, "pass 1 to 200 patches")
	}
	for i := range in.Patches {
		if err := in.Patches[i].Check(i); err != nil {
			return err
		}
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// EditNote is the edit_note operation.
func EditNote() ops.Def[EditNoteIn, ops.WriteResult] {
	return ops.Def[EditNoteIn, ops.WriteResult]{
		Name:  "edit_note",
		Title: "Edit a note",
		Description: "Change a note with patches applied in order as one atomic edit: replace_lines, insert_lines, delete_lines (1-based lines as read_note numbers them), " +
			"replace_text (exact text, expected_count occurrences), insert_after_heading, append_to_section, replace_section (by heading text or path), " +
			"set_frontmatter / delete_frontmatter (only that key's lines change; key order, comments and every other byte stay), add_tags / remove_tags. " +
			"Pass the etag you read as if_match. Preview (a unified diff) by default; apply=true writes it. The file keeps its line endings, BOM and final newline.",
		Annotations: ops.Annotations{Destructive: true},
		CLI:         ops.CLI{Use: "edit", Args: []string{"path"}, Text: ops.TextWrite, Short: "Edit a note with patches (preview; --apply writes it)"},
		Errors:      ops.WithErrors(errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeInvalidUTF8),
		Example:     `{"path": "Projects/Project Atlas.md", "if_match": "99ff78b3660ad4a5dadd9f27433296e64164e8859895cc744bf68ac10704c96a", "patches": [{"op": "append_to_section", "heading": "Goals", "content": "- Ship safe writes."}, {"op": "set_frontmatter", "key": "status", "value": "done"}]}`,
		Toolset:     ops.ToolsetWrites,
		Handler:     editNote,
	}
}

func editNote(ctx context.Context, env *ops.Env, in *EditNoteIn) (*ops.WriteResult, error) {
	return noteWrite(ctx, env, "edit_note", in, in.Vault, in.Path, in.Note, &in.Guard, &in.WriteOpts, func(s *ops.Stage, rel, want string) error {
		f, err := s.ReadGuarded(rel, want)
		if err != nil {
			return err
		}
		outline, _ := s.Vault.Vault.LogseqFile(rel)
		d := noteedit.NewDoc(rel, f.Text, outline)
		for i := range in.Patches {
			note, err := d.Apply(i, &in.Patches[i])
			if err != nil {
				return err
			}
			if note != "" {
				s.Warnings = append(s.Warnings, note)
			}
		}
		s.Main = rel
		s.Put(f, d.Text())
		return nil
	})
}
