package read

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// ResolveNoteIn is the input of resolve_note.
type ResolveNoteIn struct {
	Note  string `json:"note" jsonschema:"what to resolve: a vault-relative path, a frontmatter id, a title, an alias, a file name or [[wikilink]] text"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the reference is not empty.
func (in *ResolveNoteIn) Validate() error {
	if strings.TrimSpace(in.Note) == "" {
		return errs.New(errs.CodeInvalidInput, "note is empty")
	}
	return nil
}

// ResolveNoteOut is the output of resolve_note.
type ResolveNoteOut struct {
	Note       string            `json:"note" jsonschema:"the reference as received"`
	Resolved   string            `json:"resolved,omitempty" jsonschema:"the path it unambiguously means, if any"`
	Ambiguous  bool              `json:"ambiguous" jsonschema:"true when several notes match equally well"`
	Candidates []index.NoteMatch `json:"candidates" jsonschema:"every note it may mean, best first (empty when none)"`
}

// ResolveNote is the resolve_note operation.
func ResolveNote() ops.Def[ResolveNoteIn, ResolveNoteOut] {
	return ops.Def[ResolveNoteIn, ResolveNoteOut]{
		Name:  "resolve_note",
		Title: "Resolve a note reference",
		Description: "Find which note a name refers to: a path, frontmatter id, title, alias, file name or [[wikilink]] text. " +
			"Returns every candidate with why it matched (path, id, filename, alias, title) and its title, best first; resolved is set when one note is meant. " +
			"An empty list means no note matches.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "resolve", Args: []string{"note"}, Text: textResolve},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeVaultNotFound},
		Example:     `{"note": "[[Ada]]"}`,
		Handler: func(ctx context.Context, env *ops.Env, in *ResolveNoteIn) (*ResolveNoteOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			_, _, ms, err := ops.LookupRef(ctx, vh, in.Note)
			if err != nil {
				return nil, err
			}
			out := &ResolveNoteOut{Note: in.Note, Candidates: ms}
			if out.Candidates == nil {
				out.Candidates = []index.NoteMatch{}
			}
			if best, ok := index.Best(ms); ok {
				out.Resolved = best.Path
			} else {
				out.Ambiguous = len(ms) > 1
			}
			return out, nil
		},
	}
}

func textResolve(o any) string {
	out := o.(*ResolveNoteOut)
	if len(out.Candidates) == 0 {
		return "no note matches\n"
	}
	var b strings.Builder
	for _, c := range out.Candidates {
		fmt.Fprintf(&b, "%-9s %s  (%s)\n", c.Match, c.Path, c.Title)
	}
	if out.Ambiguous {
		b.WriteString("ambiguous: pass one of these paths\n")
	}
	return b.String()
}
