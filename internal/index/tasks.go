package index

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// TaskRow is one task of the index with the note it is in.
type TaskRow struct {
	Path      string `json:"path" jsonschema:"the note holding the task"`
	Title     string `json:"title" jsonschema:"its title"`
	Line      int    `json:"line" jsonschema:"1-based line of the task"`
	Status    string `json:"status" jsonschema:"todo, in_progress, waiting, done, cancelled, or another checkbox character"`
	Marker    string `json:"marker" jsonschema:"the status as written: the checkbox character or the Logseq marker (TODO, DOING, DONE...)"`
	Text      string `json:"text" jsonschema:"the task's text as written (after the checkbox or marker)"`
	Due       string `json:"due,omitempty" jsonschema:"due date (📅, a [due:: …] inline field, or Logseq DEADLINE), YYYY-MM-DD"`
	Scheduled string `json:"scheduled,omitempty" jsonschema:"scheduled date (⏳, [scheduled:: …], or Logseq SCHEDULED), YYYY-MM-DD"`
	Start     string `json:"start,omitempty" jsonschema:"start date (🛫 or [start:: …]), YYYY-MM-DD"`
	Done      string `json:"done,omitempty" jsonschema:"done date (✅ or [completion:: …]), YYYY-MM-DD"`
	Priority  string `json:"priority,omitempty" jsonschema:"highest, high, medium, low or lowest"`
	Block     string `json:"block,omitempty" jsonschema:"the Logseq block's id:: (uuid), when it has one"`
}

// TaskFilter narrows Tasks in SQL; path globs and fences are applied by
// the caller (PathPrefix narrows for a glob first).
type TaskFilter struct {
	// Tag keeps tasks in notes carrying the tag or one nested under it.
	Tag string
	// DueFrom and DueTo (YYYY-MM-DD, inclusive) keep tasks with a due
	// date in the range; either set drops tasks without a due date.
	DueFrom, DueTo string
	// Statuses keeps tasks with one of these statuses, NotStatuses drops
	// them, Markers keeps tasks whose marker (as written) is one of these.
	Statuses, NotStatuses, Markers []string
	// Page keeps tasks of the notes whose lower-cased title, or path
	// without .md, is Page (give it lower-cased).
	Page string
	// PathPrefix keeps tasks of the notes whose path starts with it.
	PathPrefix string
}

// taskQuery is the SELECT of f's tasks, in Tasks' order.
func taskQuery(f TaskFilter, cols string) (string, []any) {
	q := `SELECT ` + cols + ` FROM tasks t JOIN notes n ON n.id = t.note_id WHERE 1`
	var args []any
	if tag := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(f.Tag), "#")); tag != "" {
		// The notes of the tag, found once (by the tag_key index): the tag
		// itself, or a key starting with tag/ (the keys from "tag/" up to,
		// not including, "tag0": '0' follows '/' in byte order).
		q += ` AND t.note_id IN (SELECT g.note_id FROM tags g WHERE g.tag_key = ? OR (g.tag_key >= ? AND g.tag_key < ?))`
		args = append(args, tag, tag+"/", tag+"0")
	}
	if f.DueFrom != "" {
		q += ` AND t.due <> '' AND t.due >= ?`
		args = append(args, f.DueFrom)
	}
	if f.DueTo != "" {
		q += ` AND t.due <> '' AND t.due <= ?`
		args = append(args, f.DueTo)
	}
	in := func(col string, vals []string, not bool) {
		if len(vals) == 0 {
			return
		}
		q += ` AND ` + col
		if not {
			q += ` NOT`
		}
		q += ` IN (?` + strings.Repeat(`, ?`, len(vals)-1) + `)`
		for _, v := range vals {
			args = append(args, v)
		}
	}
	in("t.status", f.Statuses, false)
	in("t.status", f.NotStatuses, true)
	in("t.marker", f.Markers, false)
	if f.Page != "" {
		// The path without .md as list_tasks compares it: path_key, plus the
		// extension when it is not written .md (path_key drops any case of it).
		q += ` AND (n.title_key = ? OR (CASE WHEN substr(n.path, -3) = '.md' THEN n.path_key ELSE n.path_key || '.md' END) = ?)`
		args = append(args, f.Page, f.Page)
	}
	if f.PathPrefix != "" {
		q += ` AND substr(n.path, 1, length(?)) = ?`
		args = append(args, f.PathPrefix, f.PathPrefix)
	}
	return q, args
}

const taskCols = `n.path, n.title, t.line, t.status, t.marker, t.text, t.due, t.scheduled, t.start, t.done, t.priority, t.block_uuid`

// Tasks returns the tasks of the index, by due date (none last), path and line.
func (ix *Index) Tasks(ctx context.Context, f TaskFilter) ([]TaskRow, error) {
	rows, _, err := ix.TasksPage(ctx, f, 0, 0)
	return rows, err
}

// TasksPage is one page of Tasks (limit rows from offset; limit 0 is all)
// and the number of tasks matching in all. With a limit, the count is a
// query of its own: SQLite then sorts with a bounded heap and reads the
// columns of the page's rows only.
func (ix *Index) TasksPage(ctx context.Context, f TaskFilter, offset, limit int) ([]TaskRow, int, error) {
	q, args := taskQuery(f, taskCols)
	q += ` ORDER BY t.due = '', t.due, n.path, t.line`
	if limit > 0 {
		q += ` LIMIT ? OFFSET ?`
		args = append(args, limit, offset)
	}
	rows, err := ix.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []TaskRow
	for rows.Next() {
		var r TaskRow
		if err := rows.Scan(&r.Path, &r.Title, &r.Line, &r.Status, &r.Marker, &r.Text, &r.Due, &r.Scheduled, &r.Start, &r.Done, &r.Priority, &r.Block); err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	total := len(out)
	if limit > 0 && (offset > 0 || len(out) == limit) {
		q, args := taskQuery(f, `count(*)`)
		if err := ix.DB.QueryRowContext(ctx, q, args...).Scan(&total); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// BlockNote finds the note holding the Logseq block with this id:: uuid.
func (ix *Index) BlockNote(ctx context.Context, uuid string) (string, bool, error) {
	var p string
	err := ix.DB.QueryRowContext(ctx, `SELECT n.path FROM blocks b JOIN notes n ON n.id = b.note_id WHERE b.uuid = ? ORDER BY n.path LIMIT 1`, uuid).Scan(&p)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", false, nil
		}
		return "", false, err
	}
	return p, true, nil
}
