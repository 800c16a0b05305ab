package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
)

// NoteSummary is a light record of one note for listings.
type NoteSummary struct {
	ID      int64
	Path    string
	Title   string
	Kind    string
	ModTime int64  // UnixNano
	Created string // frontmatter created/date as written
	Updated string // frontmatter updated/modified as written
	// Filled only when ListNotes is asked for frontmatter.
	Frontmatter      map[string]any
	FrontmatterKeys  []string
	FrontmatterError string
}

// ListNotes returns every indexed note ordered by path; withFrontmatter also
// decodes the stored frontmatter.
func (ix *Index) ListNotes(ctx context.Context, withFrontmatter bool) ([]NoteSummary, error) {
	cols := "id, path, title, kind, mtime, COALESCE(created,''), COALESCE(updated,'')"
	if withFrontmatter {
		cols += ", frontmatter, fm_keys, COALESCE(fm_error,'')"
	}
	rows, err := ix.DB.QueryContext(ctx, "SELECT "+cols+" FROM notes ORDER BY path")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []NoteSummary{}
	for rows.Next() {
		var n NoteSummary
		dst := []any{&n.ID, &n.Path, &n.Title, &n.Kind, &n.ModTime, &n.Created, &n.Updated}
		var fm, keys sql.NullString
		if withFrontmatter {
			dst = append(dst, &fm, &keys, &n.FrontmatterError)
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, err
		}
		if fm.Valid {
			json.Unmarshal([]byte(fm.String), &n.Frontmatter)
		}
		if keys.Valid {
			json.Unmarshal([]byte(keys.String), &n.FrontmatterKeys)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// KeyCount is a frontmatter key with the number of notes using it.
type KeyCount struct {
	Key   string   `json:"key" jsonschema:"the frontmatter key (or Logseq page property) as written"`
	Notes int      `json:"notes" jsonschema:"number of notes with this key"`
	Types []string `json:"types" jsonschema:"value types seen: string, number, boolean, list, object, null"`
}

// FrontmatterKeys lists every top-level frontmatter key (Logseq page
// properties included) with its note count and value types, most used first.
// Notes in hidden (a read fence's) are not counted.
func (ix *Index) FrontmatterKeys(ctx context.Context, hidden ...int64) ([]KeyCount, error) {
	var args []any
	if len(hidden) > 0 {
		args = append(args, idsJSON(hidden))
	}
	rows, err := ix.DB.QueryContext(ctx, `SELECT j.key, j.type, COUNT(DISTINCT n.id)
		FROM notes n, json_each(n.frontmatter) j WHERE n.frontmatter IS NOT NULL AND json_valid(n.frontmatter) AND `+hiddenCond("n.id", hidden)+`
		GROUP BY j.key, j.type`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byKey := map[string]*KeyCount{}
	var order []string
	for rows.Next() {
		var k, typ string
		var n int
		if err := rows.Scan(&k, &typ, &n); err != nil {
			return nil, err
		}
		kc := byKey[k]
		if kc == nil {
			kc = &KeyCount{Key: k, Types: []string{}}
			byKey[k] = kc
			order = append(order, k)
		}
		kc.Notes += n // a key has one type per note, so per-type counts add up
		t := jsonType(typ)
		if !contains(kc.Types, t) {
			kc.Types = append(kc.Types, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]KeyCount, 0, len(order))
	for _, k := range order {
		kc := byKey[k]
		sortStrings(kc.Types)
		out = append(out, *kc)
	}
	sortKeyCounts(out)
	return out, nil
}

func jsonType(t string) string {
	switch t {
	case "text":
		return "string"
	case "integer", "real":
		return "number"
	case "true", "false":
		return "boolean"
	case "array":
		return "list"
	}
	return t // object, null
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ValueCount is one distinct value of a key with its note count.
type ValueCount struct {
	Value string `json:"value" jsonschema:"the value as text (list items count one by one)"`
	Notes int    `json:"notes" jsonschema:"number of notes with this value"`
}

// FrontmatterValuesPage lists the distinct values of a key (list items each
// count) with their note counts, most used first (ties by value, so the
// order is stable for paging), limit of them from the offset-th on; total is
// the number of distinct values and notes the number of notes having the
// key with a value. Notes in hidden (a read fence's) are not counted.
func (ix *Index) FrontmatterValuesPage(ctx context.Context, key string, offset, limit int, hidden ...int64) (vals []ValueCount, total, notes int, err error) {
	args := []any{key}
	if len(hidden) > 0 {
		args = append(args, idsJSON(hidden))
	}
	cond := hiddenCond("note_id", hidden)
	if err := ix.DB.QueryRowContext(ctx, "SELECT COUNT(DISTINCT value), COUNT(DISTINCT note_id) FROM props WHERE key = ? AND "+cond, args...).Scan(&total, &notes); err != nil {
		return nil, 0, 0, err
	}
	vals = []ValueCount{}
	if offset >= total {
		return vals, total, notes, nil
	}
	rows, err := ix.DB.QueryContext(ctx, `SELECT value, COUNT(DISTINCT note_id) AS n FROM props WHERE key = ? AND `+cond+`
		GROUP BY value ORDER BY n DESC, value LIMIT ? OFFSET ?`, append(args, limit, offset)...)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var v ValueCount
		if err := rows.Scan(&v.Value, &v.Notes); err != nil {
			return nil, 0, 0, err
		}
		vals = append(vals, v)
	}
	return vals, total, notes, rows.Err()
}

// NoteCount is the number of notes in the index (for /metrics).
func (ix *Index) NoteCount(ctx context.Context) (int, error) {
	var n int
	err := ix.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM notes").Scan(&n)
	return n, err
}

// LogseqNoteCount is the number of Logseq pages and journals in the index.
func (ix *Index) LogseqNoteCount(ctx context.Context) (int, error) {
	var n int
	err := ix.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM notes WHERE kind IN ('page','journal')").Scan(&n)
	return n, err
}

// PageInfo is one Logseq page or journal.
type PageInfo struct {
	ID      int64    `json:"-"`
	Name    string   `json:"name" jsonschema:"the page name (namespaces use /; journals read like Nov 20th, 2026)"`
	Path    string   `json:"path" jsonschema:"vault-relative path of the page file"`
	Kind    string   `json:"kind" jsonschema:"page or journal"`
	Aliases []string `json:"aliases,omitempty" jsonschema:"alias:: names of the page"`
	Blocks  int      `json:"blocks" jsonschema:"number of blocks in the page"`
}

// Pages lists Logseq pages (and journals when asked): pages by name, then
// journals newest first. namespace keeps pages named ns or ns/...
func (ix *Index) Pages(ctx context.Context, includeJournals bool, namespace string) ([]PageInfo, error) {
	q := `SELECT n.id, n.title, n.path, n.kind, COALESCE(n.aliases,''), (SELECT COUNT(*) FROM blocks b WHERE b.note_id = n.id)
		FROM notes n WHERE n.kind IN ('page'`
	if includeJournals {
		q += `,'journal'`
	}
	q += `)`
	var args []any
	if ns := strings.Trim(strings.ToLower(strings.TrimSpace(namespace)), "/"); ns != "" {
		q += ` AND (n.title_key = ? OR substr(n.title_key, 1, ?) = ?)`
		args = append(args, ns, len(ns)+1, ns+"/")
	}
	q += ` ORDER BY n.kind = 'journal', CASE WHEN n.kind = 'journal' THEN '' ELSE n.title_key END, n.path DESC`
	rows, err := ix.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []PageInfo{}
	for rows.Next() {
		var p PageInfo
		var aliases string
		if err := rows.Scan(&p.ID, &p.Name, &p.Path, &p.Kind, &aliases, &p.Blocks); err != nil {
			return nil, err
		}
		if aliases != "" {
			json.Unmarshal([]byte(aliases), &p.Aliases)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// BlockRow is one stored Logseq block.
type BlockRow struct {
	NoteID     int64
	Seq        int
	ParentSeq  int // -1 for top level
	Depth      int
	Line       int
	EndLine    int
	UUID       string
	Content    string
	Properties map[string]string
}

// BlocksOf returns the blocks of a note in file order.
func (ix *Index) BlocksOf(ctx context.Context, noteID int64) ([]BlockRow, error) {
	rows, err := ix.DB.QueryContext(ctx, `SELECT note_id, seq, parent_seq, depth, line, end_line, COALESCE(uuid,''), content, COALESCE(properties,'')
		FROM blocks WHERE note_id = ? ORDER BY seq`, noteID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []BlockRow{}
	for rows.Next() {
		var b BlockRow
		var props string
		if err := rows.Scan(&b.NoteID, &b.Seq, &b.ParentSeq, &b.Depth, &b.Line, &b.EndLine, &b.UUID, &b.Content, &props); err != nil {
			return nil, err
		}
		if props != "" {
			json.Unmarshal([]byte(props), &b.Properties)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// BlockByUUID finds the note and position of a block by its id:: uuid
// (case-insensitive); a block_not_found error when no block has it.
func (ix *Index) BlockByUUID(ctx context.Context, uuid string) (noteID int64, seq int, err error) {
	err = ix.DB.QueryRowContext(ctx, "SELECT note_id, seq FROM blocks WHERE uuid = ? ORDER BY note_id, seq LIMIT 1", uuid).Scan(&noteID, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		err = ix.DB.QueryRowContext(ctx, "SELECT note_id, seq FROM blocks WHERE lower(uuid) = lower(?) ORDER BY note_id, seq LIMIT 1", uuid).Scan(&noteID, &seq)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, errs.New(errs.CodeBlockNotFound, "no block has id %s", uuid).With("uuid", uuid)
	}
	return noteID, seq, err
}

// BlockRef is a ((uuid)) reference to a block.
type BlockRef struct {
	Path string `json:"path" jsonschema:"the referencing note"`
	Line int    `json:"line" jsonschema:"1-based line of the reference"`
}

// BlockRefs lists the ((uuid)) references to a block, by path and line.
func (ix *Index) BlockRefs(ctx context.Context, uuid string) ([]BlockRef, error) {
	rows, err := ix.DB.QueryContext(ctx, `SELECT s.path, l.line FROM links l JOIN notes s ON s.id = l.src_id
		WHERE l.kind = 'blockref' AND lower(l.target) = lower(?) ORDER BY s.path, l.line`, uuid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []BlockRef{}
	for rows.Next() {
		var r BlockRef
		if err := rows.Scan(&r.Path, &r.Line); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// NoteTags returns the distinct tags of the given notes (by id), as written.
func (ix *Index) NoteTags(ctx context.Context, ids []int64) (map[int64][]string, error) {
	out := map[int64][]string{}
	for _, chunk := range chunkIDs(ids, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := ix.DB.QueryContext(ctx, "SELECT note_id, MIN(tag) FROM tags WHERE note_id IN ("+placeholders(len(chunk))+") GROUP BY note_id, tag_key ORDER BY note_id, tag_key", args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var t string
			if err := rows.Scan(&id, &t); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = append(out[id], t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sortStrings(s []string) { sort.Strings(s) }

func sortKeyCounts(k []KeyCount) {
	sort.Slice(k, func(i, j int) bool {
		if k[i].Notes != k[j].Notes {
			return k[i].Notes > k[j].Notes
		}
		return k[i].Key < k[j].Key
	})
}
