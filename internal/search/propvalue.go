package search

import (
	"context"
	"strconv"
	"strings"
)

// linkValueNotes returns, as a JSON array of note ids, the notes whose
// property key holds want written as a link or a tag: a Logseq page
// property `type:: [[Feature]]` (or `#Feature`, `#[[Feature]]`, or a list
// `[[Feature]], [[Bug]]`) is stored as written, and asking for Feature,
// [[Feature]] or #Feature must find it. Plain values keep matching whole
// (value = want, the SQL beside this); only the link and tag forms are
// unwrapped, so a plain "a, b" is still one value. Case-insensitive like
// the plain match.
func (s *Searcher) linkValueNotes(ctx context.Context, key, want string) (string, error) {
	n := unwrapValue(strings.TrimSpace(want))
	if n == "" {
		return "[]", nil
	}
	// LIKE narrows the rows to those containing the name; Go decides.
	rows, err := s.DB.QueryContext(ctx, `SELECT DISTINCT note_id, value FROM props WHERE key = ? AND value LIKE ? ESCAPE '\' ORDER BY note_id`,
		key, "%"+escapeLike(n)+"%")
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
	return string(append(b, ']')), rows.Err()
}

// valueNames reports whether the stored value v is name n, whole or as one
// link or tag element of it.
func valueNames(v, n string) bool {
	v = strings.TrimSpace(v)
	if strings.EqualFold(unwrapValue(v), n) {
		return true
	}
	if !strings.Contains(v, "[[") && !strings.Contains(v, "#") {
		return false
	}
	for _, e := range splitLinkList(v) {
		if isWrapped(e) && strings.EqualFold(unwrapValue(e), n) {
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

// splitLinkList splits a Logseq property value at the commas outside
// [[...]], as Logseq does (markdown.splitPropList), trimming each element.
func splitLinkList(v string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(v); i++ {
		switch {
		case strings.HasPrefix(v[i:], "[["):
			depth++
			i++
		case strings.HasPrefix(v[i:], "]]") && depth > 0:
			depth--
			i++
		case v[i] == ',' && depth == 0:
			if e := strings.TrimSpace(v[start:i]); e != "" {
				out = append(out, e)
			}
			start = i + 1
		}
	}
	if e := strings.TrimSpace(v[start:]); e != "" {
		out = append(out, e)
	}
	return out
}
