package markdown

import (
	"path"
	"slices"
	"strings"
)

// DefaultMaxChunkChars is the chunk size limit used when Options.MaxChunkChars
// is zero or negative.
const DefaultMaxChunkChars = 1500

// Parse parses one note. It never panics, does no I/O and is deterministic:
// the same input and options always give the same Doc.
//
// All line numbers in the result are 1-based and count every line of src,
// including the frontmatter; a UTF-8 byte order mark is ignored and CRLF line
// endings are accepted everywhere.
func Parse(src []byte, opts Options) *Doc {
	p := newParser(src, opts)
	if y, bodyLine, ok := SplitFrontmatter(src); ok {
		p.doc.BodyLine = bodyLine
		p.frontmatter(y)
	}
	if opts.Logseq {
		p.parseLogseq()
	} else {
		p.parseMarkdown()
	}
	p.resolveTitle()
	p.finish()
	return p.doc
}

// Line kinds recorded per line for chunking.
const (
	kindText  uint8 = iota
	kindBlank       // blank outside code
	kindCode        // inside a fenced code block (fence lines included)
)

// parser holds the state of one Parse call.
type parser struct {
	opts  Options
	doc   *Doc
	src   string   // the whole file
	lines []string // lines without their terminator (and without a BOM)
	// starts[i] is the byte offset of lines[i] in src.
	starts []int
	// hasCR is true when at least one line ended in "\r\n": chunk text is then
	// rebuilt with "\n" instead of being sliced from src.
	hasCR    bool
	cum      []int // cumulative line lengths, built lazily when hasCR
	maxChunk int
	sc       scanner

	// seenAlias dedupes Doc.Aliases.
	seenAlias map[string]bool
	// fmTitle is the YAML frontmatter title, pageTitle the Logseq title::
	// page property (empty when absent).
	fmTitle, pageTitle string
}

func newParser(src []byte, opts Options) *parser {
	p := &parser{
		opts:     opts,
		doc:      &Doc{BodyLine: 1},
		src:      string(src),
		maxChunk: opts.MaxChunkChars,
	}
	if p.maxChunk <= 0 {
		p.maxChunk = DefaultMaxChunkChars
	}
	p.sc = scanner{doc: p.doc, logseq: opts.Logseq}
	p.splitLines()
	return p
}

// splitLines fills p.lines and p.starts. A final empty segment after a
// trailing newline is not a line.
func (p *parser) splitLines() {
	s := p.src
	n := strings.Count(s, "\n") + 1
	p.lines = make([]string, 0, n)
	p.starts = make([]int, 0, n)
	i := 0
	if strings.HasPrefix(s, bom) {
		i = len(bom)
	}
	for i < len(s) {
		j := strings.IndexByte(s[i:], '\n')
		var line string
		next := len(s)
		if j < 0 {
			line = s[i:]
		} else {
			line = s[i : i+j]
			next = i + j + 1
		}
		if strings.HasSuffix(line, "\r") && j >= 0 {
			line = line[:len(line)-1]
			p.hasCR = true
		}
		p.lines = append(p.lines, line)
		p.starts = append(p.starts, i)
		i = next
	}
}

// body returns the 0-based index of the first body line.
func (p *parser) body() int {
	return min(max(p.doc.BodyLine-1, 0), len(p.lines))
}

// hspan is a heading found in a Markdown body, with its 0-based line span
// (start == end for ATX headings; setext headings span their text and underline).
type hspan struct {
	level      int
	text       string
	start, end int
}

// parseMarkdown makes one pass over the body of an Obsidian-flavoured note,
// collecting headings, links, tags, tasks and block ids, then builds chunks.
func (p *parser) parseMarkdown() {
	lines := p.lines
	kinds := make([]uint8, len(lines))
	var heads []hspan
	var fence fenceInfo
	paraStart := -1     // first line of the current paragraph, -1 if none
	paraSetext := false // whether the current paragraph may become a setext heading

	for i := p.body(); i < len(lines); i++ {
		line := lines[i]
		ln := i + 1
		if fence.open {
			kinds[i] = kindCode
			if fence.closes(line) {
				fence.open = false
			}
			continue
		}
		inComment := p.sc.inComment
		if !inComment {
			if f, ok := openFence(line); ok {
				fence = f
				kinds[i] = kindCode
				paraStart = -1
				continue
			}
		}
		if isBlank(line) {
			kinds[i] = kindBlank
			paraStart = -1
			continue
		}
		if !inComment {
			if level, text, ok := atxHeading(line); ok {
				heads = append(heads, hspan{level: level, text: text, start: i, end: i})
				p.doc.Headings = append(p.doc.Headings, Heading{Level: level, Text: text, Line: ln})
				p.sc.scanLine(line, ln)
				paraStart = -1
				continue
			}
			if level := setextUnderline(line); level > 0 {
				if paraStart >= 0 && paraSetext {
					text := joinTrimmed(lines[paraStart:i])
					heads = append(heads, hspan{level: level, text: text, start: paraStart, end: i})
					p.doc.Headings = append(p.doc.Headings, Heading{Level: level, Text: text, Line: paraStart + 1})
					paraStart = -1
					continue
				}
				if level == 2 {
					// A thematic break: it ends any paragraph.
					paraStart = -1
					continue
				}
			}
			fields := InlineFields(line)
			for _, f := range fields {
				f.Line = ln
				p.doc.Fields = append(p.doc.Fields, f)
			}
			if status, text, ok := checkboxTask(line); ok {
				t := Task{Line: ln, Status: status, Text: text}
				if _, _, r, ok := CheckboxSpan(line); ok {
					t.Marker = string(r)
				}
				obsidianFields(&t)
				taskFieldDates(&t, fields)
				p.doc.Tasks = append(p.doc.Tasks, t)
			}
		}
		p.sc.scanLine(line, ln)
		if paraStart < 0 {
			paraStart = i
			paraSetext = !inComment && setextCandidate(line)
		}
	}
	p.markdownChunks(heads, kinds)
	p.linkContexts()
}

// resolveTitle picks Doc.Title by the precedence frontmatter > property > h1 > filename.
func (p *parser) resolveTitle() {
	d := p.doc
	if p.fmTitle != "" {
		d.Title, d.TitleSource = p.fmTitle, "frontmatter"
		return
	}
	if p.opts.Logseq {
		if p.pageTitle != "" {
			d.Title, d.TitleSource = p.pageTitle, "property"
			return
		}
	} else {
		for _, h := range d.Headings {
			if h.Level == 1 && h.Text != "" {
				d.Title, d.TitleSource = h.Text, "h1"
				return
			}
		}
	}
	if p.opts.Path == "" {
		return
	}
	var name string
	switch {
	case p.opts.Logseq:
		name = LogseqPageName(p.opts.Path)
		if p.opts.Journal {
			if t, ok := journalTitle(name, p.opts.JournalFormats); ok {
				name = t
			}
		}
	default:
		name = fileStem(p.opts.Path)
	}
	if name != "" {
		d.Title, d.TitleSource = name, "filename"
	}
}

// finish restores file order where emission order can differ from it.
func (p *parser) finish() {
	d := p.doc
	if !slices.IsSortedFunc(d.Links, func(a, b Link) int { return a.Line - b.Line }) {
		slices.SortStableFunc(d.Links, func(a, b Link) int { return a.Line - b.Line })
	}
	if !slices.IsSortedFunc(d.Tags, func(a, b Tag) int { return a.Line - b.Line }) {
		slices.SortStableFunc(d.Tags, func(a, b Tag) int { return a.Line - b.Line })
	}
}

// fileStem is the base name of a vault-relative path without a Markdown extension.
func fileStem(p string) string {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	if base == "." || base == "/" {
		return ""
	}
	return trimMarkdownExt(base)
}

// trimMarkdownExt removes a trailing .md or .markdown (any case).
func trimMarkdownExt(name string) string {
	for _, ext := range []string{".md", ".markdown"} {
		if len(name) > len(ext) && strings.EqualFold(name[len(name)-len(ext):], ext) {
			return name[:len(name)-len(ext)]
		}
	}
	return name
}

// addAlias appends a trimmed, non-empty, not yet seen alias.
func (p *parser) addAlias(a string) {
	a = strings.TrimSpace(a)
	if len(a) > 4 && strings.HasPrefix(a, "[[") && strings.HasSuffix(a, "]]") {
		a = strings.TrimSpace(a[2 : len(a)-2])
	}
	if a == "" || p.seenAlias[a] {
		return
	}
	if p.seenAlias == nil {
		p.seenAlias = make(map[string]bool)
	}
	p.seenAlias[a] = true
	p.doc.Aliases = append(p.doc.Aliases, a)
}

// addTag appends a tag after stripping '#' and surrounding space; empty names are dropped.
func (p *parser) addTag(name string, line int, source string) {
	name = NormalizeTag(name)
	if len(name) > 4 && strings.HasPrefix(name, "[[") && strings.HasSuffix(name, "]]") {
		name = strings.TrimSpace(name[2 : len(name)-2])
	}
	if name == "" {
		return
	}
	p.doc.Tags = append(p.doc.Tags, Tag{Name: name, Line: line, Source: source})
}

// lookupFold finds key in m case-insensitively: an exact match first, then
// the first matching key in file order.
func lookupFold(m map[string]any, keys []string, key string) (any, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for _, k := range keys {
		if strings.EqualFold(k, key) {
			return m[k], true
		}
	}
	return nil, false
}

// isBlank reports whether s has only spaces and tabs.
func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}

// isSpace reports whether c is an ASCII space or tab.
func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// trimSpace trims ASCII spaces and tabs (cheaper than strings.TrimSpace and
// leaves other whitespace alone).
func trimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// joinTrimmed joins trimmed lines with single spaces.
func joinTrimmed(lines []string) string {
	if len(lines) == 1 {
		return trimSpace(lines[0])
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(trimSpace(l))
	}
	return b.String()
}
