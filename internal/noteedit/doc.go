// Package noteedit changes a note's text line by line and leaves every
// other byte alone: edit_note's patches (Doc.Apply), YAML frontmatter keys
// spliced with the style of the value they replace (frontmatter.go), tags,
// Logseq page properties (properties.go), and the unified diffs of a
// write's preview (diff.go). It is pure: no files, no index; the write
// pipeline in internal/ops reads and writes the files.
package noteedit

import (
	"strings"
)

// Doc is a note being edited: its LF lines (no BOM; the caller decodes
// the file and encodes the result in its format) and whether the last one
// ended with a newline. Logseq marks a Logseq page, whose page properties
// stand in for frontmatter when it has none.
type Doc struct {
	Rel    string
	Lines  []string
	EOL    bool
	Logseq bool
}

// NewDoc splits LF text into a Doc.
func NewDoc(rel, text string, logseq bool) *Doc {
	lines, eol := SplitLines(text)
	return &Doc{Rel: rel, Lines: lines, EOL: eol, Logseq: logseq}
}

// Text joins the lines back into LF text.
func (d *Doc) Text() string {
	if len(d.Lines) == 0 {
		return ""
	}
	s := strings.Join(d.Lines, "\n")
	if d.EOL {
		s += "\n"
	}
	return s
}

// ContentLines splits caller text into lines (CRLF accepted).
func ContentLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if s == "" {
		return nil
	}
	l, _ := SplitLines(s)
	return l
}

// HasFrontmatter reports whether lines open with a closed --- fence.
func HasFrontmatter(lines []string) bool {
	if len(lines) == 0 || !isFence(lines[0], "---") {
		return false
	}
	for _, l := range lines[1:] {
		if isFence(l, "---") || isFence(l, "...") {
			return true
		}
	}
	return false
}

// isFence reports whether line is fence followed only by spaces or tabs.
func isFence(line, fence string) bool {
	return strings.TrimRight(line, " \t\r") == fence
}

// Splice replaces lines[a:b] with repl.
func Splice(lines []string, a, b int, repl []string) []string {
	out := make([]string, 0, len(lines)-(b-a)+len(repl))
	out = append(out, lines[:a]...)
	out = append(out, repl...)
	return append(out, lines[b:]...)
}

// SplitLines cuts text into lines without their "\n"; eol reports whether
// the last line ended with one.
func SplitLines(s string) (lines []string, eol bool) {
	if s == "" {
		return nil, true
	}
	eol = strings.HasSuffix(s, "\n")
	if eol {
		s = s[:len(s)-1]
	}
	return strings.Split(s, "\n"), eol
}
