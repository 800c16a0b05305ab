package search

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"sync"
)

// Shared is what the searches of one index share across calls: the
// prepared statements of their fixed SQL and the title words the
// coverage boost compares, kept per content revision. A Searcher is
// cheap and made per call (ops.SearcherFor); a Shared lives as long as
// the index's *sql.DB and is safe for concurrent use. A Searcher without
// one prepares its SQL on every call and reads titles every time, with
// the same results.
//
// Closing the DB releases the statements (database/sql closes a
// connection's statements with it); Close releases them earlier.
type Shared struct {
	db *sql.DB

	mu    sync.Mutex
	stmts map[string]*sql.Stmt

	// What is valid while the index's content_rev is rev (tmu guards it):
	// titles, each note's folded title, alias and path words and their
	// stems (coverageWords); counts, how many chunks hold a term, counted
	// up to the common-term bound (pruneCommon).
	tmu    sync.Mutex
	rev    string
	titles map[int64]coverageWords
	counts map[string]int64
}

// NewShared returns the shared state of the searches over db.
func NewShared(db *sql.DB) *Shared {
	sh := &Shared{db: db, stmts: map[string]*sql.Stmt{}}
	sh.rev = "\x00" // no revision reads as this: the first call resets
	sh.resetLocked("")
	return sh
}

// maxStmts bounds the statements kept: only fixed SQL texts are prepared
// through Shared, so the bound is never reached by normal use.
const maxStmts = 64

// maxTitles bounds the notes whose title words are kept, and maxCounts
// the terms whose counts are; past them they start again (a vault of
// more notes than this reads some titles twice, never a stale one).
const (
	maxTitles = 100_000
	maxCounts = 100_000
)

// Close closes the prepared statements.
func (sh *Shared) Close() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for k, st := range sh.stmts {
		st.Close()
		delete(sh.stmts, k)
	}
}

// Forget drops the title words and term counts kept (the statements stay), as
// a new content revision does: the next search reads them again.
func (sh *Shared) Forget() {
	sh.tmu.Lock()
	defer sh.tmu.Unlock()
	sh.resetLocked("\x00") // no revision reads as this
}

// revOf returns the content revision the call's kept titles and counts
// are read under, and false without a usable Shared (nothing is kept).
func (s *Searcher) revOf(ctx context.Context) (string, bool) {
	sh := s.Shared
	if sh == nil || sh.db != s.DB {
		return "", false
	}
	var rev sql.NullString
	if err := s.queryRow(ctx, "SELECT value FROM meta WHERE key = 'content_rev'").Scan(&rev); err != nil && err != sql.ErrNoRows {
		return "", false
	}
	return rev.String, true
}

// resetLocked empties what is kept when the revision moved on. sh.tmu is held.
func (sh *Shared) resetLocked(rev string) {
	if sh.rev != rev {
		sh.rev = rev
		sh.titles = map[int64]coverageWords{}
		sh.counts = map[string]int64{}
	}
}

// termCount returns how many chunks hold the FTS5 phrase, counted up to
// bound+1 (pruneCommon); kept per revision when cached.
func (s *Searcher) termCount(ctx context.Context, rev string, cached bool, phrase string, bound int64) (int64, error) {
	key := strconv.FormatInt(bound, 10) + "\x00" + phrase
	sh := s.Shared
	if cached {
		sh.tmu.Lock()
		sh.resetLocked(rev)
		n, hit := sh.counts[key]
		sh.tmu.Unlock()
		if hit {
			return n, nil
		}
	}
	var n int64
	if err := s.queryRow(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?+0)", phrase, bound+1).Scan(&n); err != nil {
		return 0, err
	}
	if cached {
		sh.tmu.Lock()
		if sh.rev == rev { // else a sync ended meanwhile: not filed
			if len(sh.counts) >= maxCounts {
				sh.counts = map[string]int64{}
			}
			sh.counts[key] = n
		}
		sh.tmu.Unlock()
	}
	return n, nil
}

// stmt returns the prepared statement of query, preparing it once.
func (sh *Shared) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	sh.mu.Lock()
	st := sh.stmts[query]
	sh.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := sh.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old := sh.stmts[query]; old != nil { // another call prepared it meanwhile
		st.Close()
		return old, nil
	}
	if len(sh.stmts) < maxStmts {
		sh.stmts[query] = st
	}
	return st, nil
}

// query runs a fixed SQL text: prepared once when s has a Shared, else
// prepared by this call.
//
// A statement over an FTS5 table writes its LIMIT as `?+0`, not `?`:
// SQLite offers a bare LIMIT parameter to the virtual table (the LIMIT
// constraint of xBestIndex), which marks the statement to be prepared
// again whenever that parameter is bound, that is on every call (15–60 µs
// a statement, about 10% of a search). FTS5 makes no use of the constraint.
func (s *Searcher) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s.Shared != nil && s.Shared.db == s.DB {
		st, err := s.Shared.stmt(ctx, query)
		if err != nil {
			return nil, err
		}
		return st.QueryContext(ctx, args...)
	}
	return s.DB.QueryContext(ctx, query, args...)
}

// queryRow is query for one row.
func (s *Searcher) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if s.Shared != nil && s.Shared.db == s.DB {
		if st, err := s.Shared.stmt(ctx, query); err == nil {
			return st.QueryRowContext(ctx, args...)
		}
	}
	return s.DB.QueryRowContext(ctx, query, args...)
}

// idsJSON encodes ids as a JSON array, for `IN (SELECT value FROM
// json_each(?))`: one statement text whatever the number of ids, so it
// is prepared once.
func idsJSON(ids []int64) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

const titlesSQL = "SELECT id, title, COALESCE(aliases, ''), path FROM notes WHERE id IN (SELECT value FROM json_each(?))"

// titleWordsOf returns the coverage words of each note of ids (a note
// deleted meanwhile is absent). When cached (the searcher has a Shared,
// rev read from revOf before) they are kept for the index's content
// revision: a sync that changes any note changes the revision, and the
// words are read again.
func (s *Searcher) titleWordsOf(ctx context.Context, rev string, cached bool, ids []int64) (map[int64]coverageWords, error) {
	out := make(map[int64]coverageWords, len(ids))
	sh := s.Shared
	if !cached {
		return out, s.readTitles(ctx, ids, out)
	}
	var missing []int64
	sh.tmu.Lock()
	sh.resetLocked(rev)
	for _, id := range ids {
		if w, ok := sh.titles[id]; ok {
			out[id] = w
		} else {
			missing = append(missing, id)
		}
	}
	sh.tmu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	got := make(map[int64]coverageWords, len(missing))
	if err := s.readTitles(ctx, missing, got); err != nil {
		return nil, err
	}
	sh.tmu.Lock()
	// Filed only under the revision read before the titles: a sync that
	// ended meanwhile moved the revision on, and the next call reads again.
	keep := sh.rev == rev
	if keep && len(sh.titles)+len(got) > maxTitles {
		sh.titles = map[int64]coverageWords{}
	}
	for id, w := range got {
		out[id] = w
		if keep {
			sh.titles[id] = w
		}
	}
	sh.tmu.Unlock()
	return out, nil
}

// readTitles reads the title, aliases and path of the notes of ids into out.
func (s *Searcher) readTitles(ctx context.Context, ids []int64, out map[int64]coverageWords) error {
	rows, err := s.query(ctx, titlesSQL, idsJSON(ids))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var title, aliases, p string
		if err := rows.Scan(&id, &title, &aliases, &p); err != nil {
			return err
		}
		out[id] = newCoverageWords(titleWords(title, aliases, p))
	}
	return rows.Err()
}
