package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
)

// NoteInfo is what the index knows about one note.
type NoteInfo struct {
	ID               int64          `json:"-"`
	Path             string         `json:"path"`
	Title            string         `json:"title"`
	Kind             string         `json:"kind"`
	Etag             string         `json:"etag"`
	Size             int64          `json:"size"`
	ModTime          time.Time      `json:"mtime"`
	Frontmatter      map[string]any `json:"frontmatter,omitempty"`
	FrontmatterKeys  []string       `json:"frontmatter_keys,omitempty"`
	FrontmatterError string         `json:"frontmatter_error,omitempty"`
	Aliases          []string       `json:"aliases,omitempty"`
	Tags             []string       `json:"tags,omitempty"`
	Words            int            `json:"words"`
	Lines            int            `json:"lines"`
}

// NoteByPath loads a note's index record.
func (ix *Index) NoteByPath(ctx context.Context, rel string) (*NoteInfo, error) {
	var n NoteInfo
	var fm, keys, fmErr, aliases sql.NullString
	var mtime int64
	err := ix.DB.QueryRowContext(ctx, `SELECT id, path, title, kind, hash, size, mtime, frontmatter, fm_keys, fm_error, aliases, words, lines
		FROM notes WHERE path = ?`, rel).Scan(&n.ID, &n.Path, &n.Title, &n.Kind, &n.Etag, &n.Size, &mtime, &fm, &keys, &fmErr, &aliases, &n.Words, &n.Lines)
	if errors.Is(err, sql.ErrNoRows) {
		// Case-insensitive second chance (macOS/Windows users type paths loosely).
		err = ix.DB.QueryRowContext(ctx, `SELECT id, path, title, kind, hash, size, mtime, frontmatter, fm_keys, fm_error, aliases, words, lines
			FROM notes WHERE path = ? COLLATE NOCASE`, rel).Scan(&n.ID, &n.Path, &n.Title, &n.Kind, &n.Etag, &n.Size, &mtime, &fm, &keys, &fmErr, &aliases, &n.Words, &n.Lines)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.New(errs.CodeNotFound, "note not found in the index: %s", rel).With("path", rel)
	}
	if err != nil {
		return nil, err
	}
	n.ModTime = time.Unix(0, mtime).UTC()
	if fm.Valid {
		json.Unmarshal([]byte(fm.String), &n.Frontmatter)
	}
	if keys.Valid {
		json.Unmarshal([]byte(keys.String), &n.FrontmatterKeys)
	}
	n.FrontmatterError = fmErr.String
	if aliases.Valid {
		json.Unmarshal([]byte(aliases.String), &n.Aliases)
	}
	rows, err := ix.DB.QueryContext(ctx, "SELECT DISTINCT tag FROM tags WHERE note_id = ? ORDER BY tag_key", n.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		rows.Scan(&t)
		n.Tags = append(n.Tags, t)
	}
	return &n, rows.Err()
}

// LinkRow is one link as stored, with its resolution.
type LinkRow struct {
	Kind     string `json:"kind" jsonschema:"wikilink, embed, markdown, typed, blockref or tag"`
	Source   string `json:"source" jsonschema:"the linking note"`
	Target   string `json:"target" jsonschema:"the target as written"`
	Resolved string `json:"resolved" jsonschema:"the note it resolves to (empty when unresolved)"`
	Heading  string `json:"heading,omitempty" jsonschema:"the #heading part, if any"`
	BlockID  string `json:"block_id,omitempty" jsonschema:"the #^block part, if any"`
	Display  string `json:"display,omitempty" jsonschema:"the |display text or Markdown link text"`
	Key      string `json:"key,omitempty" jsonschema:"typed links: the frontmatter key or property"`
	Line     int    `json:"line" jsonschema:"1-based line of the link in the source note"`
	// Attachment marks links to non-Markdown files (images, PDFs, ...).
	Attachment bool `json:"attachment,omitempty" jsonschema:"true for links to files other than notes (images, PDFs)"`
}

// Links is a note's link neighbourhood.
type Links struct {
	Path       string    `json:"path" jsonschema:"the note"`
	Outgoing   []LinkRow `json:"outgoing" jsonschema:"its wikilinks, Markdown links and Logseq references, by line"`
	Backlinks  []LinkRow `json:"backlinks" jsonschema:"links from other notes to it (typed links excluded)"`
	TypedOut   []LinkRow `json:"typed_outgoing" jsonschema:"its typed links: frontmatter keys or properties whose values are links"`
	TypedIn    []LinkRow `json:"typed_incoming" jsonschema:"typed links from other notes to it"`
	Embeds     []LinkRow `json:"embeds" jsonschema:"its ![[embeds]]"`
	Unresolved []LinkRow `json:"unresolved" jsonschema:"its links whose target does not exist (attachments excluded)"`
}

const linkCols = `l.kind, s.path, l.target, COALESCE(d.path,''), COALESCE(l.heading,''), COALESCE(l.block_id,''), COALESCE(l.display,''), COALESCE(l.rel_key,''), l.line, l.attachment`

func scanLinks(rows *sql.Rows) ([]LinkRow, error) {
	defer rows.Close()
	out := []LinkRow{}
	for rows.Next() {
		var r LinkRow
		if err := rows.Scan(&r.Kind, &r.Source, &r.Target, &r.Resolved, &r.Heading, &r.BlockID, &r.Display, &r.Key, &r.Line, &r.Attachment); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// LinksOf returns the outgoing links, backlinks, typed links both ways,
// embeds and unresolved links of a note.
func (ix *Index) LinksOf(ctx context.Context, rel string) (*Links, error) {
	n, err := ix.NoteByPath(ctx, rel)
	if err != nil {
		return nil, err
	}
	out := &Links{Path: n.Path}
	rows, err := ix.DB.QueryContext(ctx, `SELECT `+linkCols+` FROM links l JOIN notes s ON s.id = l.src_id LEFT JOIN notes d ON d.id = l.dst_id
		WHERE l.src_id = ? ORDER BY l.line, l.rowid`, n.ID)
	if err != nil {
		return nil, err
	}
	all, err := scanLinks(rows)
	if err != nil {
		return nil, err
	}
	out.Outgoing, out.TypedOut, out.Embeds, out.Unresolved = []LinkRow{}, []LinkRow{}, []LinkRow{}, []LinkRow{}
	for _, l := range all {
		switch l.Kind {
		case "typed":
			out.TypedOut = append(out.TypedOut, l)
		case "embed":
			out.Embeds = append(out.Embeds, l)
		default:
			out.Outgoing = append(out.Outgoing, l)
		}
		if l.Resolved == "" && !l.Attachment {
			out.Unresolved = append(out.Unresolved, l)
		}
	}
	rows, err = ix.DB.QueryContext(ctx, `SELECT `+linkCols+` FROM links l JOIN notes s ON s.id = l.src_id LEFT JOIN notes d ON d.id = l.dst_id
		WHERE l.dst_id = ? AND l.src_id <> ? ORDER BY s.path, l.line`, n.ID, n.ID)
	if err != nil {
		return nil, err
	}
	in, err := scanLinks(rows)
	if err != nil {
		return nil, err
	}
	out.Backlinks, out.TypedIn = []LinkRow{}, []LinkRow{}
	for _, l := range in {
		if l.Kind == "typed" {
			out.TypedIn = append(out.TypedIn, l)
		} else {
			out.Backlinks = append(out.Backlinks, l)
		}
	}
	return out, nil
}

// TagCount is a tag with the number of notes carrying it.
type TagCount struct {
	Tag   string `json:"tag" jsonschema:"the tag as written, without #"`
	Notes int    `json:"notes" jsonschema:"number of notes carrying it"`
}

// Tags lists every tag with its note count, most used first. Nested tags
// also count toward their parents only when written (no implicit roll-up).
// Notes in hidden (a read fence's) are not counted.
func (ix *Index) Tags(ctx context.Context, hidden ...int64) ([]TagCount, error) {
	where, args := hiddenWhere("note_id", hidden)
	rows, err := ix.DB.QueryContext(ctx, `SELECT MIN(tag), COUNT(DISTINCT note_id) AS n FROM tags`+where+` GROUP BY tag_key ORDER BY n DESC, tag_key`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []TagCount{}
	for rows.Next() {
		var t TagCount
		if err := rows.Scan(&t.Tag, &t.Notes); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// TaggedPaths lists, by path, the notes carrying tag or a tag nested
// under it (tag/...), compared case-insensitively; a leading # is
// ignored. The tag is matched as text: _ and % in it are not wildcards.
func (ix *Index) TaggedPaths(ctx context.Context, tag string) ([]string, error) {
	key := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(tag), "#"))
	return ix.strings(ctx, `SELECT DISTINCT n.path FROM tags t JOIN notes n ON n.id = t.note_id
		WHERE t.tag_key = ? OR t.tag_key LIKE ? ESCAPE '\' ORDER BY n.path`, key, EscapeLike(key)+"/%")
}

// strings runs a query of one text column and returns its values (an
// empty list, never nil, when there are none).
func (ix *Index) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := ix.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// EscapeLike escapes s for a LIKE pattern with ESCAPE '\': \, % and _
// stand for themselves.
func EscapeLike(s string) string {
	return likeEscaper.Replace(s)
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Status describes the index.
type Status struct {
	Vault            string       `json:"vault" jsonschema:"absolute folder of the vault (to the owner; other principals get the vault's name)"`
	VaultKind        string       `json:"vault_kind" jsonschema:"obsidian or logseq"`
	IndexPath        string       `json:"index_path,omitempty" jsonschema:"the index database file (shown to the owner only)"`
	SchemaVersion    int          `json:"schema_version" jsonschema:"index schema version"`
	Notes            int          `json:"notes" jsonschema:"notes indexed"`
	Chunks           int          `json:"chunks" jsonschema:"searchable sections"`
	Links            int          `json:"links" jsonschema:"links of every kind"`
	UnresolvedLinks  int          `json:"unresolved_links" jsonschema:"links whose target does not exist (attachments excluded)"`
	Tags             int          `json:"tags" jsonschema:"distinct tags"`
	Tasks            int          `json:"tasks" jsonschema:"checkbox and Logseq tasks"`
	Blocks           int          `json:"blocks" jsonschema:"Logseq outline blocks"`
	LastIndexAt      string       `json:"last_index_at,omitempty" jsonschema:"time of the last sync (UTC, RFC 3339)"`
	LastFullIndexAt  string       `json:"last_full_index_at,omitempty" jsonschema:"time of the last whole-vault sync"`
	IndexBytes       int64        `json:"index_bytes" jsonschema:"size of the index on disk"`
	Failures         []Failure    `json:"failures" jsonschema:"files that could not be indexed, with the reason"`
	FrontmatterIssue []Failure    `json:"frontmatter_errors" jsonschema:"notes with invalid frontmatter (indexed anyway), with the reason"`
	Vectors          VectorStatus `json:"vectors" jsonschema:"embeddings: the model of the index's vectors, how many sections have one, progress (embedded, total, pending, complete), the background embedder of a server (job: running, rate, last_error, next_retry_at), the configured provider and the default search mode (lexical until every section has its vector)"`
}

// Status reports counts, times, and the files that failed and why. The
// notes in hidden (a read fence's) and what they hold (sections, links
// from them, tags, tasks, blocks, vectors) are not counted, and their
// frontmatter errors are not listed.
func (ix *Index) Status(ctx context.Context, hidden ...int64) (*Status, error) {
	st := &Status{Vault: ix.Vault.Root, VaultKind: string(ix.Vault.Kind), IndexPath: filepath.Join(ix.Dir, DBName), Failures: []Failure{}, FrontmatterIssue: []Failure{}}
	ix.DB.QueryRowContext(ctx, "PRAGMA user_version").Scan(&st.SchemaVersion)
	var args []any
	if len(hidden) > 0 {
		args = []any{idsJSON(hidden)}
	}
	counts := []struct {
		q string
		v *int
	}{
		{"SELECT COUNT(*) FROM notes WHERE " + hiddenCond("id", hidden), &st.Notes},
		{"SELECT COUNT(*) FROM chunks WHERE " + hiddenCond("note_id", hidden), &st.Chunks},
		{"SELECT COUNT(*) FROM links WHERE " + hiddenCond("src_id", hidden), &st.Links},
		{"SELECT COUNT(*) FROM links WHERE dst_id IS NULL AND attachment = 0 AND " + hiddenCond("src_id", hidden), &st.UnresolvedLinks},
		{"SELECT COUNT(DISTINCT tag_key) FROM tags WHERE " + hiddenCond("note_id", hidden), &st.Tags},
		{"SELECT COUNT(*) FROM tasks WHERE " + hiddenCond("note_id", hidden), &st.Tasks},
		{"SELECT COUNT(*) FROM blocks WHERE " + hiddenCond("note_id", hidden), &st.Blocks},
	}
	for _, c := range counts {
		if err := ix.DB.QueryRowContext(ctx, c.q, args...).Scan(c.v); err != nil {
			return nil, err
		}
	}
	st.LastIndexAt = unixToRFC3339(ix.Meta(ctx, "last_index_at"))
	st.LastFullIndexAt = unixToRFC3339(ix.Meta(ctx, "last_full_index_at"))
	st.Vectors = ix.vectorStatus(ctx)
	if len(hidden) > 0 && st.Vectors.Chunks > 0 {
		all := st.Vectors.Chunks
		ix.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM chunk_vectors WHERE "+hiddenCond("note_id", hidden), args...).Scan(&st.Vectors.Chunks)
		st.Vectors.MemoryBytes = st.Vectors.MemoryBytes * int64(st.Vectors.Chunks) / int64(all)
	}
	if len(hidden) > 0 {
		ix.vectorCounts(ctx, &st.Vectors, hidden)
	}
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(filepath.Join(ix.Dir, DBName+suffix)); err == nil {
			st.IndexBytes += fi.Size()
		}
	}
	rows, err := ix.DB.QueryContext(ctx, "SELECT path, error FROM failures ORDER BY path")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var f Failure
		rows.Scan(&f.Path, &f.Error)
		st.Failures = append(st.Failures, f)
	}
	rows.Close()
	rows, err = ix.DB.QueryContext(ctx, "SELECT path, fm_error FROM notes WHERE fm_error IS NOT NULL AND "+hiddenCond("id", hidden)+" ORDER BY path", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var f Failure
		rows.Scan(&f.Path, &f.Error)
		st.FrontmatterIssue = append(st.FrontmatterIssue, f)
	}
	return st, rows.Err()
}

func unixToRFC3339(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return ""
	}
	return time.Unix(n, 0).UTC().Format(time.RFC3339)
}

// hiddenWhere is a WHERE clause leaving out the notes in hidden (their ids
// in col), or "" when there are none: the read fences' filter.
func hiddenWhere(col string, hidden []int64) (string, []any) {
	if len(hidden) == 0 {
		return "", nil
	}
	return " WHERE " + hiddenCond(col, hidden), []any{idsJSON(hidden)}
}

func hiddenCond(col string, hidden []int64) string {
	if len(hidden) == 0 {
		return "1"
	}
	return col + " NOT IN (SELECT value FROM json_each(?))"
}

func idsJSON(ids []int64) string {
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}
