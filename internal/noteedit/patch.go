package noteedit

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

// Patch is one change of edit_note (its patches input).
type Patch struct {
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

// CheckKey refuses a frontmatter key that set_frontmatter and
// delete_frontmatter refuse: an empty key, or one that spans lines.
func CheckKey(key string) error {
	if strings.TrimSpace(key) == "" || strings.ContainsAny(key, "\n\r") {
		return errs.New(errs.CodeInvalidInput, "key is empty or spans lines").With("key", key)
	}
	return nil
}

// Check checks the fields a patch kind needs; i is the patch's index in
// the request, for the error.
func (p *Patch) Check(i int) error {
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
		if err := CheckKey(p.Key); err != nil {
			return bad("%s", errs.As(err).Message)
		}
	case "add_tags", "remove_tags":
		if len(p.Tags) == 0 {
			return bad("tags is empty")
		}
		for _, t := range p.Tags {
			if p.Op == "add_tags" {
				if err := ValidTag(NormTag(t)); err != nil {
					return bad("%s", errs.As(err).Message)
				}
			}
		}
	default:
		return errs.New(errs.CodeInvalidInput, "patches[%d]: unknown op %q; use one of %s", i, p.Op, strings.Join(patchKinds, ", ")).With("patch", i).With("allowed", patchKinds)
	}
	return nil
}

func (d *Doc) conflict(i int, p *Patch, format string, args ...any) *errs.Error {
	return errs.New(errs.CodeConflict, "patches[%d] (%s) does not fit %s: %s", i, p.Op, d.Rel, fmt.Sprintf(format, args...)).
		With("path", d.Rel).With("patch", i).With("total_lines", len(d.Lines))
}

// findHeading returns the 0-based line of the one heading that matches want
// (its text, or a path "A > B", case-insensitive) and the end of its section
// (exclusive: the next heading of the same or a higher level, or the end).
func (d *Doc) findHeading(i int, p *Patch) (int, int, error) {
	doc := markdown.Parse([]byte(d.Text()), markdown.Options{Path: d.Rel, Logseq: d.Logseq})
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
	end := doc.SectionEnd(hits[0], len(d.Lines))
	return h.Line - 1, end, nil
}

// lastContent returns the index after the last non-blank line in [from, to).
func (d *Doc) lastContent(from, to int) int {
	for to > from && strings.TrimSpace(d.Lines[to-1]) == "" {
		to--
	}
	return to
}

// Apply runs patch i. It returns a note for the caller (or "").
func (d *Doc) Apply(i int, p *Patch) (string, error) {
	n := len(d.Lines)
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
			repl = ContentLines(p.Content)
		}
		d.Lines = Splice(d.Lines, p.StartLine-1, end, repl)
	case "insert_lines":
		if p.Line > n+1 {
			return "", d.conflict(i, p, "line %d is past its end (%d lines; %d appends)", p.Line, n, n+1)
		}
		d.Lines = Splice(d.Lines, p.Line-1, p.Line-1, ContentLines(p.Content))
	case "replace_text":
		text := d.Text()
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
		eol := d.EOL
		*d = *NewDoc(d.Rel, text, d.Logseq)
		if text == "" {
			d.EOL = eol
		}
	case "insert_after_heading":
		h, _, err := d.findHeading(i, p)
		if err != nil {
			return "", err
		}
		d.Lines = Splice(d.Lines, h+1, h+1, ContentLines(p.Content))
	case "append_to_section":
		h, end, err := d.findHeading(i, p)
		if err != nil {
			return "", err
		}
		at := d.lastContent(h+1, end)
		d.Lines = Splice(d.Lines, at, at, ContentLines(p.Content))
	case "replace_section":
		h, end, err := d.findHeading(i, p)
		if err != nil {
			return "", err
		}
		d.Lines = Splice(d.Lines, h+1, d.lastContent(h+1, end), ContentLines(p.Content))
	case "set_frontmatter":
		if d.Logseq && !HasFrontmatter(d.Lines) {
			return "", d.SetProperty(p.Key, p.Value)
		}
		lines, err := SetKey(d.Lines, d.Rel, p.Key, p.Value)
		if err != nil {
			return "", err
		}
		d.Lines = lines
	case "delete_frontmatter":
		if d.Logseq && !HasFrontmatter(d.Lines) {
			d.Lines = DeleteProperty(d.Lines, p.Key)
			return "", nil
		}
		lines, _, err := DeleteKey(d.Lines, d.Rel, p.Key)
		if err != nil {
			return "", err
		}
		d.Lines = lines
	case "add_tags", "remove_tags":
		if d.Logseq && !HasFrontmatter(d.Lines) {
			return "", d.propertyTags(p.Op == "add_tags", p.Tags)
		}
		f := fmAddTags
		if p.Op == "remove_tags" {
			f = fmRemoveTags
		}
		lines, changed, err := f(d.Lines, d.Rel, p.Tags)
		if err != nil {
			return "", err
		}
		d.Lines = lines
		if p.Op == "remove_tags" {
			return d.inlineTagNote(p.Tags, changed), nil
		}
	}
	if len(d.Lines) > 0 && n == 0 {
		d.EOL = true
	}
	return "", nil
}

// inlineTagNote tells the caller about inline #tags remove_tags left alone.
func (d *Doc) inlineTagNote(tags []string, removed []string) string {
	doc := markdown.Parse([]byte(d.Text()), markdown.Options{Path: d.Rel, Logseq: d.Logseq})
	var at []string
	for _, t := range doc.Tags {
		if t.Source != "inline" {
			continue
		}
		for _, want := range tags {
			if strings.EqualFold(t.Name, NormTag(want)) {
				at = append(at, fmt.Sprintf("#%s on line %d", t.Name, t.Line))
			}
		}
	}
	if len(at) == 0 {
		return ""
	}
	return "inline tags in the text are not removed (edit them with replace_text): " + strings.Join(at, ", ")
}
