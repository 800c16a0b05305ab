package markdown

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Inline fields, as Obsidian Dataview writes them in a note's body:
//
//	Key:: value            the whole line (or list item) is the field
//	- Key:: value
//	text [key:: value] …   bracketed, anywhere in a line (shown with its key)
//	text (key:: value) …   bracketed, anywhere in a line (shown without it)
//
// A line with bracketed fields has only those (as in Dataview); otherwise
// it may be one full-line field, unless it is a task (a task's line holds
// only bracketed fields). Fields are not read in code (fenced
// blocks, `code spans`), comments or frontmatter, nor in Logseq pages,
// whose key:: value lines are block and page properties.

// Field is one inline field occurrence.
type Field struct {
	// Key is the key as written (formatting such as **bold** around it
	// dropped), Value the raw value text, trimmed.
	Key   string `json:"key"`
	Value string `json:"value"`
	Line  int    `json:"line"`
}

// maxFieldKey bounds a key's length (in bytes); longer is not a key.
// Lines longer than maxFieldLine have no fields (Dataview's bound too).
const (
	maxFieldKey  = 128
	maxFieldLine = 32 << 10
)

// NormalizeFieldKey is Dataview's canonical form of a field key: lower
// case, runs of spaces as one '-', formatting characters (*_~`) dropped.
func NormalizeFieldKey(k string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.TrimSpace(k) {
		switch {
		case r == '*' || r == '~' || r == '`':
			continue
		case unicode.IsSpace(r):
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte('-')
		}
		space = false
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// InlineFields returns the inline fields of one line of a note's body
// (line numbers are left 0). It never panics and allocates nothing for a
// line without "::".
func InlineFields(line string) []Field {
	if len(line) > maxFieldLine || !strings.Contains(line, "::") {
		return nil
	}
	s := blankCodeSpans(line)
	var out []Field
	var match []int
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '[' && c != '(' {
			continue
		}
		if c == '[' && (i+1 < len(s) && s[i+1] == '[' || i > 0 && s[i-1] == '[') {
			continue // a [[wikilink]]
		}
		key, n, ok := fieldKey(s[i+1:], false)
		if !ok {
			continue
		}
		if match == nil {
			match = matchBrackets(s)
		}
		if end := match[i]; end > 0 {
			out = append(out, Field{Key: key, Value: trimSpace(line[i+1+n : end])})
			i = end
		}
	}
	if len(out) > 0 {
		return out
	}
	rest := stripContainer(s)
	if r, ok := listMarker(rest); ok {
		rest = r
		if len(rest) >= 3 && rest[0] == '[' {
			if _, size := utf8.DecodeRuneInString(rest[1:]); 1+size < len(rest) && rest[1+size] == ']' {
				return nil // a task: bracketed fields only
			}
		}
	}
	off := len(s) - len(rest)
	key, n, ok := fieldKey(rest, true)
	if !ok {
		return nil
	}
	return []Field{{Key: key, Value: trimSpace(line[off+n:])}}
}

// fieldKey reads "key::" at the start of s (wrappers such as ** allowed
// around the key when wrapped): the key, the bytes up to after "::".
func fieldKey(s string, wrapped bool) (string, int, bool) {
	i := 0
	if wrapped {
		for i < len(s) && strings.IndexByte("*_~", s[i]) >= 0 {
			i++
		}
	}
	start := i
	for i < len(s) && i-start <= maxFieldKey {
		r, w := utf8.DecodeRuneInString(s[i:])
		if i == start {
			if !keyStart(r) {
				return "", 0, false
			}
		} else if !keyStart(r) && r != '-' && r != ' ' && r != '/' {
			break
		}
		i += w
	}
	end := i
	if wrapped {
		for i < len(s) && strings.IndexByte("*_~", s[i]) >= 0 {
			i++
		}
	}
	key := strings.TrimRight(s[start:end], " ")
	if key == "" || len(key) > maxFieldKey || !strings.HasPrefix(s[i:], "::") {
		return "", 0, false
	}
	if wrapped {
		key = strings.TrimRight(key, "_")
		if key == "" {
			return "", 0, false
		}
	}
	return key, i + 2, true
}

// keyStart reports whether r may start (or continue) a key: a letter, a
// digit, '_' or a symbol such as an emoji.
func keyStart(r rune) bool {
	if r == utf8.RuneError {
		return false
	}
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || r >= 0x80 && (unicode.IsSymbol(r) || unicode.Is(unicode.Mn, r))
}

// matchBrackets returns, for each '[' and '(' of s, the offset of the
// bracket closing it (brackets of the same kind nest, so [[links]] in a
// value stay whole), or -1; in one pass, so hostile lines stay linear.
func matchBrackets(s string) []int {
	match := make([]int, len(s))
	var sq, par []int
	for i := 0; i < len(s); i++ {
		match[i] = -1
		switch s[i] {
		case '[':
			sq = append(sq, i)
		case '(':
			par = append(par, i)
		case ']':
			if n := len(sq); n > 0 {
				match[sq[n-1]] = i
				sq = sq[:n-1]
			}
		case ')':
			if n := len(par); n > 0 {
				match[par[n-1]] = i
				par = par[:n-1]
			}
		}
	}
	return match
}

// blankCodeSpans returns line with its `code spans` replaced by NUL
// bytes (same length), so no field is read inside or across them.
func blankCodeSpans(line string) string {
	if strings.IndexByte(line, '`') < 0 {
		return line
	}
	b := []byte(line)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := runLen(line, i, '`')
		// find a closing run of the same length
		j := i + n
		closed := -1
		for j < len(b) {
			k := strings.IndexByte(line[j:], '`')
			if k < 0 {
				break
			}
			j += k
			m := runLen(line, j, '`')
			if m == n {
				closed = j
				break
			}
			j += m
		}
		if closed < 0 {
			i += n
			continue
		}
		for k := i; k < closed+n; k++ {
			b[k] = 0 // no key, bracket or "::" can include it
		}
		i = closed + n
	}
	return string(b)
}

// taskFieldDates fills a task's dates from its inline fields (Dataview's
// due, scheduled, start, completion), where no emoji field set them.
func taskFieldDates(t *Task, fields []Field) {
	for _, f := range fields {
		v := f.Value
		if len(v) < 10 || !IsTaskDate(v[:10]) {
			continue
		}
		switch NormalizeFieldKey(f.Key) {
		case "due":
			setField(t, fieldDue, v[:10])
		case "scheduled":
			setField(t, fieldScheduled, v[:10])
		case "start":
			setField(t, fieldStart, v[:10])
		case "completion":
			setField(t, fieldDone, v[:10])
		}
	}
}
