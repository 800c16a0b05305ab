package ops

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
)

// SearcherFor returns a searcher over the vault's index with its vectors
// and the fusion settings of its config (search section).
func SearcherFor(vh *VaultHandle) *search.Searcher {
	sc := vh.Index.SearchSettings()
	return &search.Searcher{DB: vh.Index.DB, Vectors: vh.Index, Shared: vh.searchShared(),
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

// searchCacheSize and searchCacheBytes bound a vault's search cache: at
// most 512 responses (one of 10 results is about 4 KB) and about 16 MB
// (200-result pages take more room).
const (
	searchCacheSize  = 512
	searchCacheBytes = 16 << 20
)

// searchShared is what every search of the vault shares: prepared
// statements and title words (search.Shared), made once.
func (vh *VaultHandle) searchShared() *search.Shared {
	vh.sharedOnce.Do(func() { vh.shared = search.NewShared(vh.Index.DB) })
	return vh.shared
}

func (vh *VaultHandle) searchCache() *search.ResultCache {
	vh.searchOnce.Do(func() { vh.searchLRU = search.NewResultCache(searchCacheSize, searchCacheBytes) })
	return vh.searchLRU
}

// searchRevs is one read of what a search's response depends on in the
// index besides the request: the content revision (every sync that
// changes notes bumps it), the vectors revision, whether the vectors are
// complete and the embedding model. "" and false when it cannot be read.
func searchRevs(ctx context.Context, vh *VaultHandle) (vectorsRev, key string, ok bool) {
	var content, vectors, complete, model sql.NullString
	err := vh.Index.DB.QueryRowContext(ctx, `SELECT
		(SELECT value FROM meta WHERE key='content_rev'), (SELECT value FROM meta WHERE key='vectors_rev'),
		(SELECT value FROM meta WHERE key='embed_complete'), (SELECT value FROM meta WHERE key='embed_model')`).
		Scan(&content, &vectors, &complete, &model)
	if err != nil {
		return "", "", false
	}
	return vectors.String, content.String + "\x00" + vectors.String + "\x00" + complete.String + "\x00" + model.String, true
}

// Search runs q on vh with the call's read fence applied (Fence.Apply): a
// note the caller may not read is never a candidate, in any mode.
//
// Responses are cached per vault (an LRU bounded in entries and bytes), keyed by
// the index's revisions (searchRevs), the searcher's fusion settings, the
// whole request (search.Query.Key) and the fence's rules, so an edit, a
// new vector or a different fence never finds an old entry. A fenced hit
// is checked again against the fence's path predicate (a symbolic link
// re-pointed since): any refused result makes it a miss.
func Search(ctx context.Context, vh *VaultHandle, q search.Query) (*search.Response, error) {
	fence := FenceFor(ctx, vh)
	if err := fence.Apply(ctx, vh, &q); err != nil {
		return nil, err
	}
	s := SearcherFor(vh)
	if vh.searchCacheOff {
		return s.Search(ctx, q)
	}
	vrev, revs, ok := searchRevs(ctx, vh)
	if !ok {
		return s.Search(ctx, q)
	}
	fk := "\x00"
	if fence != nil {
		fk = "\x01" + fence.key
	}
	key := revs + "\x00" + fmt.Sprint(s.Fusion) + "\x00" + fk + "\x00" + q.Key()
	c := vh.searchCache()
	if resp, hit := c.Get(key); hit && allAllowed(q, resp) {
		return resp, nil
	}
	resp, err := s.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	// A server may rank with the matrix of an older vectors revision while
	// the new one loads: such a response is not filed under the new one.
	if resp.Mode == search.ModeLexical || vh.Index.LoadedVectorsRev() == vrev {
		c.Put(key, resp)
	}
	return resp, nil
}

func allAllowed(q search.Query, resp *search.Response) bool {
	if q.Allow == nil {
		return true
	}
	for _, r := range resp.Results {
		if !q.Allow(r.Path) {
			return false
		}
	}
	return true
}
