package ops

import (
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
)

// Patch kinds of edit_note.
var patchKinds = []string{
	"replace_lines", "insert_lines", "delete_lines", "replace_text", "insert_after_heading", "append_to_section",
	"replace_section", "set_frontmatter", "delete_frontmatter", "add_tags", "remove_tags",
}

// EditPatch is one change of edit_note.
type EditPatch struct {
	Op            string   `json:"op" jsonschema:"the patch kind: replace_lines, insert_lines, delete_lines, replace_text, insert_after_heading, append_to_section, replace_section, set_frontmatter, delete_frontmatter, add_tags or remove_tags"`
	StartLine     int      `json:"start_line,omitempty" jsonschema:"replace_lines, delete_lines: first line (1-based, as read_note numbers them)"`
	EndLine       int      `json:"end_line,omitempty" jsonschema:"replace_lines, delete_lines: last line, inclusive (default: start_line)"`
	Line          int      `json:"line,omitempty" jsonschema:"insert_lines: the new lines go before this line (1-based); total lines + 1 appends"`
	Content       string   `json:"content,omitempty" jsonschema:"replace_lines, insert_lines, insert_after_heading, append_to_section, replace_section: the new lines"`
	OldText       string   `json:"old_text,omitempty" jsonschema:"replace_text: the exact text to find (may span lines)"`
	NewText       string   `json:"new_text,omitempty" jsonschema:"replace_text: its replacement (empty deletes it)"`
	ExpectedCount int      `json:"expected_count,omitempty" jsonschema:"replace_text: how many times old_text must occur (default 1); every occurrence is replaced, and any other count fails with conflict"`
	Heading       string   `json:"heading,omitempty" jsonschema:"insert_after_heading, append_to_section, replace_section: the heading's text, or a path like Parent > Child; it must match exactly one heading"`
	Key           string   `json:"key,omitempty" jsonschema:"set_frontmatter, delete_frontmatter: the top-level frontmatter key"`
	Value         any      `json:"value,omitempty" jsonschema:"set_frontmatter: the value: string, number, boolean, list or object (null or absent leaves it empty)"`
	Tags          []string `json:"tags,omitempty" jsonschema:"add_tags, remove_tags: tags with or without #"`
}

// validate checks the fields a patch kind needs.
func (p *EditPatch) validate(i int) error {
	bad := func(format string, args ...any) error {
		return errs.New(errs.CodeInvalidInput, "patches[%d] (%s): %s", i, p.Op, fmt.Sprintf(format, args...)).With("patch", i)
	}
	switch p.Op {
	case "replace_lines", "delete_lines":
		if p.StartLine < 1 || (p.EndLine != 0 && p.EndLine < p.StartLine) {
			return bad("start_line must be >= 1 and end_line >= start_line")
		}
	case "insert_lines":
		if p.Line < 1 {
			return bad("line must be >= 1 (total lines + 1 appends)")
		}
	case "replace_text":
		if p.OldText == "" {
			return bad("old_text is empty")
		}
		if p.ExpectedCount < 0 {
			return bad("expected_count must be positive")
		}
	case "insert_after_heading", "append_to_section", "replace_section":
		if strings.TrimSpace(p.Heading) == "" {
			return bad("heading is empty")
		}
	case "set_frontmatter", "delete_frontmatter":
		if strings.TrimSpace(p.Key) == "" || strings.ContainsAny(p.Key, "\n\r") {
			return bad("key is empty or spans lines")
		}
	case "add_tags", "remove_tags":
		if len(p.Tags) == 0 {
			return bad("tags is empty")
		}
		for _, t := range p.Tags {
			if p.Op == "add_tags" {
				if err := validTag(normTag(t)); err != nil {
					return bad("%s", errs.As(err).Message)
				}
			}
		}
	default:
		return errs.New(errs.CodeInvalidInput, "patches[%d]: unknown op %q; use one of %s", i, p.Op, strings.Join(patchKinds, ", ")).With("patch", i).With("allowed", patchKinds)
	}
	return nil
}

// textDoc is a note being edited: LF lines and whether the last one ended
// with a newline.
type textDoc struct {
	rel    string
	lines  []string
	eol    bool
	logseq bool
}

func newTextDoc(rel, text string, logseq bool) *textDoc {
	lines, eol := splitLines(text)
	return &textDoc{rel: rel, lines: lines, eol: eol, logseq: logseq}
}

func (d *textDoc) text() string {
	if len(d.lines) == 0 {
		return ""
	}
	s := strings.Join(d.lines, "\n")
	if d.eol {
		s += "\n"
	}
	return s
}

// contentLines splits caller text into lines (CRLF accepted).
func contentLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if s == "" {
		return nil
	}
	l, _ := splitLines(s)
	return l
}

func (d *textDoc) conflict(i int, p *EditPatch, format string, args ...any) *errs.Error {
	return errs.New(errs.CodeConflict, "patches[%d] (%s) does not fit %s: %s", i, p.Op, d.rel, fmt.Sprintf(format, args...)).
		With("path", d.rel).With("patch", i).With("total_lines", len(d.lines))
}

// findHeading returns the 0-based line of the one heading that matches want
// (its text, or a path "A > B", case-insensitive) and the end of its section
// (exclusive: the next heading of the same or a higher level, or the end).
func (d *textDoc) findHeading(i int, p *EditPatch) (int, int, error) {
	doc := markdown.Parse([]byte(d.text()), markdown.Options{Path: d.rel, Logseq: d.logseq})
	hits := doc.MatchHeadings(p.Heading)
	switch len(hits) {
	case 0:
		return 0, 0, d.conflict(i, p, "no heading %q", p.Heading).With("headings", doc.HeadingTexts())
	case 1:
	default:
		var at []int
		for _, k := range hits {
			at = append(at, doc.Headings[k].Line)
		}
		return 0, 0, d.conflict(i, p, "%d headings match %q (lines %v); give its path, like Parent > %s", len(hits), p.Heading, at, strings.TrimSpace(p.Heading)).With("lines", at)
	}
	h := doc.Headings[hits[0]]
	end := doc.SectionEnd(hits[0], len(d.lines))
	return h.Line - 1, end, nil
}

// lastContent returns the index after the last non-blank line in [from, to).
func (d *textDoc) lastContent(from, to int) int {
	for to > from && strings.TrimSpace(d.lines[to-1]) == "" {
		to--
	}
	return to
}

// apply runs one patch. It returns a note for the caller (or "").
func (d *textDoc) apply(i int, p *EditPatch) (string, error) {
	n := len(d.lines)
	switch p.Op {
	case "replace_lines", "delete_lines":
		end := p.EndLine
		if end == 0 {
			end = p.StartLine
		}
		if p.StartLine > n || end > n {
			return "", d.conflict(i, p, "lines %d-%d are past its end (%d lines)", p.StartLine, end, n)
		}
		var repl []string
		if p.Op == "replace_lines" {
			repl = contentLines(p.Content)
		}
		d.lines = splice(d.lines, p.StartLine-1, end, repl)
	case "insert_lines":
		if p.Line > n+1 {
			return "", d.conflict(i, p, "line %d is past its end (%d lines; %d appends)", p.Line, n, n+1)
		}
		d.lines = splice(d.lines, p.Line-1, p.Line-1, contentLines(p.Content))
	case "replace_text":
		text := d.text()
		old := strings.ReplaceAll(p.OldText, "\r\n", "\n")
		want := p.ExpectedCount
		if want == 0 {
			want = 1
		}
		got := strings.Count(text, old)
		if got != want {
			e := d.conflict(i, p, "old_text occurs %d times, expected %d", got, want).With("found", got).With("expected_count", want)
			if got > 0 {
				var at []int
				for off, k := 0, 0; k < got && k < 20; k++ {
					j := strings.Index(text[off:], old)
					at = append(at, strings.Count(text[:off+j], "\n")+1)
					off += j + len(old)
				}
				e = e.With("lines", at)
			}
			return "", e
		}
		text = strings.ReplaceAll(text, old, strings.ReplaceAll(p.NewText, "\r\n", "\n"))
		eol := d.eol
		*d = *newTextDoc(d.rel, text, d.logseq)
		if text == "" {
			d.eol = eol
		}
	case "insert_after_heading":
		h, _, err := d.findHeading(i, p)
		if err != nil {
			return "", err
		}
		d.lines = splice(d.lines, h+1, h+1, contentLines(p.Content))
	case "append_to_section":
		h, end, err := d.findHeading(i, p)
		if err != nil {
			return "", err
		}
		at := d.lastContent(h+1, end)
		d.lines = splice(d.lines, at, at, contentLines(p.Content))
	case "replace_section":
		h, end, err := d.findHeading(i, p)
		if err != nil {
			return "", err
		}
		d.lines = splice(d.lines, h+1, d.lastContent(h+1, end), contentLines(p.Content))
	case "set_frontmatter":
		if d.logseq && !hasFM(d.lines) {
			return "", d.setProperty(p.Key, p.Value)
		}
		lines, err := fmSet(d.lines, d.rel, p.Key, p.Value)
		if err != nil {
			return "", err
		}
		d.lines = lines
	case "delete_frontmatter":
		if d.logseq && !hasFM(d.lines) {
			d.lines = propsDelete(d.lines, p.Key)
			return "", nil
		}
		lines, _, err := fmDelete(d.lines, d.rel, p.Key)
		if err != nil {
			return "", err
		}
		d.lines = lines
	case "add_tags", "remove_tags":
		if d.logseq && !hasFM(d.lines) {
			return "", d.propertyTags(p.Op == "add_tags", p.Tags)
		}
		f := fmAddTags
		if p.Op == "remove_tags" {
			f = fmRemoveTags
		}
		lines, changed, err := f(d.lines, d.rel, p.Tags)
		if err != nil {
			return "", err
		}
		d.lines = lines
		if p.Op == "remove_tags" {
			return d.inlineTagNote(p.Tags, changed), nil
		}
	}
	if len(d.lines) > 0 && n == 0 {
		d.eol = true
	}
	return "", nil
}

// inlineTagNote tells the caller about inline #tags remove_tags left alone.
func (d *textDoc) inlineTagNote(tags []string, removed []string) string {
	doc := markdown.Parse([]byte(d.text()), markdown.Options{Path: d.rel, Logseq: d.logseq})
	var at []string
	for _, t := range doc.Tags {
		if t.Source != "inline" {
			continue
		}
		for _, want := range tags {
			if strings.EqualFold(t.Name, normTag(want)) {
				at = append(at, fmt.Sprintf("#%s on line %d", t.Name, t.Line))
			}
		}
	}
	if len(at) == 0 {
		return ""
	}
	return "inline tags in the text are not removed (edit them with replace_text): " + strings.Join(at, ", ")
}

func hasFM(lines []string) bool {
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
