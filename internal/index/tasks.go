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

// TaskFilter narrows Tasks in SQL; path globs, statuses and fences are
// applied by the caller.
type TaskFilter struct {
	// Tag keeps tasks in notes carrying the tag or one nested under it.
	Tag string
	// DueFrom and DueTo (YYYY-MM-DD, inclusive) keep tasks with a due
	// date in the range; either set drops tasks without a due date.
	DueFrom, DueTo string
}

// Tasks returns the tasks of the index, by due date (none last), path and line.
func (ix *Index) Tasks(ctx context.Context, f TaskFilter) ([]TaskRow, error) {
	q := `SELECT n.path, n.title, t.line, t.status, t.marker, t.text, t.due, t.scheduled, t.start, t.done, t.priority, t.block_uuid
		FROM tasks t JOIN notes n ON n.id = t.note_id WHERE 1`
	var args []any
	if tag := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(f.Tag), "#")); tag != "" {
		q += ` AND EXISTS (SELECT 1 FROM tags g WHERE g.note_id = t.note_id AND (g.tag_key = ? OR substr(g.tag_key, 1, ?) = ?))`
		args = append(args, tag, len(tag)+1, tag+"/")
	}
	if f.DueFrom != "" {
		q += ` AND t.due <> '' AND t.due >= ?`
		args = append(args, f.DueFrom)
	}
	if f.DueTo != "" {
		q += ` AND t.due <> '' AND t.due <= ?`
		args = append(args, f.DueTo)
	}
	q += ` ORDER BY t.due = '', t.due, n.path, t.line`
	rows, err := ix.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TaskRow
	for rows.Next() {
		var r TaskRow
		if err := rows.Scan(&r.Path, &r.Title, &r.Line, &r.Status, &r.Marker, &r.Text, &r.Due, &r.Scheduled, &r.Start, &r.Done, &r.Priority, &r.Block); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
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
