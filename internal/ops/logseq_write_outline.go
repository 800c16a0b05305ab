package ops

import (
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
)

// The outline editor changes Logseq pages as text: blocks are cut, inserted
// and re-indented as whole lines, in the file's own indentation (tabs, or
// its number of spaces), and the lines of blocks that do not move keep
// their bytes. Property lines (id:: first of all) are never rewritten unless
// asked to.

// oblock is one block of a page file.
type oblock struct {
	line   int // 0-based bullet line
	end    int // exclusive end of the block's own lines
	subEnd int // exclusive end of the block and its children
	depth  int
	parent int
	indent string // leading whitespace of the bullet line
	uuid   string
	// pageProps marks a first block made only of properties (the page's).
	pageProps bool
}

// outlineDoc is a Logseq page being edited.
type outlineDoc struct {
	textDoc
	unit   string // one level of indentation: "\t" or N spaces
	blocks []oblock
}

func newOutline(rel, text string) *outlineDoc {
	d := &outlineDoc{textDoc: *newTextDoc(rel, text, true)}
	d.reparse()
	return d
}

// reparse rebuilds the block list from the lines.
func (d *outlineDoc) reparse() {
	doc := markdown.Parse([]byte(d.text()), markdown.Options{Path: d.rel, Logseq: true})
	d.blocks = d.blocks[:0]
	for i, b := range doc.Blocks {
		ln := b.Line - 1
		if ln < 0 || ln >= len(d.lines) {
			continue
		}
		l := d.lines[ln]
		ws := len(l) - len(strings.TrimLeft(l, " \t"))
		ob := oblock{line: ln, end: b.EndLine, depth: b.Depth, parent: b.Parent, indent: l[:ws], uuid: strings.ToLower(b.UUID)}
		if i == 0 && b.Depth == 0 && strings.TrimSpace(b.Content) == "" && len(b.Properties) > 0 && pageProps(d.lines).bulleted {
			ob.pageProps = true
		}
		d.blocks = append(d.blocks, ob)
	}
	for i := range d.blocks {
		d.blocks[i].subEnd = len(d.lines)
		for j := i + 1; j < len(d.blocks); j++ {
			if d.blocks[j].depth <= d.blocks[i].depth {
				d.blocks[i].subEnd = d.blocks[j].line
				break
			}
		}
		// Blank lines between a subtree and what follows stay outside it.
		for d.blocks[i].subEnd > d.blocks[i].end && strings.TrimSpace(d.lines[d.blocks[i].subEnd-1]) == "" {
			d.blocks[i].subEnd--
		}
	}
	d.unit = detectIndentUnit(d.lines)
}

// detectIndentUnit returns the file's indentation step: a tab when nested
// bullets are tab-indented (Logseq's default, also for files without
// nesting), else the smallest space indentation of a bullet.
func detectIndentUnit(lines []string) string {
	spaces := 0
	for _, l := range lines {
		t := strings.TrimLeft(l, " \t")
		if !strings.HasPrefix(t, "- ") && t != "-" || len(t) == len(l) {
			continue
		}
		if l[0] == '\t' {
			return "\t"
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if spaces == 0 || n < spaces {
			spaces = n
		}
	}
	if spaces == 0 {
		return "\t"
	}
	return strings.Repeat(" ", spaces)
}

// find returns the block with a uuid.
func (d *outlineDoc) find(uuid string) (int, bool) {
	uuid = strings.ToLower(uuid)
	for i, b := range d.blocks {
		if b.uuid == uuid {
			return i, true
		}
	}
	return 0, false
}

// children returns the direct children of block p (-1: top level), without
// the page-properties block.
func (d *outlineDoc) children(p int) []int {
	var out []int
	for i, b := range d.blocks {
		if b.parent == p && !b.pageProps {
			out = append(out, i)
		}
	}
	return out
}

// newUUID returns a random (version 4) uuid, as Logseq writes them.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// blockLines renders a new block: its first line after the bullet, the
// properties (sorted, id:: last), then the rest of its text, each
// continuation line indented two spaces past the bullet.
func blockLines(indent, content string, props map[string]string, uuid string) []string {
	text := contentLines(content)
	first := ""
	if len(text) > 0 {
		first, text = text[0], text[1:]
	}
	out := []string{strings.TrimRight(indent+"- "+first, " ")}
	if first == "" {
		out[0] = indent + "-"
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, indent+"  "+k+":: "+props[k])
	}
	if uuid != "" {
		out = append(out, indent+"  id:: "+uuid)
	}
	for _, l := range text {
		if l == "" {
			out = append(out, "")
		} else {
			out = append(out, indent+"  "+l)
		}
	}
	return out
}

// checkProps validates block or page properties given by a caller.
func checkProps(props map[string]string, allowID bool) error {
	for k, v := range props {
		if _, _, ok := propLine(k + ":: x"); !ok || strings.Contains(k, "::") {
			return errs.New(errs.CodeInvalidInput, "property name %q is not valid (letters, digits, - _ . / ? !)", k).With("property", k)
		}
		if strings.EqualFold(k, "id") && !allowID {
			return errs.New(errs.CodeInvalidInput, "the id:: property is managed by loci and Logseq (block uuids stay stable); it cannot be set or removed").With("property", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return errs.New(errs.CodeInvalidInput, "the value of property %s spans lines", k).With("property", k)
		}
	}
	return nil
}

// propLine parses a "key:: value" line (leading whitespace allowed), with the
// rules of the Logseq parser.
func propLine(l string) (key, val string, ok bool) {
	s := strings.TrimLeft(l, " \t")
	i := strings.Index(s, "::")
	if i <= 0 {
		return "", "", false
	}
	for _, r := range s[:i] {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./?!", r)) {
			return "", "", false
		}
	}
	rest := s[i+2:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", "", false
	}
	return s[:i], strings.TrimSpace(rest), true
}

// insertAt returns the line where a new block goes: under parent (-1: top
// level) first or last, or before/after a sibling. It also returns the
// indentation of the new block.
func (d *outlineDoc) insertAt(parent, sibling int, position string) (int, string) {
	if sibling >= 0 {
		s := d.blocks[sibling]
		if position == "before" {
			return s.line, s.indent
		}
		return s.subEnd, s.indent
	}
	kids := d.children(parent)
	indent := ""
	if parent >= 0 {
		indent = d.blocks[parent].indent + d.unit
	} else if len(kids) > 0 {
		indent = d.blocks[kids[0]].indent
	}
	if len(kids) > 0 {
		indent = d.blocks[kids[0]].indent
		if position == "first" {
			return d.blocks[kids[0]].line, indent
		}
		return d.blocks[kids[len(kids)-1]].subEnd, indent
	}
	if parent >= 0 {
		return d.blocks[parent].subEnd, indent
	}
	// An empty page: after the page properties, else at the end.
	at := len(d.lines)
	for at > 0 && strings.TrimSpace(d.lines[at-1]) == "" {
		at--
	}
	return at, indent
}

// subtree returns the lines of block i with its children, re-indented so
// that the block's bullet starts with indent (children one unit deeper
// each, in unit). Lines keep everything after their indentation.
func (d *outlineDoc) subtree(i int, indent, unit string) []string {
	b := d.blocks[i]
	var out []string
	for k := i; k < len(d.blocks) && d.blocks[k].line < b.subEnd; k++ {
		c := d.blocks[k]
		newIndent := indent + strings.Repeat(unit, c.depth-b.depth)
		end := b.subEnd
		if k+1 < len(d.blocks) && d.blocks[k+1].line < end {
			end = d.blocks[k+1].line
		}
		for ln := c.line; ln < end; ln++ {
			l := d.lines[ln]
			switch {
			case strings.TrimSpace(l) == "":
				out = append(out, "")
			case strings.HasPrefix(l, c.indent):
				out = append(out, newIndent+l[len(c.indent):])
			default:
				out = append(out, newIndent+"  "+strings.TrimLeft(l, " \t"))
			}
		}
	}
	return out
}

// pageRegion is where a page's properties are: "key:: value" lines at the
// top (plain), or a first block made only of properties (bulleted).
type pageRegion struct {
	start, end int // [start, end) lines; empty when the page has none
	bulleted   bool
}

func pageProps(lines []string) pageRegion {
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) {
		return pageRegion{}
	}
	first := lines[i]
	t := strings.TrimLeft(first, " \t")
	if len(t) == len(first) && !strings.HasPrefix(t, "-") {
		if _, _, ok := propLine(first); ok {
			j := i
			for j < len(lines) {
				if _, _, ok := propLine(lines[j]); !ok || strings.HasPrefix(strings.TrimLeft(lines[j], " \t"), "- ") {
					break
				}
				j++
			}
			return pageRegion{start: i, end: j}
		}
		return pageRegion{}
	}
	if strings.HasPrefix(first, "- ") {
		if _, _, ok := propLine(first[2:]); ok {
			j := i + 1
			for j < len(lines) && strings.HasPrefix(lines[j], "  ") {
				if _, _, ok := propLine(lines[j]); !ok {
					return pageRegion{} // the block has text: it is not the page's properties
				}
				j++
			}
			return pageRegion{start: i, end: j, bulleted: true}
		}
	}
	return pageRegion{}
}

// propValue renders a JSON value as a Logseq property value.
func propValue(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		if strings.ContainsAny(x, "\r\n") {
			return "", errs.New(errs.CodeInvalidInput, "a property value cannot span lines")
		}
		return x, nil
	case []any:
		parts := make([]string, 0, len(x))
		for _, it := range x {
			s, err := propValue(it)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ", "), nil
	case float64, bool:
		return fmt.Sprint(x), nil
	}
	return "", errs.New(errs.CodeInvalidInput, "unsupported property value of type %T", v)
}

// setProperty sets a page property of a Logseq page.
func (d *textDoc) setProperty(key string, value any) error {
	val, err := propValue(value)
	if err != nil {
		return err
	}
	if err := checkProps(map[string]string{key: val}, false); err != nil {
		return err
	}
	r := pageProps(d.lines)
	for ln := r.start; ln < r.end; ln++ {
		k, _, _ := propLine(d.lines[ln])
		if strings.EqualFold(k, key) {
			l := d.lines[ln]
			prefix := l[:strings.Index(l, k)]
			d.lines[ln] = strings.TrimRight(prefix+k+":: "+val, " ")
			return nil
		}
	}
	line := strings.TrimRight(key+":: "+val, " ")
	switch {
	case r.end > r.start && r.bulleted:
		d.lines = splice(d.lines, r.end, r.end, []string{"  " + line})
	case r.end > r.start:
		d.lines = splice(d.lines, r.end, r.end, []string{line})
	default:
		repl := []string{line}
		if len(d.lines) > 0 && strings.TrimSpace(d.lines[0]) != "" {
			repl = append(repl, "")
		}
		d.lines = splice(d.lines, 0, 0, repl)
	}
	return nil
}

// propsDelete removes a page property (no change when it is absent).
func propsDelete(lines []string, key string) []string {
	r := pageProps(lines)
	for ln := r.start; ln < r.end; ln++ {
		k, _, _ := propLine(lines[ln])
		if !strings.EqualFold(k, key) {
			continue
		}
		if r.bulleted && ln == r.start {
			if r.end-r.start == 1 {
				return splice(lines, r.start, r.end, nil)
			}
			out := splice(lines, ln, ln+1, nil)
			out[ln] = "- " + strings.TrimLeft(out[ln], " \t")
			return out
		}
		out := splice(lines, ln, ln+1, nil)
		if r.end-r.start == 1 && !r.bulleted && ln < len(out) && strings.TrimSpace(out[ln]) == "" {
			out = splice(out, ln, ln+1, nil)
		}
		return out
	}
	return lines
}

// pagePropValue returns a page property's value ("" and false when absent).
func pagePropValue(lines []string, key string) (string, bool) {
	r := pageProps(lines)
	for ln := r.start; ln < r.end; ln++ {
		if k, v, _ := propLine(lines[ln]); strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// propertyTags adds or removes tags in a Logseq page's tags:: property.
func (d *textDoc) propertyTags(add bool, tags []string) error {
	cur, _ := pagePropValue(d.lines, "tags")
	var have []string
	for _, t := range strings.Split(cur, ",") {
		t = strings.TrimSpace(t)
		if t != "" {
			have = append(have, t)
		}
	}
	plain := func(t string) string {
		t = normTag(t)
		if strings.HasPrefix(t, "[[") && strings.HasSuffix(t, "]]") {
			t = t[2 : len(t)-2]
		}
		return strings.ToLower(strings.TrimSpace(t))
	}
	var out []string
	if add {
		out = have
		for _, t := range tags {
			seen := false
			for _, h := range out {
				seen = seen || plain(h) == plain(t)
			}
			if !seen {
				out = append(out, normTag(t))
			}
		}
	} else {
		for _, h := range have {
			drop := false
			for _, t := range tags {
				drop = drop || plain(h) == plain(t)
			}
			if !drop {
				out = append(out, h)
			}
		}
	}
	if len(out) == len(have) {
		return nil
	}
	if len(out) == 0 {
		d.lines = propsDelete(d.lines, "tags")
		return nil
	}
	return d.setProperty("tags", strings.Join(out, ", "))
}
