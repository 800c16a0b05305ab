package markdown

import (
	"strings"
	"unicode/utf8"
)

// fenceInfo is an open fenced code block: its fence character and length.
type fenceInfo struct {
	open bool
	ch   byte // '`' or '~'
	n    int  // fence length, >= 3
}

// stripContainer removes leading indentation and blockquote markers ("> "),
// so fences inside list items and callouts are recognised.
func stripContainer(line string) string {
	for {
		line = strings.TrimLeft(line, " \t")
		if line == "" || line[0] != '>' {
			return line
		}
		line = line[1:]
	}
}

// openFence reports whether line opens a fenced code block (``` or ~~~, three
// or more, any indentation). A backtick fence's info string may not contain a
// backtick, so "```code```" on one line is an inline span, not a fence.
func openFence(line string) (fenceInfo, bool) {
	s := stripContainer(line)
	if len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return fenceInfo{}, false
	}
	c := s[0]
	n := runLen(s, 0, c)
	if n < 3 {
		return fenceInfo{}, false
	}
	if c == '`' && strings.IndexByte(s[n:], '`') >= 0 {
		return fenceInfo{}, false
	}
	return fenceInfo{open: true, ch: c, n: n}, true
}

// closes reports whether line closes the fence f: the same character, at
// least as long, and nothing but spaces after it.
func (f fenceInfo) closes(line string) bool {
	s := stripContainer(line)
	m := runLen(s, 0, f.ch)
	return m >= f.n && isBlank(s[m:])
}

// runLen counts consecutive bytes equal to c starting at s[i].
func runLen(s string, i int, c byte) int {
	j := i
	for j < len(s) && s[j] == c {
		j++
	}
	return j - i
}

// leadingSpaces counts leading ' ' (a tab counts as 4, enough to disqualify
// the line from "up to 3 spaces" rules).
func leadingSpaces(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// atxHeading parses "# Heading" (up to 3 leading spaces, 1-6 '#', then a space,
// a tab or the end of the line). An optional closing sequence of '#' is removed.
func atxHeading(line string) (level int, text string, ok bool) {
	ind := leadingSpaces(line)
	if ind > 3 {
		return 0, "", false
	}
	s := line[ind:]
	n := runLen(s, 0, '#')
	if n < 1 || n > 6 || (n < len(s) && !isSpace(s[n])) {
		return 0, "", false
	}
	t := trimSpace(s[n:])
	j := len(t)
	for j > 0 && t[j-1] == '#' {
		j--
	}
	switch {
	case j == 0:
		t = ""
	case j < len(t) && isSpace(t[j-1]):
		t = trimSpace(t[:j])
	}
	return n, t, true
}

// setextUnderline returns 1 for a "===" line, 2 for a "---" line (three or
// more, up to 3 leading spaces, trailing spaces allowed), 0 otherwise.
func setextUnderline(line string) int {
	ind := leadingSpaces(line)
	if ind > 3 {
		return 0
	}
	s := line[ind:]
	if s == "" || (s[0] != '=' && s[0] != '-') {
		return 0
	}
	n := runLen(s, 0, s[0])
	if n < 3 || !isBlank(s[n:]) {
		return 0
	}
	if s[0] == '=' {
		return 1
	}
	return 2
}

// setextCandidate reports whether a paragraph starting with line may be
// turned into a setext heading by an underline: plain paragraph text, not a
// list item, blockquote, table row, HTML or indented code.
func setextCandidate(line string) bool {
	if leadingSpaces(line) > 3 {
		return false
	}
	s := trimSpace(line)
	if s == "" {
		return false
	}
	switch s[0] {
	case '>', '|', '<':
		return false
	}
	_, ok := listMarker(s)
	return !ok
}

// listMarker recognises a list item marker ("- ", "* ", "+ ", "1. ", "1) ")
// at the start of s (no leading space) and returns the rest after the spaces
// that follow the marker.
func listMarker(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	i := 0
	switch c := s[0]; {
	case c == '-' || c == '*' || c == '+':
		i = 1
	case c >= '0' && c <= '9':
		for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i >= len(s) || (s[i] != '.' && s[i] != ')') {
			return "", false
		}
		i++
	default:
		return "", false
	}
	if i == len(s) {
		return "", true
	}
	if !isSpace(s[i]) {
		return "", false
	}
	return strings.TrimLeft(s[i:], " \t"), true
}

// checkboxTask parses a task list item: "- [ ] text", "* [x] text",
// "1. [/] text", optionally inside a blockquote.
func checkboxTask(line string) (status, text string, ok bool) {
	rest, ok := listMarker(stripContainer(line))
	if !ok || len(rest) < 3 || rest[0] != '[' {
		return "", "", false
	}
	r, size := utf8.DecodeRuneInString(rest[1:])
	if r == utf8.RuneError && size <= 1 {
		return "", "", false
	}
	end := 1 + size
	if end >= len(rest) || rest[end] != ']' {
		return "", "", false
	}
	after := rest[end+1:]
	if after != "" && !isSpace(after[0]) {
		return "", "", false
	}
	return checkboxStatus(r), trimSpace(after), true
}

// checkboxStatus maps a checkbox character to a task status.
func checkboxStatus(r rune) string {
	switch r {
	case ' ':
		return "todo"
	case 'x', 'X':
		return "done"
	case '-':
		return "cancelled"
	case '/':
		return "in_progress"
	}
	return strings.ToLower(string(r))
}
