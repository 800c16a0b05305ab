package index

import (
	"context"
	"database/sql"
	"errors"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Match reasons of a lookup, best first.
const (
	MatchPath     = "path"
	MatchID       = "id"
	MatchFilename = "filename"
	MatchAlias    = "alias"
	MatchTitle    = "title"
)

var matchRank = map[string]int{MatchPath: 0, MatchID: 1, MatchFilename: 2, MatchAlias: 3, MatchTitle: 4}

// NoteMatch is one note a reference may mean.
type NoteMatch struct {
	ID    int64  `json:"-"`
	Path  string `json:"path" jsonschema:"vault-relative path of the note"`
	Title string `json:"title" jsonschema:"the note's title"`
	Kind  string `json:"kind" jsonschema:"note, page (Logseq page) or journal (Logseq journal)"`
	Match string `json:"match" jsonschema:"why it matched: path, id (frontmatter id), filename, alias or title"`
	// exact is set for an exact (not partial) path match.
	exact bool
}

// Ref is a parsed note reference: what a person or an agent calls a note.
type Ref struct {
	Target  string // the note part
	Heading string // "#Heading" part of a wikilink, without '#'
	BlockID string // "#^id" part of a wikilink, without '#^'
}

// ParseRef reads a note reference: a path, a title, an alias, an id, or
// wikilink text with or without brackets ("[[Note#Heading|shown]]").
func ParseRef(s string) Ref {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "!")
	if strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]]") && len(s) >= 4 {
		s = s[2 : len(s)-2]
	}
	if i := strings.IndexByte(s, '|'); i >= 0 {
		s = s[:i]
	}
	var r Ref
	if i := strings.IndexByte(s, '#'); i >= 0 {
		frag := strings.TrimSpace(s[i+1:])
		s = s[:i]
		if strings.HasPrefix(frag, "^") {
			r.BlockID = frag[1:]
		} else {
			r.Heading = frag
		}
	}
	r.Target = strings.TrimSpace(s)
	return r
}

// LookupNote returns every note a reference could mean, best first: an exact
// vault-relative path (with or without .md) wins alone; otherwise path
// suffixes, a frontmatter id, file names, aliases and titles, the way links
// resolve (see Resolver). target must already be confined (no traversal);
// it is only compared with stored paths.
func (ix *Index) LookupNote(ctx context.Context, target string) ([]NoteMatch, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return nil, nil
	}
	r, err := ix.CachedResolver(ctx)
	if err != nil {
		return nil, err
	}
	type cand struct {
		id    int64
		match string
		exact bool
	}
	var cands []cand
	seen := map[int64]int{} // id → index in cands
	add := func(id int64, match string, exact bool) {
		if id == 0 {
			return
		}
		if i, ok := seen[id]; ok {
			// Keep the strongest reason a note matched for.
			if matchRank[match] < matchRank[cands[i].match] {
				cands[i].match = match
			}
			return
		}
		seen[id] = len(cands)
		cands = append(cands, cand{id, match, exact})
	}
	key := targetKey(target)
	if id, ok := r.byPath[key]; ok {
		add(id, MatchPath, true)
	}
	rows, err := ix.DB.QueryContext(ctx, "SELECT DISTINCT note_id FROM props WHERE key = 'id' AND value = ? ORDER BY note_id", target)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, c := range r.Candidates("", "wikilink", target) {
		add(c.ID, c.Match, false)
	}
	for _, id := range ids {
		add(id, MatchID, false)
	}
	rows, err = ix.DB.QueryContext(ctx, "SELECT id FROM notes WHERE title_key = ? ORDER BY length(path), path", strings.ToLower(target))
	if err != nil {
		return nil, err
	}
	ids = ids[:0]
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		add(id, MatchTitle, false)
	}
	// Stable order: by match reason, then as found.
	sort.SliceStable(cands, func(i, j int) bool { return matchRank[cands[i].match] < matchRank[cands[j].match] })
	out := make([]NoteMatch, 0, len(cands))
	for _, c := range cands {
		m := NoteMatch{ID: c.id, Match: c.match, exact: c.exact}
		err := ix.DB.QueryRowContext(ctx, "SELECT path, title, kind FROM notes WHERE id = ?", c.id).Scan(&m.Path, &m.Title, &m.Kind)
		if err == sql.ErrNoRows {
			continue // removed since the resolver was loaded
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Best returns the one note a lookup means, or ok=false when the matches
// are empty or ambiguous (several notes share the best match reason and
// none is an exact path).
func Best(ms []NoteMatch) (NoteMatch, bool) {
	if len(ms) == 0 {
		return NoteMatch{}, false
	}
	if ms[0].exact {
		return ms[0], true
	}
	if len(ms) > 1 && ms[1].Match == ms[0].Match {
		return NoteMatch{}, false
	}
	return ms[0], true
}

// SimilarNotes suggests notes whose path or title contains the target's
// words, for "did you mean" hints; at most limit, shortest paths first.
func (ix *Index) SimilarNotes(ctx context.Context, target string, limit int) ([]string, error) {
	key := targetKey(target)
	if key == "" {
		return []string{}, nil
	}
	base := path.Base(key)
	return ix.strings(ctx, `SELECT path FROM notes
		WHERE instr(path_key, ?) > 0 OR instr(title_key, ?) > 0
			OR id IN (SELECT note_id FROM aliases WHERE instr(alias_key, ?) > 0)
		ORDER BY length(path), path LIMIT ?`, base, base, base, limit)
}

// CachedResolver returns a link resolver over the current notes, reloaded
// when the set of notes changed (its fingerprint: count, newest index time
// and id sum), so repeated lookups cost one small query.
func (ix *Index) CachedResolver(ctx context.Context) (*Resolver, error) {
	fp, err := ix.NotesFingerprint(ctx)
	if err != nil {
		return nil, err
	}
	ix.resMu.Lock()
	defer ix.resMu.Unlock()
	if ix.res != nil && ix.resKey == fp {
		return ix.res, nil
	}
	r, err := LoadResolver(ctx, ix.DB, ix.Vault.Kind)
	if err != nil {
		return nil, err
	}
	ix.res, ix.resKey = r, fp
	return r, nil
}

// NotesFingerprint identifies the current set of notes (their count,
// newest index time and id sum): it changes when a note is added,
// removed or re-indexed, by this process or another. Caches of what the
// notes are (the link resolver, the read fences' hidden notes) key on it.
func (ix *Index) NotesFingerprint(ctx context.Context) (string, error) {
	var n, newest, sum int64
	if err := ix.DB.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(MAX(indexed_at),0), COALESCE(SUM(id),0) FROM notes").Scan(&n, &newest, &sum); err != nil {
		return "", err
	}
	return strconv.FormatInt(n, 10) + ":" + strconv.FormatInt(newest, 10) + ":" + strconv.FormatInt(sum, 10), nil
}

// IDTaken reports whether a note of the index has frontmatter id id.
func (ix *Index) IDTaken(ctx context.Context, id string) (bool, error) {
	var one int
	err := ix.DB.QueryRowContext(ctx, "SELECT 1 FROM props WHERE key = 'id' AND value = ? LIMIT 1", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
