package search

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/loci-dev/loci/internal/errs"
)

// Sort keys of a listing (a query with no words and at least one filter).
const (
	SortUpdated = "updated"
	SortCreated = "created"
	SortTitle   = "title"
	SortPath    = "path"
)

// ModeList is the Response.Mode of a listing: no words, so no ranking.
const ModeList = "list"

// MatchedFilter is the Result.Matched of a listed note: it passed the
// filters, no words were matched.
const MatchedFilter = "filter"

// HasFilter reports whether q narrows the notes by path, tags, frontmatter
// or dates (the read fence does not count: it is not the caller's ask).
func (q Query) HasFilter() bool {
	if q.PathGlob != "" || len(q.Frontmatter) > 0 || q.CreatedFrom != "" || q.CreatedTo != "" || q.UpdatedFrom != "" || q.UpdatedTo != "" {
		return true
	}
	for _, t := range q.Tags {
		if strings.TrimPrefix(strings.TrimSpace(t), "#") != "" {
			return true
		}
	}
	return false
}

// CheckSort validates a listing's sort key and order ("" takes the
// defaults: updated, newest first; title and path ascending).
func CheckSort(key, order string) error {
	switch key {
	case "", SortUpdated, SortCreated, SortTitle, SortPath:
	default:
		return errs.New(errs.CodeInvalidInput, "unknown sort %q (updated, created, title, path)", key).With("sort", key)
	}
	switch order {
	case "", "asc", "desc":
	default:
		return errs.New(errs.CodeInvalidInput, "unknown order %q (asc, desc)", order).With("order", order)
	}
	return nil
}

type listed struct {
	id                                int64
	path, title, titleKey, key, fmKey string
	has                               bool // the sort key has a value
}

// list answers a query with no words: the notes passing q's filters (and
// the read fence), sorted by q.Sort, one page. Score is 0: nothing ranks
// them. Notes without the sort key's value (no created date) come last in
// either order; ties go by path.
func (s *Searcher) list(ctx context.Context, q Query) (*Response, error) {
	if err := CheckSort(q.Sort, q.Order); err != nil {
		return nil, err
	}
	key := q.Sort
	if key == "" {
		key = SortUpdated
	}
	desc := q.Order == "desc" || (q.Order == "" && (key == SortUpdated || key == SortCreated))
	where, args, err := s.filterWhere(ctx, q)
	if err != nil {
		return nil, err
	}
	sqlq := `SELECT id, path, title, title_key, COALESCE(created, ''),
		COALESCE(updated, strftime('%Y-%m-%dT%H:%M:%S', mtime/1000000000, 'unixepoch')) FROM notes`
	if len(where) > 0 {
		sqlq += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.DB.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "listing failed")
	}
	var all []listed
	for rows.Next() {
		var n listed
		var created, updated string
		if err := rows.Scan(&n.id, &n.path, &n.title, &n.titleKey, &created, &updated); err != nil {
			rows.Close()
			return nil, err
		}
		if q.PathGlob != "" {
			if ok, _ := doublestar.Match(q.PathGlob, n.path); !ok {
				continue
			}
		}
		// The fence, before sorting and paging: a hidden note never takes a
		// place on a page.
		if q.Hidden != nil && q.Hidden(n.id) || q.Hidden == nil && q.Allow != nil && !q.Allow(n.path) {
			continue
		}
		switch key {
		case SortUpdated:
			n.key = updated
		case SortCreated:
			n.key = created
		case SortTitle:
			n.key = n.titleKey
		case SortPath:
			n.key = n.path
		}
		n.has = n.key != ""
		all = append(all, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.has != b.has {
			return a.has
		}
		if a.key != b.key {
			return (a.key < b.key) != desc
		}
		return a.path < b.path
	})
	resp := &Response{Results: []Result{}, Mode: ModeList}
	end := q.Offset + q.Limit
	if len(all) > end {
		resp.HasMore = true
		all = all[:end]
	}
	if q.Offset >= len(all) {
		return resp, nil
	}
	for _, n := range all[q.Offset:] {
		r, err := s.firstSection(ctx, n)
		if err != nil {
			return nil, err
		}
		// The page is checked again by path (an id reused since).
		if q.Allow == nil || q.Allow(r.Path) {
			resp.Results = append(resp.Results, r)
		}
	}
	return resp, nil
}

// firstSection is the result of a listed note: its first section's heading
// path, lines and opening text (a note with no section: line 1, no snippet).
func (s *Searcher) firstSection(ctx context.Context, n listed) (Result, error) {
	r := Result{Path: n.path, Title: n.title, HeadingPath: []string{}, Line: 1, EndLine: 1, Matched: MatchedFilter, NoteID: n.id}
	var hp, text string
	err := s.DB.QueryRowContext(ctx, `SELECT id, heading_path, start_line, end_line, text FROM chunks WHERE note_id = ? ORDER BY seq LIMIT 1`, n.id).
		Scan(&r.ChunkID, &hp, &r.Line, &r.EndLine, &text)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return r, nil
		}
		return r, err
	}
	json.Unmarshal([]byte(hp), &r.HeadingPath)
	r.Snippet = highlighter(nil).snippet(text, 240)
	return r, nil
}
