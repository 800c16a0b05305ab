package render

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

var calloutRE = regexp.MustCompile(`^\s*\[!([^\]\s]+)\]([+-]?)[ \t]*(.*?)\s*$`)

// callout turns a blockquote whose first line is [!type]± Title into a
// Callout.
func callout(q *ast.Blockquote, src []byte) {
	p, ok := q.FirstChild().(*ast.Paragraph)
	if !ok || p.Lines().Len() == 0 {
		return
	}
	first := p.Lines().At(0)
	m := calloutRE.FindSubmatch(first.Value(src))
	if m == nil {
		return
	}
	c := &Callout{Name: strings.ToLower(string(m[1])), Title: string(m[3])}
	if len(m[2]) == 1 {
		c.Fold = m[2][0]
	}
	if c.Title == "" {
		r, n := utf8.DecodeRuneInString(c.Name)
		c.Title = string(unicode.ToUpper(r)) + c.Name[n:]
	}
	// Drop the first line's inline nodes from the paragraph.
	for n := p.FirstChild(); n != nil; {
		next := n.NextSibling()
		if s := startOf(n); s >= 0 && s < first.Stop {
			p.RemoveChild(p, n)
		} else if s < 0 && next != nil && startOf(next) >= 0 && startOf(next) < first.Stop {
			p.RemoveChild(p, n)
		} else {
			break
		}
		n = next
	}
	if p.ChildCount() == 0 {
		q.RemoveChild(q, p)
	} else if p.Lines().Len() > 1 {
		// The content keeps its lines after the title's.
		lines := text.NewSegments()
		for i := 1; i < p.Lines().Len(); i++ {
			lines.Append(p.Lines().At(i))
		}
		p.SetLines(lines)
	}
	for q.FirstChild() != nil {
		ch := q.FirstChild()
		q.RemoveChild(q, ch)
		c.AppendChild(c, ch)
	}
	q.Parent().ReplaceChild(q.Parent(), q, c)
}

// startOf is the source offset where inline node n starts (-1 unknown).
func startOf(n ast.Node) int {
	switch t := n.(type) {
	case *ast.Text:
		return t.Segment.Start
	case *ast.RawHTML:
		if t.Segments.Len() > 0 {
			return t.Segments.At(0).Start
		}
	}
	for c := n.FirstChild(); c != nil; c = c.FirstChild() {
		if t, ok := c.(*ast.Text); ok {
			return t.Segment.Start
		}
	}
	return -1
}

var propRE = regexp.MustCompile(`^\s*([A-Za-z0-9_-]+)::\s*(.*?)\s*$`)

// outline turns a Logseq block: its id:: and collapsed:: properties are
// dropped from its text (the id becomes the element's id, for block
// references); a block with children becomes a <details>, closed when it
// was collapsed in Logseq.
func outline(li *ast.ListItem, src []byte) {
	collapsed := false
	if tb := li.FirstChild(); tb != nil && (tb.Kind() == ast.KindParagraph || tb.Kind() == ast.KindTextBlock) {
		lines := tb.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			m := propRE.FindSubmatch(seg.Value(src))
			if m == nil {
				continue
			}
			key := strings.ToLower(string(m[1]))
			var prop ast.Node
			switch key {
			case "id":
				li.SetAttributeString("id", []byte("block-"+strings.ToLower(string(m[2]))))
			case "collapsed":
				collapsed = strings.EqualFold(string(m[2]), "true")
			default:
				if i == 0 {
					continue // "key:: value" as the block's own text
				}
				// Other properties: shown as chips under the block's text.
				prop = &Prop{Key: string(m[1]), Value: string(m[2])}
			}
			removeLine(tb, seg, prop)
		}
		if tb.ChildCount() == 0 {
			li.RemoveChild(li, tb)
		} else if t, ok := tb.LastChild().(*ast.Text); ok {
			t.SetSoftLineBreak(false) // the break before a removed property
		}
	}
	if tb := li.FirstChild(); tb != nil && (tb.Kind() == ast.KindParagraph || tb.Kind() == ast.KindTextBlock) {
		taskMarker(tb, src)
	}
	var list ast.Node
	for c := li.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Kind() == ast.KindList {
			list = c
			break
		}
	}
	li.SetAttributeString("class", []byte("block"))
	if list == nil {
		return
	}
	ob := &OutlineBlock{Collapsed: collapsed}
	sum := &OutlineSummary{}
	ob.AppendChild(ob, sum)
	after := false
	for li.FirstChild() != nil {
		c := li.FirstChild()
		li.RemoveChild(li, c)
		after = after || c == list
		if after {
			ob.AppendChild(ob, c)
		} else {
			sum.AppendChild(sum, c)
		}
	}
	li.AppendChild(li, ob)
}

var taskMarkers = []string{"TODO", "DOING", "DONE", "LATER", "NOW", "WAITING", "WAIT", "CANCELED", "CANCELLED", "IN-PROGRESS"}

// taskMarker turns a Logseq block's leading TODO/DOING/DONE/… into a
// Task node (a checkbox and the marker).
func taskMarker(tb ast.Node, src []byte) {
	t, ok := tb.FirstChild().(*ast.Text)
	if !ok {
		return
	}
	v := string(t.Segment.Value(src))
	for _, m := range taskMarkers {
		if v == m || strings.HasPrefix(v, m+" ") {
			t.Segment = t.Segment.WithStart(t.Segment.Start + len(m)) // the space stays
			tb.InsertBefore(tb, t, &Task{Marker: m})
			return
		}
	}
}

// removeLine drops the inline nodes of one source line from a paragraph,
// putting repl (if any) in their place.
func removeLine(p ast.Node, seg text.Segment, repl ast.Node) {
	var at ast.Node
	for n := p.FirstChild(); n != nil; {
		next := n.NextSibling()
		if s := startOf(n); s >= seg.Start && s < seg.Stop {
			p.RemoveChild(p, n)
			at = next
		}
		n = next
	}
	if repl == nil {
		return
	}
	if at != nil {
		p.InsertBefore(p, at, repl)
	} else {
		p.AppendChild(p, repl)
	}
}

// pageProperties drops a Logseq page's leading key:: value lines (its
// page properties, shown as the frontmatter's chips).
func pageProperties(doc *ast.Document, src []byte) {
	p := doc.FirstChild()
	if p == nil || p.Kind() != ast.KindParagraph || p.Lines().Len() == 0 {
		return
	}
	for i := 0; i < p.Lines().Len(); i++ {
		seg := p.Lines().At(i)
		if !propRE.Match(seg.Value(src)) {
			return
		}
	}
	doc.RemoveChild(doc, p)
}

type htmlRenderer struct {
	html.Config
}

func (r *htmlRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(KindWikiLink, r.wikilink)
	reg.Register(KindHighlight, r.highlight)
	reg.Register(KindTag, r.tag)
	reg.Register(KindMath, r.math)
	reg.Register(KindMathBlock, r.mathBlock)
	reg.Register(KindBlockRef, r.blockRef)
	reg.Register(KindCallout, r.callout)
	reg.Register(KindMermaid, r.mermaid)
	reg.Register(KindEmbed, r.embedBlock)
	reg.Register(KindOutline, r.outline)
	reg.Register(KindSummary, r.summary)
	reg.Register(KindComment, r.nothing)
	reg.Register(KindProp, r.prop)
	reg.Register(KindTask, r.task)
	reg.Register(KindCommentB, r.nothing)
}

func escape(s string) string { return string(util.EscapeHTML([]byte(s))) }

func (r *htmlRenderer) wikilink(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	l := node.(*WikiLink)
	switch {
	case l.Media != "":
		writeMedia(w, l)
	case l.Note != nil:
		writeEmbed(w, l, "span")
	default:
		if l.Href == "" {
			w.WriteString(`<span class="wikilink unresolved">` + escape(l.label()) + `</span>`)
			break
		}
		cls := "wikilink"
		if l.Embed {
			cls += " embed-link"
		}
		w.WriteString(`<a class="` + cls + `" href="` + escape(l.Href) + `">` + escape(l.label()) + `</a>`)
	}
	return ast.WalkSkipChildren, nil
}

// writeMedia writes an image, PDF, audio or video embed.
func writeMedia(w util.BufWriter, l *WikiLink) {
	u := escape(MediaURL(l.Media))
	name := escape(l.Target)
	switch MediaKind(l.Media) {
	case "image":
		w.WriteString(`<img class="embed-image" src="` + u + `" alt="` + escape(altOf(l)) + `"` + sizeAttrs(l.Display) + ` loading="lazy">`)
	case "pdf":
		w.WriteString(`<span class="embed-pdf"><iframe src="` + u + `" title="` + name + `"></iframe><a href="` + u + `">` + name + `</a></span>`)
	case "audio":
		w.WriteString(`<audio class="embed-audio" controls preload="metadata" src="` + u + `" title="` + name + `"></audio>`)
	case "video":
		w.WriteString(`<video class="embed-video" controls preload="metadata" src="` + u + `" title="` + name + `"></video>`)
	default:
		w.WriteString(`<a class="embed-file" href="` + u + `">` + name + `</a>`)
	}
}

func altOf(l *WikiLink) string {
	if l.Display != "" && sizeAttrs(l.Display) == "" {
		return l.Display
	}
	return l.Target
}

// sizeAttrs reads Obsidian's ![[image.png|300]] and |300x200.
func sizeAttrs(d string) string {
	wd, ht, two := strings.Cut(d, "x")
	if !digits(wd) || (two && !digits(ht)) {
		return ""
	}
	s := ` width="` + wd + `"`
	if ht != "" {
		s += ` height="` + ht + `"`
	}
	return s
}

func digits(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// writeEmbed writes an embedded note: a block (div) when it stands alone
// in its paragraph, else a span.
func writeEmbed(w util.BufWriter, l *WikiLink, tag string) {
	e := l.Note
	title := l.label()
	if e.Error != "" {
		w.WriteString(`<` + tag + ` class="embed embed-missing">`)
		if l.Href != "" && e.Path != "" {
			w.WriteString(`<a href="` + escape(l.Href) + `">` + escape(title) + `</a>`)
		} else {
			w.WriteString(escape(title))
		}
		w.WriteString(` <span class="embed-error">(` + escape(e.Error) + `)</span></` + tag + `>`)
		return
	}
	w.WriteString(`<` + tag + ` class="embed" data-path="` + escape(e.Path) + `"><` + tag + ` class="embed-title"><a href="` + escape(l.Href) + `">` + escape(title) + `</a></` + tag + `>`)
	w.WriteString(`<` + tag + ` class="embed-body">` + e.HTML + `</` + tag + `></` + tag + `>`)
}

func (r *htmlRenderer) embedBlock(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		writeEmbed(w, node.(*EmbedBlock).Link, "div")
		w.WriteString("\n")
	}
	return ast.WalkSkipChildren, nil
}

func (r *htmlRenderer) highlight(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		w.WriteString("<mark>")
	} else {
		w.WriteString("</mark>")
	}
	return ast.WalkContinue, nil
}

func (r *htmlRenderer) tag(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		t := node.(*Tag)
		w.WriteString(`<a class="tag" href="` + escape(TagURL(t.Name)) + `">#` + escape(t.Name) + `</a>`)
	}
	return ast.WalkSkipChildren, nil
}

func (r *htmlRenderer) math(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		m := node.(*Math)
		cls := "math math-inline"
		if m.Display {
			cls = "math math-display"
		}
		w.WriteString(`<span class="` + cls + `">` + escape(m.TeX) + `</span>`)
	}
	return ast.WalkSkipChildren, nil
}

func (r *htmlRenderer) mathBlock(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		w.WriteString(`<div class="math math-display">` + escape(node.(*MathBlock).TeX) + "</div>\n")
	}
	return ast.WalkSkipChildren, nil
}

func (r *htmlRenderer) blockRef(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		b := node.(*BlockRef)
		if b.Page == "" {
			w.WriteString(`<span class="block-ref unresolved">((` + escape(b.UUID) + `))</span>`)
		} else {
			t := b.Body
			if i := strings.IndexByte(t, '\n'); i >= 0 {
				t = t[:i]
			}
			w.WriteString(`<a class="block-ref" href="` + escape(PathURL(b.Page)+"#block-"+b.UUID) + `">` + escape(t) + `</a>`)
		}
	}
	return ast.WalkSkipChildren, nil
}

func (r *htmlRenderer) callout(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	c := node.(*Callout)
	if entering {
		if c.Fold != 0 {
			open := ""
			if c.Fold == '+' {
				open = " open"
			}
			w.WriteString(`<details class="callout" data-callout="` + escape(c.Name) + `"` + open + `><summary class="callout-title">` + escape(c.Title) + "</summary>\n<div class=\"callout-content\">\n")
		} else {
			w.WriteString(`<div class="callout" data-callout="` + escape(c.Name) + `"><div class="callout-title">` + escape(c.Title) + "</div>\n<div class=\"callout-content\">\n")
		}
		return ast.WalkContinue, nil
	}
	if c.Fold != 0 {
		w.WriteString("</div></details>\n")
	} else {
		w.WriteString("</div></div>\n")
	}
	return ast.WalkContinue, nil
}

func (r *htmlRenderer) mermaid(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		w.WriteString(`<pre class="mermaid">` + escape(node.(*Mermaid).Code) + "</pre>\n")
	}
	return ast.WalkSkipChildren, nil
}

func (r *htmlRenderer) outline(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		if node.(*OutlineBlock).Collapsed {
			w.WriteString(`<details class="outline">`)
		} else {
			w.WriteString(`<details class="outline" open>`)
		}
	} else {
		w.WriteString("</details>")
	}
	return ast.WalkContinue, nil
}

func (r *htmlRenderer) summary(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		w.WriteString("<summary>")
	} else {
		w.WriteString("</summary>\n")
	}
	return ast.WalkContinue, nil
}

func (r *htmlRenderer) nothing(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	return ast.WalkSkipChildren, nil
}

func (r *htmlRenderer) prop(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		p := node.(*Prop)
		w.WriteString(`<span class="chip prop"><span class="prop-key">` + escape(p.Key) + `</span> ` + escape(p.Value) + `</span>`)
	}
	return ast.WalkSkipChildren, nil
}

func (r *htmlRenderer) task(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		m := node.(*Task).Marker
		checked := ""
		if m == "DONE" {
			checked = " checked"
		}
		w.WriteString(`<input type="checkbox" disabled` + checked + `> <span class="task-marker task-` + strings.ToLower(m) + `">` + m + `</span>`)
	}
	return ast.WalkSkipChildren, nil
}
