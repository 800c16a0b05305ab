package search

import (
	"context"
	"database/sql"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/loci-dev/loci/internal/errs"
)

// Column weights for bm25(): title (with aliases), heading path, body, tags.
const bm25Args = "bm25(chunks_fts, 8.0, 4.0, 1.0, 4.0)"

// Query is a lexical search request.
type Query struct {
	Text     string
	Limit    int // default 10, at most 200
	Offset   int
	PathGlob string   // doublestar glob over vault-relative paths
	Tags     []string // every tag must be present; "a" also matches "a/b"
	// Frontmatter filters: key → value; a note matches when the key has
	// that value (lists match any element; "*" matches any value).
	Frontmatter map[string]string
	// Date ranges (inclusive, YYYY-MM-DD or any ISO-8601 prefix) on the
	// frontmatter created / updated fields (updated falls back to the file's mtime).
	CreatedFrom, CreatedTo, UpdatedFrom, UpdatedTo string
	// Mode is lexical, semantic or hybrid; "" picks hybrid when the index
	// has usable vectors, else lexical.
	Mode string
	// ExpandLinks adds the notes linked from and to the top hits, at a
	// lower score (graph expansion).
	ExpandLinks bool
	// Explain fills Result.Explain with each result's ranks and contributions.
	Explain bool
	// Sort and Order order a listing (Text empty, HasFilter true; see
	// list): Sort is updated (default), created, title or path; Order asc
	// or desc (default: desc for dates, asc for title and path).
	Sort, Order string
	// GroupBy is note (default: one result per note, its best section) or
	// section (each result one section; several of a note may appear).
	GroupBy string
	// Fusion overrides the searcher's fusion settings for this query.
	Fusion *Fusion
	// Allow, when set, is a predicate over vault-relative paths: a note
	// it refuses is never a candidate (lexical, semantic, hybrid and
	// graph expansion alike), so it is removed before ranking and paging
	// and page sizes and cursors stay right. The read fences use it.
	// Every note's path is checked, unless Hidden is set: then Hidden
	// sorts the candidates and Allow checks the returned page again.
	Allow func(path string) bool
	// Hidden, when set, names the notes (by id) that are never candidates:
	// the read fences' precomputed form of Allow, which spares a pass over
	// every note's path.
	Hidden func(noteID int64) bool
}

// Result is one note.
type Result struct {
	Path        string   `json:"path"`
	Title       string   `json:"title"`
	HeadingPath []string `json:"heading_path"`
	Line        int      `json:"line"`
	EndLine     int      `json:"end_line"`
	Score       float64  `json:"score"`
	Snippet     string   `json:"snippet"`
	// Matched says how the result was found: every query term matched
	// ("all"), some did in the relaxed any-term pass ("any"), only by
	// meaning ("semantic"), or only through a link from a top hit ("link").
	Matched string `json:"matched"`
	// BlockUUID is the id:: of the Logseq block a section starts with
	// (group_by section only).
	BlockUUID string `json:"block_uuid,omitempty"`
	// Explain is set when the query asked for it.
	Explain *Explain `json:"explain,omitempty"`
	NoteID  int64    `json:"-"`
	ChunkID int64    `json:"-"`
}

// Response is a page of results.
type Response struct {
	Results []Result `json:"results"`
	// HasMore is true when more results exist past this page.
	HasMore bool `json:"has_more"`
	// Mode is the retrieval mode used.
	Mode string `json:"mode"`
	// Vectors is "partial" when the index's vectors are not complete yet
	// (a background embedder is at work, or failed): the default mode was
	// then lexical, and a semantic or hybrid search used the vectors there
	// are. Absent otherwise, and in lexical mode asked for by name.
	Vectors string `json:"vectors,omitempty"`
}

type hit struct {
	note, chunk int64
	score       float64
	matched     string
	// anchor and desc are the note's anchor-text and description BM25
	// parts (weighted, negative: lower is better), included in score.
	anchor, desc float64
}

// Searcher runs queries against an index database.
type Searcher struct {
	DB *sql.DB
	// Vectors, when set, enables semantic and hybrid modes.
	Vectors VectorSource
	// Fusion tunes hybrid ranking (zero fields take the defaults).
	Fusion Fusion
	// Shared, when set (and made for DB), keeps prepared statements and
	// title words across the calls of every Searcher given it (shared.go).
	Shared *Shared
}

// Search runs q: lexical (BM25), semantic (vectors) or hybrid (both, fused
// by reciprocal rank), optionally expanded along links (see hybrid.go).
func (s *Searcher) Search(ctx context.Context, q Query) (*Response, error) {
	if q.Limit <= 0 {
		q.Limit = 10
	}
	if q.Limit > 200 {
		q.Limit = 200
	}
	if q.Offset < 0 || q.Offset > MaxOffset {
		return nil, errs.New(errs.CodeInvalidInput, "offset must be between 0 and %d, not %d", MaxOffset, q.Offset).
			With("offset", q.Offset).With("max_offset", MaxOffset)
	}
	if len(q.PathGlob) > MaxPathGlobBytes {
		return nil, errs.New(errs.CodeInvalidInput, "the path glob is %d bytes long; at most %d are accepted", len(q.PathGlob), MaxPathGlobBytes).
			With("bytes", len(q.PathGlob)).With("max_bytes", MaxPathGlobBytes)
	}
	if q.PathGlob != "" && !doublestar.ValidatePattern(q.PathGlob) {
		return nil, errs.New(errs.CodeInvalidInput, "invalid path glob %q", q.PathGlob).With("path_glob", q.PathGlob)
	}
	if len(q.Tags) > MaxFilterValues || len(q.Frontmatter) > MaxFilterValues {
		return nil, errs.New(errs.CodeInvalidInput, "at most %d tags and %d frontmatter filters are accepted (got %d and %d)", MaxFilterValues, MaxFilterValues, len(q.Tags), len(q.Frontmatter)).
			With("tags", len(q.Tags)).With("frontmatter", len(q.Frontmatter)).With("max", MaxFilterValues)
	}
	if err := checkBytes(q.Text); err != nil {
		return nil, err
	}
	if err := checkGroupBy(q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.Text) == "" && q.HasFilter() {
		return s.list(ctx, q)
	}
	mode, err := s.resolveMode(ctx, q.Mode)
	if err != nil {
		return nil, err
	}
	// Lexical mode matches every term, so the query is held to every
	// limit. Semantic mode embeds the query whole and matches only its
	// exclusions; hybrid matches its exclusions and as many of its other
	// terms as the limits allow (docs/search.md, "Limits").
	var terms, lex []term
	if mode == ModeLexical {
		terms, err = compileQuery(q.Text)
		lex = terms
	} else {
		terms, err = compileSemantic(q.Text)
		lex = lexicalPart(terms)
	}
	if err != nil {
		return nil, err
	}
	var resp *Response
	if mode != ModeLexical || q.ExpandLinks || q.Explain {
		resp, err = s.fused(ctx, q, mode, terms, lex)
	} else {
		resp, err = s.lexical(ctx, q, lex)
	}
	// The default mode came out hybrid only with every vector there.
	check := q.Mode != ModeLexical && (q.Mode != "" || mode != ModeHybrid)
	return markPartial(resp, err, err == nil && check && s.vectorsPartial(ctx))
}

// lexical is BM25 search alone: strict pass, then relaxed.
func (s *Searcher) lexical(ctx context.Context, q Query, terms []term) (*Response, error) {
	strict, relaxed := buildMatch(terms)
	resp := &Response{Results: []Result{}, Mode: ModeLexical}
	if strict == "" {
		return resp, nil
	}
	keep, err := s.filter(ctx, q)
	if err != nil {
		return nil, err
	}
	hits, relaxedSkipped, err := s.lexHits(ctx, terms, strict, relaxed, keep, q.Offset+q.Limit, q.GroupBy == GroupSection)
	if err != nil {
		return nil, err
	}
	if len(hits) > q.Offset+q.Limit || relaxedSkipped {
		resp.HasMore = true
	}
	if len(hits) > q.Offset+q.Limit {
		hits = hits[:q.Offset+q.Limit]
	}
	if q.Offset >= len(hits) {
		return resp, nil
	}
	hits = hits[q.Offset:]
	rs := make([]Result, 0, len(hits))
	for _, h := range hits {
		rs = append(rs, Result{NoteID: h.note, ChunkID: h.chunk, Score: round3(-h.score), Matched: h.matched})
	}
	if resp.Results, err = s.fillAll(ctx, q, rs, highlighter(terms)); err != nil {
		return nil, err
	}
	return resp, s.blockUUIDs(ctx, q, resp.Results)
}

// lexHits runs the strict pass, then the relaxed one if the strict pass
// found fewer than want+1 notes (sections, when bySection). relaxedSkipped
// reports that the relaxed pass was skipped because the strict one filled want.
func (s *Searcher) lexHits(ctx context.Context, terms []term, strict, relaxed string, keep func(int64) bool, want int, bySection bool) ([]hit, bool, error) {
	need := want + 1 // one more to know HasMore
	var hits []hit
	seen := map[int64]bool{}
	relaxedSkipped := false
	cs := s.callState(ctx)
	for _, pass := range []struct{ expr, matched string }{{strict, "all"}, {relaxed, "any"}} {
		if pass.expr == "" || len(hits) >= need {
			continue
		}
		// The relaxed (any-term) pass is costly when one term is common;
		// skip it when the strict pass already filled the page, and report
		// that more results exist.
		if pass.matched == "any" && len(hits) >= want {
			relaxedSkipped = true
			continue
		}
		expr := pass.expr
		if pass.matched == "any" {
			expr = s.pruneCommon(ctx, cs, terms, expr)
		}
		got, err := s.run(ctx, cs, expr, terms, keep, need, seen, bySection)
		if err != nil {
			return nil, false, err
		}
		for i := range got {
			got[i].matched = pass.matched
		}
		hits = append(hits, got...)
	}
	return hits, relaxedSkipped, nil
}

// callState is what one search reads once and its passes share: the
// content revision the Shared's titles and counts are kept under (cached
// false without a Shared) and the common-term bound (pruneCommon).
type callState struct {
	rev    string
	cached bool
	bound  int64 // 0 until read (commonBound)
}

func (s *Searcher) callState(ctx context.Context) *callState {
	cs := &callState{}
	cs.rev, cs.cached = s.revOf(ctx)
	return cs
}

// commonBound returns how many chunks make a term common: 4% of them, at
// least 1,000 (pruneCommon), read once per call.
func (s *Searcher) commonBound(ctx context.Context, cs *callState) (int64, error) {
	if cs.bound == 0 {
		var maxID int64
		if err := s.queryRow(ctx, "SELECT COALESCE(MAX(id), 0) FROM chunks").Scan(&maxID); err != nil {
			return 0, err
		}
		cs.bound = max(int64(1000), maxID/25)
	}
	return cs.bound, nil
}

// fillAll reads the note and chunk of each result (one query for the
// page) and cuts its snippet. A result whose chunk was deleted meanwhile
// is left out, and so is one whose path q.Allow refuses: the filter
// passed notes by id, and an id reused since must not bring in a note
// the predicate refuses.
func (s *Searcher) fillAll(ctx context.Context, q Query, rs []Result, hl hlTerms) ([]Result, error) {
	out := make([]Result, 0, len(rs))
	if len(rs) == 0 {
		return out, nil
	}
	ids := make([]int64, len(rs))
	for i, r := range rs {
		ids[i] = r.ChunkID
	}
	rows, err := s.query(ctx, `SELECT c.id, n.path, n.title, c.heading_path, c.start_line, c.end_line, c.text
		FROM chunks c JOIN notes n ON n.id = c.note_id WHERE c.id IN (SELECT value FROM json_each(?))`, idsJSON(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type row struct {
		path, title, hp, text string
		line, end             int
	}
	got := make(map[int64]row, len(rs))
	for rows.Next() {
		var id int64
		var x row
		if err := rows.Scan(&id, &x.path, &x.title, &x.hp, &x.line, &x.end, &x.text); err != nil {
			return nil, err
		}
		got[id] = x
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, r := range rs {
		x, ok := got[r.ChunkID]
		if !ok {
			continue // deleted between the two queries
		}
		r.Path, r.Title, r.Line, r.EndLine = x.path, x.title, x.line, x.end
		r.HeadingPath = []string{}
		json.Unmarshal([]byte(x.hp), &r.HeadingPath)
		r.Snippet = hl.snippet(x.text, 240)
		if q.Allow == nil || q.Allow(r.Path) {
			out = append(out, r)
		}
	}
	return out, nil
}

func round3(f float64) float64 {
	return float64(int64(f*1000+0.5)) / 1000
}

// run executes one MATCH expression and returns the best chunk of each new
// note, best first, until need notes are collected. A note's score is its
// best chunk's BM25 plus the BM25 of its note fields: its anchor text (the
// words other notes link to it with, anchors_fts, weighted AnchorWeight)
// and its description (descriptions_fts, DescriptionWeight). A note whose
// fields match climbs, and one whose text matches only there is found, at
// its first chunk (unless the query has -exclusions, which these fields
// cannot check against the note's own text; see addFields). With
// bySection every new chunk counts (seen then holds chunk ids) and the
// note fields, which describe a whole note, are left out. Last, each score is
// scaled by the title coverage of terms (boostCoverage, coverage.go).
func (s *Searcher) run(ctx context.Context, cs *callState, expr string, terms []term, keep func(int64) bool, need int, seen map[int64]bool, bySection bool) ([]hit, error) {
	neg := hasNeg(terms)
	fetch := need*8 + 32
	var out []hit
	floor := 0.0 // the score of the last chunk row read when more rows exist
	for {
		q := `SELECT c.note_id, f.rowid, f.s FROM (SELECT rowid, ` + bm25Args + ` AS s FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?+0) f
			JOIN chunks c ON c.id = f.rowid ORDER BY f.s`
		rows, err := s.query(ctx, q, expr, fetch)
		if err != nil {
			return nil, errs.Wrap(err, errs.CodeInternal, "search failed").With("match", expr)
		}
		out = out[:0]
		local := map[int64]bool{}
		n := 0
		for rows.Next() {
			n++
			var h hit
			if err := rows.Scan(&h.note, &h.chunk, &h.score); err != nil {
				rows.Close()
				return nil, err
			}
			floor = h.score
			unit := h.note
			if bySection {
				unit = h.chunk
			}
			if seen[unit] || local[unit] || (keep != nil && !keep(h.note)) {
				continue
			}
			local[unit] = true
			out = append(out, h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, errs.Wrap(err, errs.CodeInternal, "search failed").With("match", expr)
		}
		if n < fetch {
			floor = 0 // every matching chunk was read
		}
		if len(out) >= need || n < fetch {
			break
		}
		fetch *= 4
	}
	if !bySection {
		var err error
		if out, err = s.addFields(ctx, expr, keep, seen, out, need+32, neg, floor); err != nil {
			return nil, err
		}
	}
	if err := s.boostCoverage(ctx, cs, terms, out); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score < out[j].score })
	if len(out) > need {
		out = out[:need]
	}
	for _, h := range out {
		if bySection {
			seen[h.chunk] = true
		} else {
			seen[h.note] = true
		}
	}
	return out, nil
}

// firstChunks maps each note of hits to its first chunk (chunk ids follow
// the order of a note's chunks).
func (s *Searcher) firstChunks(ctx context.Context, hits []hit) (map[int64]int64, error) {
	out := make(map[int64]int64, len(hits))
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.note
	}
	rows, err := s.query(ctx, "SELECT note_id, MIN(id) FROM chunks WHERE note_id IN (SELECT value FROM json_each(?)) GROUP BY note_id", idsJSON(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var n, c int64
		if err := rows.Scan(&n, &c); err != nil {
			return nil, err
		}
		out[n] = c
	}
	return out, rows.Err()
}

// filter returns the predicate over note ids of q's filters, or nil when
// no filter is set.
func (s *Searcher) filter(ctx context.Context, q Query) (func(int64) bool, error) {
	allowed, err := s.allowedSet(ctx, q)
	if err != nil {
		return nil, err
	}
	switch {
	case allowed == nil && q.Hidden == nil:
		return nil, nil
	case allowed == nil:
		return func(id int64) bool { return !q.Hidden(id) }, nil
	case q.Hidden == nil:
		return func(id int64) bool { return allowed[id] }, nil
	}
	return func(id int64) bool { return allowed[id] && !q.Hidden(id) }, nil
}

// allowedSet returns the set of note ids allowed by q's filters (Allow
// among them unless Hidden stands for it), or nil when none is set.
func (s *Searcher) allowedSet(ctx context.Context, q Query) (map[int64]bool, error) {
	allow := q.Allow
	if q.Hidden != nil {
		allow = nil
	}
	where, args, err := s.filterWhere(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(where) == 0 && q.PathGlob == "" && allow == nil {
		return nil, nil
	}
	sqlq := "SELECT id, path FROM notes"
	if len(where) > 0 {
		sqlq += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.DB.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	allowed := map[int64]bool{}
	for rows.Next() {
		var id int64
		var p string
		if err := rows.Scan(&id, &p); err != nil {
			return nil, err
		}
		if q.PathGlob != "" {
			if ok, _ := doublestar.Match(q.PathGlob, p); !ok {
				continue
			}
		}
		if allow != nil && !allow(p) {
			continue
		}
		allowed[id] = true
	}
	return allowed, rows.Err()
}

// filterWhere returns the SQL conditions over notes of q's tag,
// frontmatter and date filters (the path glob and Allow are matched in Go).
func (s *Searcher) filterWhere(ctx context.Context, q Query) ([]string, []any, error) {
	var where []string
	var args []any
	for _, t := range q.Tags {
		t = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(t), "#"))
		if t == "" {
			continue
		}
		where = append(where, "id IN (SELECT note_id FROM tags WHERE tag_key = ? OR tag_key LIKE ? ESCAPE '\\')")
		args = append(args, t, escapeLike(t)+"/%")
	}
	keys := make([]string, 0, len(q.Frontmatter))
	for k := range q.Frontmatter {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := q.Frontmatter[k]
		if v == "*" {
			where = append(where, "id IN (SELECT note_id FROM props WHERE key = ?)")
			args = append(args, k)
		} else {
			// The value as written or unwrapped ([[X]] and #X ask for X),
			// or a link or tag value naming it (propvalue.go).
			n := unwrapValue(v)
			cond := "id IN (SELECT note_id FROM props WHERE key = ? AND (value = ? COLLATE NOCASE OR value = ? COLLATE NOCASE))"
			args = append(args, k, v, n)
			ids, err := s.linkValueNotes(ctx, k, n)
			if err != nil {
				return nil, nil, err
			}
			if ids != "" {
				cond = "(" + cond + " OR id IN (SELECT value FROM json_each(?)))"
				args = append(args, ids)
			}
			where = append(where, cond)
		}
	}
	for _, r := range []struct{ col, from, to string }{
		{"created", q.CreatedFrom, q.CreatedTo},
		{"COALESCE(updated, strftime('%Y-%m-%dT%H:%M:%S', mtime/1000000000, 'unixepoch'))", q.UpdatedFrom, q.UpdatedTo},
	} {
		if r.from != "" {
			if err := checkDate(r.from); err != nil {
				return nil, nil, err
			}
			where = append(where, r.col+" >= ?")
			args = append(args, r.from)
		}
		if r.to != "" {
			if err := checkDate(r.to); err != nil {
				return nil, nil, err
			}
			// Inclusive upper bound on a date prefix: 2024-01-31 includes 2024-01-31T23:59.
			where = append(where, r.col+" < ?")
			args = append(args, r.to+"\uffff")
		}
	}
	return where, args, nil
}

func checkDate(s string) error {
	for _, layout := range []string{"2006-01-02", "2006-01", "2006", "2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if _, err := time.Parse(layout, s); err == nil {
			return nil
		}
	}
	return errs.New(errs.CodeInvalidInput, "invalid date %q: use YYYY-MM-DD", s).With("value", s)
}

func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// pruneCommon drops very common terms from the relaxed (any-term) pass when
// a rarer one remains: BM25 scores every row that matches any term, so a
// query like "notes kapoor" spent ~40 ms ranking every chunk that says
// "notes" in the relaxed pass, only to rank them below the few that say
// "kapoor". A term is common when it matches more than 4% of the chunks
// (at least 1,000: commonBound); the count stops at that bound, so checking
// is cheap, and a Shared keeps it per content revision.
func (s *Searcher) pruneCommon(ctx context.Context, cs *callState, terms []term, expr string) string {
	cands := relaxedCandidates(terms)
	if len(cands) < 2 {
		return expr
	}
	bound, err := s.commonBound(ctx, cs)
	if err != nil {
		return expr
	}
	var keep []term
	for _, t := range cands {
		n, err := s.termCount(ctx, cs.rev, cs.cached, ftsTerm(t), bound)
		if err != nil || n <= bound {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 || len(keep) == len(cands) {
		return expr
	}
	return relaxedExpr(keep, terms)
}

// hasNeg reports whether terms hold an -exclusion.
func hasNeg(terms []term) bool {
	for _, t := range terms {
		if t.neg {
			return true
		}
	}
	return false
}
