package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
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
	if err := EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if err := CheckGlob(in.PathGlob); err != nil {
		return err
	}
	return CheckLimit(in.Limit, 50)
}

// FindSimilarOut is the output of find_similar.
type FindSimilarOut struct {
	Path  string        `json:"path" jsonschema:"the note compared against"`
	Model string        `json:"model" jsonschema:"the embedding model of the vectors"`
	Notes []SimilarNote `json:"notes" jsonschema:"the most similar notes, best first, the note itself excluded"`
}

func registerSimilarOps(r *Registry) {
	register(r, FindSimilar())
}

func findSimilar(ctx context.Context, env *Env, in *FindSimilarIn) (*FindSimilarOut, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	rel, _, _, err := NotePath(ctx, vh, in.Path, in.Note)
	if err != nil {
		return nil, err
	}
	model, notes, err := SimilarNotes(ctx, vh, rel, OrDefault(in.Limit, 10), in.PathGlob)
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

// explainLine renders a result's explain for the text output.
func explainLine(e *search.Explain) string {
	if e == nil {
		return ""
	}
	var parts []string
	if e.LexicalRank > 0 {
		parts = append(parts, fmt.Sprintf("lexical #%d (bm25 %.2f)", e.LexicalRank, e.LexicalScore))
	} else {
		parts = append(parts, "lexical -")
	}
	if e.VectorRank > 0 {
		parts = append(parts, fmt.Sprintf("vector #%d (cos %.3f)", e.VectorRank, e.VectorScore))
	} else {
		parts = append(parts, "vector -")
	}
	if e.Graph > 0 {
		parts = append(parts, fmt.Sprintf("graph +%.4f via %s", e.Graph, strings.Join(e.Via, ", ")))
	}
	return fmt.Sprintf("explain: %s; fused %.4f", strings.Join(parts, ", "), e.Fused)
}

// vectorsLine renders the embedding part of index_status.
func vectorsLine(v index.VectorStatus) string {
	var b strings.Builder
	switch {
	case v.Model == "":
		fmt.Fprintf(&b, "vectors:      none (embedder: %s)\n", v.Configured)
	default:
		fmt.Fprintf(&b, "vectors:      %d sections, %s/%s (%d dims), %.1f MB in memory\n", v.Chunks, v.Provider, v.Model, v.Dims, float64(v.MemoryBytes)/1e6)
	}
	if v.Mismatch {
		fmt.Fprintf(&b, "              the configured embedder is %s: run `loci index --reset`\n", v.Configured)
	}
	if v.ConfigError != "" {
		fmt.Fprintf(&b, "              embedding settings: %s\n", v.ConfigError)
	}
	fmt.Fprintf(&b, "search mode:  %s by default\n", v.DefaultMode)
	return b.String()
}

// FindSimilar is the find_similar operation.
func FindSimilar() Def[FindSimilarIn, FindSimilarOut] {
	return Def[FindSimilarIn, FindSimilarOut]{
		Name:  "find_similar",
		Title: "Find similar notes",
		Description: "The notes most similar in meaning to a given note (by path or reference), best first, with the closest section of each. " +
			"Uses the index's vectors (for each section of the note, its closest section in every other note; a note scores the mean of those cosines); useful to find related notes to link, duplicates, or more on a topic.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "similar", Args: []string{"path"}, Text: textSimilar},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound, errs.CodeEmbedUnavailable, errs.CodeEmbedMismatch},
		Example:     `{"path": "Projects/Project Atlas.md", "limit": 5}`,
		Handler:     findSimilar,
	}
}
