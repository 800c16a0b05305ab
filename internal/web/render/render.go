// Package render turns a note's Markdown into the HTML of the web UI's
// note view, as Obsidian's reading view shows it: wikilinks, note,
// heading and block embeds (transclusion, with a depth cap and a cycle
// guard), image, PDF, audio and video embeds, callouts, ==highlights==,
// footnotes, #tags, inline and block math, mermaid diagrams, and Logseq
// outlines as collapsible blocks with ((uuid)) block references resolved.
//
// The package knows no vault: a Resolver (the web UI's, which goes
// through the operation registry, its read fences and its confinement)
// finds notes, attachments and blocks. Raw HTML in a note is dropped, as
// goldmark does by default: a note cannot script the page. Math and
// mermaid are emitted as escaped source in marked elements, which the
// page's bundled KaTeX and mermaid scripts draw in the browser.
package render

import (
	"bytes"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Resolver finds what a note links to and embeds, as the caller may see
// it. Every method answers for the note at from (a vault-relative path).
type Resolver interface {
	// Note returns the text of the note target names (a wikilink target,
	// resolved as the index resolves names), or of its heading's section
	// when heading is set, with the note's path and whether it is a Logseq
	// outline. A note the caller may not read is an error, as a missing
	// one.
	Note(from, target, heading string) (p, content string, logseq bool, err error)
	// Media returns the vault path of the attachment target names
	// (exact path, relative to from's folder, or by file name), "" when
	// there is none the caller may see.
	Media(from, target string) string
	// Block returns the page and the text of the Logseq block with id
	// uuid ("" when none is visible).
	Block(uuid string) (page, text string)
}

// Options of one rendering.
type Options struct {
	// Path is the note's vault-relative path (the base of relative links).
	Path string
	// Logseq renders the note as a Logseq outline.
	Logseq bool
	// Resolver finds embeds, attachments and blocks (nil: embeds become
	// links, block references stay as written).
	Resolver Resolver
	// MaxDepth caps nested embeds (default 3); MaxEmbeds caps the embeds
	// of the whole page (default 50).
	MaxDepth, MaxEmbeds int
	// MaxBytes caps the HTML (default 8 MiB): past it the note is shown as
	// escaped text.
	MaxBytes int
}

// Result is a rendered note.
type Result struct {
	HTML string
	// Math and Mermaid tell whether the page needs the KaTeX or the
	// mermaid script.
	Math, Mermaid bool
}

// NoteURL is the note view's address of a note by name.
func NoteURL(name string) string { return "/ui/note?note=" + url.QueryEscape(name) }

// PathURL is the note view's address of a note by path.
func PathURL(p string) string { return "/ui/note?path=" + url.QueryEscape(p) }

// MediaURL is the address an attachment is served from.
func MediaURL(p string) string { return "/ui/media?path=" + url.QueryEscape(p) }

// TagURL is the tag page's address of a tag.
func TagURL(tag string) string { return "/ui/tags?tag=" + url.QueryEscape(tag) }

const (
	defaultDepth  = 3
	defaultEmbeds = 50
	defaultBytes  = 8 << 20
	// maxSource is the most of a note that is rendered.
	maxSource = 4 << 20
)

type shared struct {
	embeds        int
	math, mermaid bool
}

type state struct {
	opt   Options
	depth int
	chain []string // embedKeys of the embeds on the way here, the page first
	sh    *shared
}

var stateKey = parser.NewContextKey()

var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM, extension.Footnote, ext{}),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
)

// Render renders a note's text (its frontmatter already removed or not:
// a leading frontmatter block is dropped).
func Render(src []byte, opt Options) Result {
	if opt.MaxDepth <= 0 {
		opt.MaxDepth = defaultDepth
	}
	if opt.MaxEmbeds <= 0 {
		opt.MaxEmbeds = defaultEmbeds
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = defaultBytes
	}
	sh := &shared{embeds: opt.MaxEmbeds}
	h := render(src, &state{opt: opt, chain: []string{embedKey(opt.Path, "", "")}, sh: sh})
	return Result{HTML: h, Math: sh.math, Mermaid: sh.mermaid}
}

func render(src []byte, st *state) string {
	src = stripFrontmatter(src)
	if len(src) > maxSource {
		src = src[:maxSource]
	}
	pc := parser.NewContext(parser.WithIDs(newIDs()))
	pc.Set(stateKey, st)
	var b bytes.Buffer
	if err := md.Convert(src, &b, parser.WithContext(pc)); err != nil || b.Len() > st.opt.MaxBytes {
		return "<pre class=\"unrendered\">" + escape(string(src[:min(len(src), st.opt.MaxBytes/8)])) + "</pre>"
	}
	return b.String()
}

// stripFrontmatter drops a leading --- YAML block (shown apart as chips).
func stripFrontmatter(src []byte) []byte {
	if !bytes.HasPrefix(src, []byte("---\n")) && !bytes.HasPrefix(src, []byte("---\r\n")) {
		return src
	}
	rest := src[3:]
	for i := 0; i < len(rest); {
		j := bytes.IndexByte(rest[i:], '\n')
		if j < 0 {
			return src
		}
		line := bytes.TrimRight(rest[i:i+j], "\r")
		i += j + 1
		if i > 1 && (string(line) == "---" || string(line) == "...") {
			return rest[i:]
		}
	}
	return src
}

type ext struct{}

func (ext) Extend(m goldmark.Markdown) {
	m.Parser().AddOptions(
		parser.WithInlineParsers(
			util.Prioritized(wikilinkParser{}, 150),
			util.Prioritized(blockRefParser{}, 150),
			util.Prioritized(mathParser{}, 150),
			util.Prioritized(tagParser{}, 150),
			util.Prioritized(macroParser{}, 150),
			util.Prioritized(commentParser{}, 150),
			util.Prioritized(highlightParser{}, 500),
		),
		parser.WithBlockParsers(util.Prioritized(mathBlockParser{}, 150), util.Prioritized(commentBlockParser{}, 150)),
		parser.WithASTTransformers(util.Prioritized(transformer{}, 100)),
	)
	m.Renderer().AddOptions(renderer.WithNodeRenderers(util.Prioritized(&htmlRenderer{Config: html.NewConfig()}, 100)))
}

// mediaKinds maps the attachment extensions the UI shows to how.
var mediaKinds = map[string]string{
	".png": "image", ".jpg": "image", ".jpeg": "image", ".gif": "image", ".webp": "image", ".svg": "image", ".bmp": "image", ".avif": "image", ".ico": "image",
	".pdf": "pdf",
	".mp3": "audio", ".wav": "audio", ".m4a": "audio", ".ogg": "audio", ".oga": "audio", ".flac": "audio", ".opus": "audio", ".aac": "audio", ".3gp": "audio",
	".mp4": "video", ".webm": "video", ".ogv": "video", ".mov": "video", ".mkv": "video",
}

// MediaKind says how an attachment is shown ("image", "pdf", "audio",
// "video"), "" for a file that is not media.
func MediaKind(name string) string { return mediaKinds[strings.ToLower(path.Ext(name))] }

type transformer struct{}

func (transformer) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	st, _ := pc.Get(stateKey).(*state)
	if st == nil {
		return
	}
	src := reader.Source()
	headings := map[string]string{}
	var links []*WikiLink
	var quotes []*ast.Blockquote
	var codes []*ast.FencedCodeBlock
	var items []*ast.ListItem
	var images []*ast.Image
	var refs []*BlockRef
	var texts []ast.Node
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			if id, ok := n.AttributeString("id"); ok {
				if b, ok := id.([]byte); ok {
					k := strings.ToLower(strings.TrimSpace(string(plainText(n, src))))
					if _, dup := headings[k]; !dup {
						headings[k] = string(b)
					}
				}
			}
		case *WikiLink:
			links = append(links, n)
		case *ast.Blockquote:
			quotes = append(quotes, n)
		case *ast.FencedCodeBlock:
			codes = append(codes, n)
		case *ast.ListItem:
			items = append(items, n)
		case *ast.Image:
			images = append(images, n)
		case *BlockRef:
			refs = append(refs, n)
		case *Math, *MathBlock:
			st.sh.math = true
		case *ast.Paragraph, *ast.TextBlock:
			texts = append(texts, n)
		}
		return ast.WalkContinue, nil
	})
	for _, p := range texts {
		blockAnchor(p, src)
	}
	for _, q := range quotes {
		callout(q, src)
	}
	for _, c := range codes {
		if strings.EqualFold(string(c.Language(src)), "mermaid") {
			var code strings.Builder
			for i := 0; i < c.Lines().Len(); i++ {
				s := c.Lines().At(i)
				code.Write(s.Value(src))
			}
			m := &Mermaid{Code: code.String()}
			c.Parent().ReplaceChild(c.Parent(), c, m)
			st.sh.mermaid = true
		}
	}
	for _, l := range links {
		st.resolve(l, headings)
	}
	// A note embed alone in its paragraph is a block.
	for _, l := range links {
		par := l.Parent()
		if l.Note == nil || par == nil || (par.Kind() != ast.KindParagraph && par.Kind() != ast.KindTextBlock) {
			continue
		}
		only := true
		for c := par.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); c != l && (!ok || len(bytes.TrimSpace(t.Segment.Value(src))) > 0) {
				only = false
			}
		}
		if only {
			par.Parent().ReplaceChild(par.Parent(), par, &EmbedBlock{Link: l})
		}
	}
	for _, im := range images {
		st.image(im)
	}
	for _, r := range refs {
		if st.opt.Resolver != nil {
			r.Page, r.Body = st.opt.Resolver.Block(r.UUID)
		}
	}
	if st.opt.Logseq {
		pageProperties(doc, src)
		for _, li := range items {
			outline(li, src)
		}
	}
}

// plainText is the text of n's inline content.
func plainText(n ast.Node, src []byte) []byte {
	var b bytes.Buffer
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
		case *ast.String:
			b.Write(t.Value)
		case *WikiLink:
			b.WriteString(t.label())
		}
		return ast.WalkContinue, nil
	})
	return b.Bytes()
}

func (l *WikiLink) label() string {
	if l.Display != "" && !(l.Embed && sizeAttrs(l.Display) != "") {
		return l.Display
	}
	s := l.Target
	if l.Heading != "" {
		if s != "" {
			s += " > "
		}
		s += l.Heading
	}
	if l.Block != "" {
		if s != "" {
			s += " > "
		}
		s += "^" + l.Block
	}
	return s
}

// resolve fills a wikilink's address, attachment or embedded note.
func (st *state) resolve(l *WikiLink, headings map[string]string) {
	if l.UUID != "" {
		st.embedBlock(l)
		return
	}
	if l.Target == "" {
		switch {
		case l.Heading != "":
			if id, ok := headings[strings.ToLower(l.Heading)]; ok {
				l.Href = "#" + id
			} else {
				l.Href = "#" + slug(l.Heading)
			}
		case l.Block != "":
			l.Href = "#" + url.PathEscape("^"+l.Block)
		}
		return
	}
	l.Href = NoteURL(l.Target)
	if l.Heading != "" {
		l.Href += "#" + slug(l.Heading)
	} else if l.Block != "" {
		l.Href += "#" + url.PathEscape("^"+l.Block)
	}
	ext := strings.ToLower(path.Ext(l.Target))
	isNote := ext == "" || ext == ".md" || MediaKind(l.Target) == ""
	if !l.Embed {
		if !isNote && st.opt.Resolver != nil {
			if p := st.opt.Resolver.Media(st.opt.Path, l.Target); p != "" {
				l.Href = MediaURL(p)
			}
		}
		return
	}
	if st.opt.Resolver == nil {
		return
	}
	if !isNote {
		if l.Media = st.opt.Resolver.Media(st.opt.Path, l.Target); l.Media == "" {
			l.Href = "" // shown as unresolved
		}
		return
	}
	e := &Embedded{}
	l.Note = e
	if !st.enter(e) {
		return
	}
	p, content, logseq, err := st.opt.Resolver.Note(st.opt.Path, l.Target, l.Heading)
	if err != nil {
		e.Error = "not found"
		return
	}
	e.Path = p
	l.Href = PathURL(p)
	if l.Heading != "" {
		l.Href += "#" + slug(l.Heading)
	}
	key := embedKey(p, l.Heading, l.Block)
	for _, c := range st.chain {
		if c == key {
			e.Error = "not embedded: it embeds itself"
			return
		}
	}
	if l.Block != "" {
		var ok bool
		content, ok = blockText(content, l.Block)
		if !ok {
			e.Error = "block ^" + l.Block + " not found"
			return
		}
	}
	sub := &state{opt: st.opt, depth: st.depth + 1, chain: append(append([]string(nil), st.chain...), key), sh: st.sh}
	sub.opt.Path, sub.opt.Logseq = p, logseq
	e.HTML = render([]byte(content), sub)
}

// embedBlock renders a Logseq block embed: the block's text, found by
// the resolver, inside the page.
func (st *state) embedBlock(l *WikiLink) {
	l.Display = "((" + l.UUID + "))"
	if st.opt.Resolver == nil {
		return
	}
	e := &Embedded{}
	l.Note = e
	if !st.enter(e) {
		return
	}
	page, body := st.opt.Resolver.Block(l.UUID)
	if page == "" {
		e.Error = "not found"
		return
	}
	e.Path = page
	l.Href = PathURL(page) + "#block-" + l.UUID
	l.Display = firstLine(body)
	key := "((" + l.UUID + "))"
	for _, c := range st.chain {
		if c == key {
			e.Error = "not embedded: it embeds itself"
			return
		}
	}
	sub := &state{opt: st.opt, depth: st.depth + 1, chain: append(append([]string(nil), st.chain...), key), sh: st.sh}
	sub.opt.Path, sub.opt.Logseq = page, true
	e.HTML = render([]byte(body), sub)
}

// enter checks the depth cap and the page's embed budget.
func (st *state) enter(e *Embedded) bool {
	if st.depth+1 > st.opt.MaxDepth {
		e.Error = "not embedded: more than " + itoa(st.opt.MaxDepth) + " embeds deep"
		return false
	}
	if st.sh.embeds <= 0 {
		e.Error = "not embedded: the page has " + itoa(st.opt.MaxEmbeds) + " embeds already"
		return false
	}
	st.sh.embeds--
	return true
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// embedKey names what an embed shows: a note, its heading's section or a
// block. The cycle guard cuts an embed whose key is already on the way
// from the page (a note may embed a section of itself, not itself).
func embedKey(p, heading, block string) string {
	return p + "#" + strings.ToLower(heading) + "^" + block
}

// blockText is the paragraph or list item that ends with ^id.
func blockText(content, id string) (string, bool) {
	lines := strings.Split(content, "\n")
	for i, ln := range lines {
		t := strings.TrimRight(ln, " \t\r")
		if !strings.HasSuffix(t, "^"+id) {
			continue
		}
		before := strings.TrimSuffix(t, "^"+id)
		if before != "" && !strings.HasSuffix(before, " ") && !strings.HasSuffix(before, "\t") && !strings.HasSuffix(before, "]]") {
			continue
		}
		before = strings.TrimRight(before, " \t")
		if strings.TrimSpace(before) == "" {
			// "^id" on its own line names the block above it.
			end := i
			for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
				end--
			}
			start := end
			for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
				start--
			}
			return strings.Join(lines[start:end], "\n"), start < end
		}
		lt := strings.TrimLeft(before, " \t")
		if strings.HasPrefix(lt, "- ") || strings.HasPrefix(lt, "* ") || strings.HasPrefix(lt, "+ ") {
			return lt, true
		}
		start := i
		for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
			start--
		}
		return strings.Join(append(append([]string(nil), lines[start:i]...), before), "\n"), true
	}
	return "", false
}

// image points a relative image at the vault's attachment route.
func (st *state) image(im *ast.Image) {
	dest := string(im.Destination)
	if low := strings.ToLower(dest); strings.HasPrefix(low, "http://") || strings.HasPrefix(low, "https://") {
		// The page loads nothing from the network (CSP img-src 'self'):
		// a remote image is a link to it.
		l := ast.NewLink()
		l.Destination = im.Destination
		l.Title = im.Title
		l.SetAttributeString("class", []byte("external-image"))
		for im.FirstChild() != nil {
			c := im.FirstChild()
			im.RemoveChild(im, c)
			l.AppendChild(l, c)
		}
		if l.ChildCount() == 0 {
			l.AppendChild(l, ast.NewString(im.Destination))
		}
		im.Parent().ReplaceChild(im.Parent(), im, l)
		return
	}
	if st.opt.Resolver == nil || dest == "" || strings.HasPrefix(dest, "/") || strings.HasPrefix(dest, "#") || strings.Contains(strings.SplitN(dest, "/", 2)[0], ":") {
		return
	}
	if u, err := url.PathUnescape(dest); err == nil {
		dest = u
	}
	if p := st.opt.Resolver.Media(st.opt.Path, dest); p != "" {
		im.Destination = []byte(MediaURL(p))
	} else {
		im.Destination = nil
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

var anchorRE = regexp.MustCompile(`(?:^|[ \t])\^([A-Za-z0-9-]+)[ \t]*$`)

// blockAnchor hides an Obsidian block id (a paragraph or list item ending
// in " ^id", or a line "^id" alone after a block) and makes it the
// element's id, so [[#^id]] and [[Note#^id]] land on it.
func blockAnchor(p ast.Node, src []byte) {
	t, ok := p.LastChild().(*ast.Text)
	if !ok {
		return
	}
	v := t.Segment.Value(src)
	if bytes.IndexByte(v, '^') < 0 {
		return // most paragraphs: no regexp run
	}
	m := anchorRE.FindSubmatchIndex(v)
	if m == nil {
		return
	}
	id := "^" + string(v[m[2]:m[3]])
	target := p
	if p.Kind() == ast.KindTextBlock && p.Parent() != nil {
		target = p.Parent()
	}
	if m[0] == 0 && p.FirstChild() == t {
		// "^id" alone: it names the block before it.
		prev := p.PreviousSibling()
		if prev == nil {
			return
		}
		p.Parent().RemoveChild(p.Parent(), p)
		prev.SetAttributeString("id", []byte(id))
		return
	}
	t.Segment = t.Segment.WithStop(t.Segment.Start + m[0])
	target.SetAttributeString("id", []byte(id))
}
