package ops

import (
	"context"
	"encoding/json"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
)

// SearcherFor returns a searcher over the vault's index with its vectors
// and the fusion settings of its config (search section).
func SearcherFor(vh *VaultHandle) *search.Searcher {
	sc := vh.Index.SearchSettings()
	return &search.Searcher{DB: vh.Index.DB, Vectors: vh.Index,
		Fusion: search.Fusion{K: sc.RRFK, Lexical: sc.LexicalWeight, Semantic: sc.SemanticWeight, Graph: sc.GraphWeight, MinSimilarity: sc.MinSimilarity, AgreementFloor: sc.AgreementFloor, LexicalMargin: sc.LexicalMargin}}
}

// SimilarNote is one note of find_similar.
type SimilarNote struct {
	Path        string   `json:"path" jsonschema:"vault-relative path"`
	Title       string   `json:"title" jsonschema:"the note's title"`
	Score       float64  `json:"score" jsonschema:"mean, over the note's sections, of the best cosine with a section of this note (1 = same direction)"`
	HeadingPath []string `json:"heading_path" jsonschema:"headings above its section closest to the note"`
	Line        int      `json:"line" jsonschema:"first line of that section"`
}

// SimilarNotes returns the notes closest in meaning to the indexed note rel,
// best first, the note itself excluded: for each section of rel, its closest
// section in every other note; a note scores the mean of those cosines. With
// pathGlob only notes whose path matches it are compared. model names the
// embedding model of the vectors. find_similar and ai_relate share it.
func SimilarNotes(ctx context.Context, vh *VaultHandle, rel string, limit int, pathGlob string) (model string, notes []SimilarNote, err error) {
	n, err := vh.Index.NoteByPath(ctx, rel)
	if err != nil {
		return "", nil, err
	}
	m, err := vh.Index.VectorMatrix(ctx)
	if err != nil {
		return "", nil, err
	}
	if len(m.NoteRows(n.ID)) == 0 {
		return "", nil, errs.New(errs.CodeEmbedUnavailable, "note %s has no vector yet; run `loci index`", rel).With("path", rel)
	}
	var paths map[int64]string
	if fence := FenceFor(ctx, vh); pathGlob != "" || fence != nil {
		// Only notes the call's read fence shows are compared.
		paths = map[int64]string{}
		all, err := vh.Index.ListNotes(ctx, false)
		if err != nil {
			return "", nil, err
		}
		if all, err = VisibleByID(ctx, fence, vh, all, func(n index.NoteSummary) int64 { return n.ID }); err != nil {
			return "", nil, err
		}
		for _, x := range all {
			if GlobMatch(pathGlob, x.Path) {
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
	notes = []SimilarNote{}
	for _, h := range m.SimilarNotes(n.ID, limit, allow) {
		s := SimilarNote{Score: float64(int64(float64(h.Score)*1e4+0.5)) / 1e4, HeadingPath: []string{}}
		var hp string
		err := vh.Index.DB.QueryRowContext(ctx, `SELECT n.path, n.title, c.heading_path, c.start_line FROM chunks c JOIN notes n ON n.id = c.note_id WHERE c.id = ?`, h.Chunk).
			Scan(&s.Path, &s.Title, &hp, &s.Line)
		if err != nil {
			continue // deleted meanwhile
		}
		json.Unmarshal([]byte(hp), &s.HeadingPath)
		notes = append(notes, s)
	}
	return id.String(), notes, nil
}

// Search runs q on vh with the call's read fence applied (Fence.Apply): a
// note the caller may not read is never a candidate, in any mode.
func Search(ctx context.Context, vh *VaultHandle, q search.Query) (*search.Response, error) {
	if err := FenceFor(ctx, vh).Apply(ctx, vh, &q); err != nil {
		return nil, err
	}
	return SearcherFor(vh).Search(ctx, q)
}
