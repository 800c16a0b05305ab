package search

import (
	"context"
	"strconv"
	"strings"

	"github.com/loci-dev/loci/internal/markdown"
)

// linkValueNotes returns, as a JSON array of note ids ("" for none), the
// notes whose property key has a value written as links or tags, one of
// which names n. A Logseq page property `type:: [[Feature]]` (or
// `#Feature`, `#[[Feature]]`, or a list `[[Bug]], [[Feature]]`) is stored
// as written, and asking for Feature, [[Feature]] or #Feature must find it.
// Only values that start with [[ or # are read, through the (key, value)
// index, so a key with no such value costs one index probe; plain values
// are matched whole by the SQL beside this, and never split ("a, b" stays
// one value). Case folding is SQLite's NOCASE (ASCII).
func (s *Searcher) linkValueNotes(ctx context.Context, key, n string) (string, error) {
	if n == "" {
		return "", nil
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT note_id, value FROM props WHERE key = ?1 AND
		((value >= '[[' AND value < '[\') OR (value >= '#' AND value < '$')) ORDER BY note_id`, key)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	b := []byte{'['}
	last := int64(-1)
	for rows.Next() {
		var id int64
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			return "", err
		}
		if id == last || !valueNames(v, n) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
		last = id
	}
	if len(b) == 1 {
		return "", rows.Err()
	}
	return string(append(b, ']')), rows.Err()
}

// asciiFold is SQLite's NOCASE equality: ASCII letters folded, nothing else.
func asciiFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// valueNames reports whether the stored value v is name n, whole or as one
// link or tag element of it.
func valueNames(v, n string) bool {
	v = strings.TrimSpace(v)
	if asciiFold(unwrapValue(v), n) {
		return true
	}
	if !strings.Contains(v, "[[") && !strings.Contains(v, "#") {
		return false
	}
	for _, e := range markdown.SplitLinkList(v) {
		if isWrapped(e) && asciiFold(unwrapValue(e), n) {
			return true
		}
	}
	return false
}

// isWrapped reports whether e is written as a link or a tag.
func isWrapped(e string) bool {
	return strings.HasPrefix(e, "#") || (strings.HasPrefix(e, "[[") && strings.HasSuffix(e, "]]"))
}

// unwrapValue strips the link or tag syntax of one value: [[x]], #x and
// #[[x]] are x.
func unwrapValue(e string) string {
	e = strings.TrimSpace(e)
	e = strings.TrimPrefix(e, "#")
	if len(e) >= 4 && strings.HasPrefix(e, "[[") && strings.HasSuffix(e, "]]") {
		e = e[2 : len(e)-2]
	}
	return strings.TrimSpace(e)
}
