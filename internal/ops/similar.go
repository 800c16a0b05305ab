package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
)

// searcherFor returns a searcher over the vault's index with its vectors
// and the fusion settings of its config (search section).
func searcherFor(vh *VaultHandle) *search.Searcher {
	sc := vh.Index.SearchSettings()
	return &search.Searcher{DB: vh.Index.DB, Vectors: vh.Index,
		Fusion: search.Fusion{K: sc.RRFK, Lexical: sc.LexicalWeight, Semantic: sc.SemanticWeight, Graph: sc.GraphWeight, MinSimilarity: sc.MinSimilarity}}
}

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
	if err := eitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if err := checkGlob(in.PathGlob); err != nil {
		return err
	}
	return checkLimit(in.Limit, 50)
}

// SimilarNote is one note of find_similar.
type SimilarNote struct {
	Path        string   `json:"path" jsonschema:"vault-relative path"`
	Title       string   `json:"title" jsonschema:"the note's title"`
	Score       float64  `json:"score" jsonschema:"mean, over the note's sections, of the best cosine with a section of this note (1 = same direction)"`
	HeadingPath []string `json:"heading_path" jsonschema:"headings above its section closest to the note"`
	Line        int      `json:"line" jsonschema:"first line of that section"`
}

// FindSimilarOut is the output of find_similar.
type FindSimilarOut struct {
	Path  string        `json:"path" jsonschema:"the note compared against"`
	Model string        `json:"model" jsonschema:"the embedding model of the vectors"`
	Notes []SimilarNote `json:"notes" jsonschema:"the most similar notes, best first, the note itself excluded"`
}

func registerSimilarOps(r *Registry) {
	Add(r, Def[FindSimilarIn, FindSimilarOut]{
		Name:  "find_similar",
		Title: "Find similar notes",
		Description: "The notes most similar in meaning to a given note (by path or reference), best first, with the closest section of each. " +
			"Uses the index's vectors (for each section of the note, its closest section in every other note; a note scores the mean of those cosines); useful to find related notes to link, duplicates, or more on a topic.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "similar", Args: []string{"path"}, Text: textSimilar},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound, errs.CodeEmbedUnavailable, errs.CodeEmbedMismatch},
		Example:     `{"path": "Projects/Project Atlas.md", "limit": 5}`,
		Handler:     findSimilar,
	})
}

func findSimilar(ctx context.Context, env *Env, in *FindSimilarIn) (*FindSimilarOut, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	rel, _, _, err := notePath(ctx, vh, in.Path, in.Note)
	if err != nil {
		return nil, err
	}
	n, err := vh.Index.NoteByPath(ctx, rel)
	if err != nil {
		return nil, err
	}
	m, err := vh.Index.VectorMatrix(ctx)
	if err != nil {
		return nil, err
	}
	if len(m.NoteRows(n.ID)) == 0 {
		return nil, errs.New(errs.CodeEmbedUnavailable, "note %s has no vector yet; run `loci index`", rel).With("path", rel)
	}
	var paths map[int64]string
	if in.PathGlob != "" {
		paths = map[int64]string{}
		notes, err := vh.Index.ListNotes(ctx, false)
		if err != nil {
			return nil, err
		}
		for _, x := range notes {
			if globMatch(in.PathGlob, x.Path) {
				paths[x.ID] = x.Path
			}
		}
	}
	allow := func(id int64) bool {
		if id == n.ID {
			return false
		}
		if paths != nil {
			_, ok := paths[id]
			return ok
		}
		return true
	}
	id, _ := vh.Index.StoredIdentity(ctx)
	out := &FindSimilarOut{Path: rel, Model: id.String(), Notes: []SimilarNote{}}
	for _, h := range m.SimilarNotes(n.ID, orDefault(in.Limit, 10), allow) {
		s := SimilarNote{Score: float64(int64(float64(h.Score)*1e4+0.5)) / 1e4, HeadingPath: []string{}}
		var hp string
		err := vh.Index.DB.QueryRowContext(ctx, `SELECT n.path, n.title, c.heading_path, c.start_line FROM chunks c JOIN notes n ON n.id = c.note_id WHERE c.id = ?`, h.Chunk).
			Scan(&s.Path, &s.Title, &hp, &s.Line)
		if err != nil {
			continue // deleted meanwhile
		}
		json.Unmarshal([]byte(hp), &s.HeadingPath)
		out.Notes = append(out.Notes, s)
	}
	return out, nil
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
