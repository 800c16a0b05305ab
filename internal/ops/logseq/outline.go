package logseq

import (
	"crypto/rand"
	"fmt"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/noteedit"
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
	noteedit.Doc
	unit   string // one level of indentation: "\t" or N spaces
	blocks []oblock
}

func newOutline(rel, text string) *outlineDoc {
	d := &outlineDoc{Doc: *noteedit.NewDoc(rel, text, true)}
	d.reparse()
	return d
}

// reparse rebuilds the block list from the lines.
func (d *outlineDoc) reparse() {
	doc := markdown.Parse([]byte(d.Text()), markdown.Options{Path: d.Rel, Logseq: true})
	d.blocks = d.blocks[:0]
	for i, b := range doc.Blocks {
		ln := b.Line - 1
		if ln < 0 || ln >= len(d.Lines) {
			continue
		}
		l := d.Lines[ln]
		ws := len(l) - len(strings.TrimLeft(l, " \t"))
		ob := oblock{line: ln, end: b.EndLine, depth: b.Depth, parent: b.Parent, indent: l[:ws], uuid: strings.ToLower(b.UUID)}
		if i == 0 && b.Depth == 0 && strings.TrimSpace(b.Content) == "" && len(b.Properties) > 0 && noteedit.PageProps(d.Lines).Bulleted {
			ob.pageProps = true
		}
		d.blocks = append(d.blocks, ob)
	}
	for i := range d.blocks {
		d.blocks[i].subEnd = len(d.Lines)
		for j := i + 1; j < len(d.blocks); j++ {
			if d.blocks[j].depth <= d.blocks[i].depth {
				d.blocks[i].subEnd = d.blocks[j].line
				break
			}
		}
		// Blank lines between a subtree and what follows stay outside it.
		for d.blocks[i].subEnd > d.blocks[i].end && strings.TrimSpace(d.Lines[d.blocks[i].subEnd-1]) == "" {
			d.blocks[i].subEnd--
		}
	}
	d.unit = detectIndentUnit(d.Lines)
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

// at returns the block at a child-index path, counted as get_page counts
// (every block of the parse, the page-properties block included).
func (d *outlineDoc) at(path []int) (int, bool) {
	p := -1
	for _, n := range path {
		var kids []int
		for i, b := range d.blocks {
			if b.parent == p {
				kids = append(kids, i)
			}
		}
		if n >= len(kids) {
			return 0, false
		}
		p = kids[n]
	}
	return p, p >= 0
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
// properties (sorted, id:: last), then the rest of its text (see bodyLines).
func blockLines(indent, unit, content string, props map[string]string, uuid string) []string {
	text := noteedit.ContentLines(content)
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
	return append(out, bodyLines(indent, unit, text)...)
}

// bodyLines renders the lines of a block's text after its first line:
// continuation lines two spaces past the bullet, and lines starting with
// "- " as child blocks, nested by their own indentation (any mix of tabs
// and spaces in the input) and written one unit of the file's indentation
// per level, so a tab-indented page stays tab-indented. Lines inside a
// ``` fence are continuation lines whatever they start with.
func bodyLines(indent, unit string, text []string) []string {
	var out []string
	width := func(ws string) int { return len(strings.ReplaceAll(ws, "\t", "  ")) } // a tab counts as two spaces
	var stack []int                                                                 // input indentation widths of the open child bullets
	cur, curWS := indent, ""                                                        // the bullet the next continuation line belongs to
	fence := false
	for _, l := range text {
		t := strings.TrimLeft(l, " \t")
		ws := l[:len(l)-len(t)]
		switch {
		case t == "":
			out = append(out, "")
			continue
		case !fence && (strings.HasPrefix(t, "- ") || t == "-"):
			w := width(ws)
			for len(stack) > 0 && stack[len(stack)-1] >= w {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, w)
			cur, curWS = indent+strings.Repeat(unit, len(stack)), ws
			out = append(out, strings.TrimRight(cur+t, " "))
			continue
		}
		if strings.HasPrefix(t, "```") {
			fence = !fence
		}
		// A continuation line keeps its indentation past its bullet's.
		rest := t
		if strings.HasPrefix(l, curWS) {
			rest = strings.TrimPrefix(strings.TrimPrefix(l[len(curWS):], "  "), "\t")
			if len(stack) == 0 {
				rest = l
			}
		}
		out = append(out, cur+"  "+rest)
	}
	return out
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
	at := len(d.Lines)
	for at > 0 && strings.TrimSpace(d.Lines[at-1]) == "" {
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
			l := d.Lines[ln]
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
