package index

import (
	"context"
	"database/sql"
	"strings"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/textseg"
)

// Descriptions: what a note says about itself in its frontmatter
// `description:` or `summary:` (a Logseq page's `description::` property
// lands in the same map) is a short statement of what the note is about,
// ranked as its own BM25 field. descriptions_fts holds one row per note
// that has one, rowid = the note id, written with the note (upsert) and
// deleted with its children, so it is always in step with the note's
// frontmatter. The values stay in the first chunk's body too (frontmatter
// text), so this field is an addition, not a move.

// maxDescriptionBytes bounds one note's description text: the values of
// its description and summary keys, in file order, joined by newlines and
// cut at the last whole word (or character) within the bound. A note with a
// megabyte of description costs one bounded row.
const maxDescriptionBytes = 2 << 10

// isDescriptionKey reports whether a frontmatter key (or Logseq page
// property) holds a description.
// The match folds ASCII case only, as SQLite's lower() does in the
// migration's query.
func isDescriptionKey(k string) bool {
	k = asciiLower(k)
	return k == "description" || k == "summary"
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// descriptionText returns the bounded description of d ("" when none).
func descriptionText(d *markdown.Doc) string {
	var vals []string
	for _, k := range d.FrontmatterKeys {
		if isDescriptionKey(k) {
			vals = append(vals, flattenValue(d.Frontmatter[k])...)
		}
	}
	return joinDescription(vals)
}

// joinDescription joins the trimmed non-empty values within
// maxDescriptionBytes (see descriptionText).
func joinDescription(vals []string) string {
	var b strings.Builder
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if b.Len() > 0 {
			if b.Len()+1 >= maxDescriptionBytes {
				break
			}
			b.WriteByte('\n')
		}
		if room := maxDescriptionBytes - b.Len(); len(v) > room {
			b.WriteString(cutWords(v, room))
			break
		}
		b.WriteString(v)
	}
	return strings.TrimSpace(b.String())
}

// cutWords returns the longest prefix of s of at most n bytes that ends at
// a space (else at a character boundary), so no word is cut in half.
func cutWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if i := strings.LastIndexByte(s[:cut], ' '); i > 0 {
		return s[:i]
	}
	return s[:cut]
}

// writeDescription replaces note id's description row with text.
func (w *writer) writeDescription(id int64, text string) error {
	if text == "" {
		return nil // deleteChildren already removed the old row
	}
	_, err := w.exec("desc_ins", id, textseg.ForIndex(text))
	return err
}

// fillDescriptions builds descriptions_fts from the props table (the
// flattened frontmatter, in file order), without re-parsing any note: the
// v3 → v4 migration.
func fillDescriptions(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT note_id, value FROM props WHERE lower(key) IN ('description','summary') ORDER BY note_id, rowid")
	if err != nil {
		return err
	}
	type doc struct {
		id   int64
		vals []string
	}
	var docs []doc
	for rows.Next() {
		var id int64
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return err
		}
		if n := len(docs); n == 0 || docs[n-1].id != id {
			docs = append(docs, doc{id: id})
		}
		d := &docs[len(docs)-1]
		d.vals = append(d.vals, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, "INSERT INTO descriptions_fts(rowid, description) VALUES(?,?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, d := range docs {
		if t := joinDescription(d.vals); t != "" {
			if _, err := ins.ExecContext(ctx, d.id, textseg.ForIndex(t)); err != nil {
				return err
			}
		}
	}
	return nil
}
