package markdown

import "strings"

// HeadingTexts returns the text of every heading, in order (nil when the
// note has none).
func (d *Doc) HeadingTexts() []string {
	var out []string
	for _, h := range d.Headings {
		out = append(out, h.Text)
	}
	return out
}

// MatchHeadings returns the indexes (in Headings) of the headings that want
// names: a heading's text, or the path of nested headings that ends with it,
// like "Parent > Child". The match is case-insensitive and leading #s are
// ignored.
func (d *Doc) MatchHeadings(want string) []int {
	parts := strings.Split(want, ">")
	for i := range parts {
		parts[i] = strings.ToLower(strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(parts[i]), "#")))
	}
	var stack []Heading
	var hits []int
	for i, h := range d.Headings {
		for len(stack) > 0 && stack[len(stack)-1].Level >= h.Level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, h)
		if pathMatches(stack, parts) {
			hits = append(hits, i)
		}
	}
	return hits
}

// pathMatches reports whether the innermost headings of stack are parts.
func pathMatches(stack []Heading, parts []string) bool {
	if len(parts) > len(stack) {
		return false
	}
	off := len(stack) - len(parts)
	for i, p := range parts {
		if strings.ToLower(stack[off+i].Text) != p {
			return false
		}
	}
	return true
}

// SectionEnd returns the last line of heading i's section: the line before
// the next heading of the same or a higher level, else last (the note's
// last line).
func (d *Doc) SectionEnd(i, last int) int {
	h := d.Headings[i]
	for _, n := range d.Headings[i+1:] {
		if n.Level <= h.Level {
			return n.Line - 1
		}
	}
	return last
}
