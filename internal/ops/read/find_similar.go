package read

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// FindSimilarIn is the input of find_similar.
type FindSimilarIn struct {
	Path     string `json:"path,omitempty" jsonschema:"vault-relative path of the note (or use note)"`
	Note     string `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Limit    int    `json:"limit,omitempty" jsonschema:"number of notes, 1-50 (default 10)"`
	PathGlob string `json:"path_glob,omitempty" jsonschema:"only notes whose vault-relative path matches this glob"`
	Vault    string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the note and the bounds.
func (in *FindSimilarIn) Validate() error {
	if err := ops.EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if err := ops.CheckGlob(in.PathGlob); err != nil {
		return err
	}
	return ops.CheckLimit(in.Limit, 50)
}

// FindSimilarOut is the output of find_similar.
type FindSimilarOut struct {
	Path  string            `json:"path" jsonschema:"the note compared against"`
	Model string            `json:"model" jsonschema:"the embedding model of the vectors"`
	Notes []ops.SimilarNote `json:"notes" jsonschema:"the most similar notes, best first, the note itself excluded"`
}

// FindSimilar is the find_similar operation.
func FindSimilar() ops.Def[FindSimilarIn, FindSimilarOut] {
	return ops.Def[FindSimilarIn, FindSimilarOut]{
		Name:  "find_similar",
		Title: "Find similar notes",
		Description: "The notes most similar in meaning to a given note (by path or reference), best first, with the closest section of each. " +
			"Uses the index's vectors (for each section of the note, its closest section in every other note; a note scores the mean of those cosines); useful to find related notes to link, duplicates, or more on a topic.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "similar", Args: []string{"path"}, Text: textSimilar},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound, errs.CodeEmbedUnavailable, errs.CodeEmbedMismatch},
		Example:     `{"path": "Projects/Project Atlas.md", "limit": 5}`,
		Handler:     findSimilar,
	}
}

func findSimilar(ctx context.Context, env *ops.Env, in *FindSimilarIn) (*FindSimilarOut, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	rel, _, _, err := ops.NotePath(ctx, vh, in.Path, in.Note)
	if err != nil {
		return nil, err
	}
	model, notes, err := ops.SimilarNotes(ctx, vh, rel, ops.OrDefault(in.Limit, 10), in.PathGlob)
	if err != nil {
		return nil, err
	}
	return &FindSimilarOut{Path: rel, Model: model, Notes: notes}, nil
}

func textSimilar(o any) string {
	out := o.(*FindSimilarOut)
	if len(out.Notes) == 0 {
		return "no similar notes\n"
	}
	var b strings.Builder
	for i, n := range out.Notes {
		fmt.Fprintf(&b, "%2d. %s  (%.3f)\n    %s:%d", i+1, n.Title, n.Score, n.Path, n.Line)
		if len(n.HeadingPath) > 0 {
			fmt.Fprintf(&b, "  › %s", strings.Join(n.HeadingPath, " › "))
		}
		b.WriteString("\n")
	}
	return b.String()
}
