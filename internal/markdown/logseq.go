package markdown

import (
	"path"
	"strconv"
	"strings"
	"unicode"
)

// LogseqPageName returns the Logseq page name for a file path: the base name
// without ".md", "___" namespace separators turned into "/", and legacy
// URL-escaped names decoded ("a%2Fb" → "a/b", "What%3F" → "What?"). Journal
// file stems such as "2020_09_14" are returned unchanged (see JournalTitle).
func LogseqPageName(relPath string) string {
	if relPath == "" {
		return ""
	}
	base := path.Base(strings.ReplaceAll(relPath, "\\", "/"))
	if base == "." || base == "/" {
		return ""
	}
	name := strings.ReplaceAll(trimMarkdownExt(base), "___", "/")
	return urlDecode(name)
}

var monthAbbr = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// JournalTitle turns a journal file stem "yyyy_MM_dd" (or "yyyy-MM-dd") into
// Logseq's default journal title format "MMM do, yyyy": "2020_09_14" →
// "Sep 14th, 2020". It reports false when stem is not a valid date.
func JournalTitle(stem string) (string, bool) {
	if len(stem) != 10 || stem[4] != stem[7] || (stem[4] != '_' && stem[4] != '-') {
		return "", false
	}
	y, err1 := strconv.Atoi(stem[0:4])
	m, err2 := strconv.Atoi(stem[5:7])
	d, err3 := strconv.Atoi(stem[8:10])
	if err1 != nil || err2 != nil || err3 != nil || !allASCIIDigits(stem[0:4]+stem[5:7]+stem[8:10]) {
		return "", false
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(m, y) {
		return "", false
	}
	return monthAbbr[m-1] + " " + strconv.Itoa(d) + OrdinalSuffix(d) + ", " + stem[0:4], true
}

func allASCIIDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// daysIn returns the number of days in month m of year y.
func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// OrdinalSuffix is "st", "nd", "rd" or "th" for a day of the month (as
// Logseq's journal titles write it: "Nov 25th, 2026").
func OrdinalSuffix(d int) string {
	if d%100 >= 11 && d%100 <= 13 {
		return "th"
	}
	switch d % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}

// lsProp is one "key:: value" property line.
type lsProp struct {
	key, val string
	line     int
}

// lsBlock is the block being built.
type lsBlock struct {
	active   bool
	idx      int // index into Doc.Blocks
	width    int // indentation width of the bullet
	col      int // indentation width of continuation lines
	nContent int // content lines so far
	stage    int // 0: nothing yet; 1: properties may follow; 2: body text
	blanks   int // blank lines not yet added to content
	last     int // 0-based index of the last non-blank line
	fence    fenceInfo
	srcEnd   string // "#+END_X" while inside #+BEGIN_X (SRC, QUERY, ...)
	lines    []string
	props    []lsProp
}

func (b *lsBlock) inCode() bool { return b.fence.open || b.srcEnd != "" }

// lsInfo is per-block data needed for chunking.
type lsInfo struct {
	heading   string
	isHeading bool
}

// lsStack is an open ancestor block.
type lsStack struct{ idx, width int }

// logseq holds the state of parsing a Logseq outline.
type logseq struct {
	p         *parser
	unit      int // width of one tab, in spaces
	cur       lsBlock
	stack     []lsStack
	info      []lsInfo
	pageProps []lsProp
}

// parseLogseq parses the body as a Logseq outline: page properties, then
// blocks ("- " bullets, nesting by indentation), then chunks per top-level block.
func (p *parser) parseLogseq() {
	lines := p.lines
	start := p.body()
	ls := &logseq{p: p, unit: detectUnit(lines[start:])}

	i := start
	for ; i < len(lines); i++ {
		if isBlank(lines[i]) {
			continue
		}
		k, v, ok := parseProperty(lines[i])
		if !ok {
			break
		}
		ls.pageProps = append(ls.pageProps, lsProp{k, v, i + 1})
	}
	for ; i < len(lines); i++ {
		l := lines[i]
		ws, width := indentOf(l, ls.unit)
		rest := l[ws:]
		bullet := rest == "-" || strings.HasPrefix(rest, "- ") || strings.HasPrefix(rest, "-\t")
		cur := &ls.cur
		if cur.active && cur.inCode() && !(bullet && width <= cur.width) {
			ls.line(stripIndent(l, cur.col, ls.unit), i)
			continue
		}
		switch {
		case bullet:
			ls.start(width, strings.TrimLeft(rest[1:], " \t"), i)
		case isBlank(l):
			if cur.active {
				cur.blanks++
			}
		case !cur.active || (ws == 0 && isATX(rest)):
			// Text before the first bullet, or a heading at column 0, is a
			// top-level block of its own (as Logseq reads it).
			ls.start(0, rest, i)
		default:
			ls.line(stripIndent(l, cur.col, ls.unit), i)
		}
	}
	ls.end()
	for _, pr := range ls.pageProps {
		ls.pageProperty(pr)
	}
	p.logseqChunks(ls.info)
	p.linkContexts()
}

// isATX reports whether s starts like an ATX heading.
func isATX(s string) bool {
	_, _, ok := atxHeading(s)
	return ok
}

// detectUnit returns the smallest indentation, in spaces, of a bullet line
// indented with spaces only (the file's space unit), default 2.
func detectUnit(lines []string) int {
	unit := 0
	for _, l := range lines {
		n := 0
		for n < len(l) && l[n] == ' ' {
			n++
		}
		if n == 0 || n >= len(l) || l[n] != '-' {
			continue
		}
		if unit == 0 || n < unit {
			unit = n
		}
	}
	if unit == 0 {
		return 2
	}
	return min(unit, 8)
}

// indentOf returns the byte length and the width of the leading whitespace
// of l (a tab counts as unit spaces).
func indentOf(l string, unit int) (n, width int) {
	for n < len(l) {
		switch l[n] {
		case ' ':
			width++
		case '\t':
			width += unit
		default:
			return n, width
		}
		n++
	}
	return n, width
}

// stripIndent removes leading whitespace from l up to width col.
func stripIndent(l string, col, unit int) string {
	w, k := 0, 0
	for k < len(l) && w < col {
		switch l[k] {
		case ' ':
			w++
		case '\t':
			w += unit
		default:
			return l[k:]
		}
		k++
	}
	return l[k:]
}

// parseProperty parses a "key:: value" line (leading whitespace allowed).
// Keys are letters, digits and "-_./?!"; the "::" must be followed by a
// space, a tab or the end of the line.
func parseProperty(l string) (key, val string, ok bool) {
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
	if rest != "" && !isSpace(rest[0]) {
		return "", "", false
	}
	return s[:i], trimSpace(rest), true
}

// start begins a new block whose bullet has the given indentation width and
// whose first line is first (line index i).
func (ls *logseq) start(width int, first string, i int) {
	ls.end()
	for len(ls.stack) > 0 && ls.stack[len(ls.stack)-1].width >= width {
		ls.stack = ls.stack[:len(ls.stack)-1]
	}
	parent := -1
	if len(ls.stack) > 0 {
		parent = ls.stack[len(ls.stack)-1].idx
	}
	d := ls.p.doc
	idx := len(d.Blocks)
	d.Blocks = append(d.Blocks, Block{Parent: parent, Depth: len(ls.stack), Line: i + 1, EndLine: i + 1})
	ls.info = append(ls.info, lsInfo{})
	ls.stack = append(ls.stack, lsStack{idx: idx, width: width})
	ls.cur = lsBlock{
		active: true,
		idx:    idx,
		width:  width,
		col:    width + 2,
		last:   i,
		lines:  ls.cur.lines[:0],
		props:  ls.cur.props[:0],
	}
	ls.line(first, i)
}

// line adds one line (indentation already removed) to the current block.
func (ls *logseq) line(c string, i int) {
	b := &ls.cur
	ln := i + 1
	if b.inCode() {
		if isBlank(c) {
			b.blanks++
			return
		}
		b.add(c, i)
		if b.fence.open && b.fence.closes(c) {
			b.fence.open = false
		} else if b.srcEnd != "" && hasPrefixFold(trimSpace(c), b.srcEnd) {
			b.srcEnd = ""
		}
		return
	}
	if b.stage < 2 {
		if k, v, ok := parseProperty(c); ok {
			b.props = append(b.props, lsProp{k, v, ln})
			b.stage = 1
			b.last = i
			return
		}
	}
	if b.stage == 1 && b.nContent > 0 && b.blanks == 0 {
		if _, _, ok := logseqDateLine(c); ok {
			// SCHEDULED / DEADLINE under the first line: properties may
			// still follow (Logseq writes id:: after them).
			b.add(c, i)
			return
		}
	}
	if b.nContent == 0 && b.blanks == 0 {
		ls.firstLine(c, ln)
		b.stage = 1
	} else {
		b.stage = 2
	}
	b.add(c, i)
	if f, ok := openFence(c); ok {
		b.fence = f
		return
	}
	if end, ok := beginSrc(c); ok {
		b.srcEnd = end
		return
	}
	ls.p.sc.scanLine(c, ln)
}

// add appends a content line, flushing pending blank lines between content.
func (b *lsBlock) add(c string, i int) {
	if b.nContent > 0 {
		for ; b.blanks > 0; b.blanks-- {
			b.lines = append(b.lines, "")
		}
	}
	b.blanks = 0
	b.lines = append(b.lines, c)
	b.nContent++
	b.last = i
}

// firstLine detects a heading ("## x") or a task marker (TODO, DONE, ...)
// on the first content line of a block.
func (ls *logseq) firstLine(c string, ln int) {
	d := ls.p.doc
	t := trimSpace(c)
	if level, text, ok := atxHeading(t); ok {
		d.Headings = append(d.Headings, Heading{Level: level, Text: text, Line: ln})
		ls.info[ls.cur.idx] = lsInfo{heading: text, isHeading: true}
		t = text
	}
	word, rest, _ := strings.Cut(t, " ")
	if status := markerStatus(word); status != "" {
		text := trimSpace(rest)
		d.Tasks = append(d.Tasks, Task{Line: ln, Status: status, Text: text, Marker: word, Priority: logseqPriority(text)})
	}
}

// markerStatus maps a Logseq task marker to a status ("" if not a marker).
func markerStatus(w string) string {
	switch w {
	case "TODO", "LATER":
		return "todo"
	case "DOING", "NOW", "IN-PROGRESS", "STARTED":
		return "in_progress"
	case "DONE":
		return "done"
	case "CANCELED", "CANCELLED":
		return "cancelled"
	case "WAITING", "WAIT":
		return "waiting"
	}
	return ""
}

// beginSrc recognises "#+BEGIN_SRC", "#+BEGIN_QUERY", "#+BEGIN_EXAMPLE" and
// "#+BEGIN_EXPORT" (whose content is code) and returns the matching end marker.
func beginSrc(c string) (string, bool) {
	t := trimSpace(c)
	if !hasPrefixFold(t, "#+BEGIN_") {
		return "", false
	}
	name := t[len("#+BEGIN_"):]
	if k := strings.IndexAny(name, " \t"); k >= 0 {
		name = name[:k]
	}
	switch strings.ToUpper(name) {
	case "SRC", "QUERY", "EXAMPLE", "EXPORT":
		return "#+END_" + name, true
	}
	return "", false
}

// hasPrefixFold is strings.HasPrefix ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// end finishes the current block: content, end line, properties.
func (ls *logseq) end() {
	b := &ls.cur
	if !b.active {
		return
	}
	b.active = false
	d := ls.p.doc
	blk := &d.Blocks[b.idx]
	blk.Content = strings.Join(b.lines, "\n")
	blk.EndLine = b.last + 1
	defer ls.taskFields(blk, b)
	if len(b.props) == 0 {
		return
	}
	blk.Properties = make(map[string]string, len(b.props))
	for _, pr := range b.props {
		blk.Properties[pr.key] = pr.val
		if strings.EqualFold(pr.key, "id") && blk.UUID == "" {
			blk.UUID = pr.val
		}
	}
	// A first block made only of properties holds the page properties.
	if b.idx == 0 && len(ls.pageProps) == 0 && blk.Depth == 0 && b.nContent == 0 {
		ls.pageProps = append(ls.pageProps, b.props...)
		return
	}
	for _, pr := range b.props {
		switch strings.ToLower(pr.key) {
		case "tags":
			for _, t := range splitPropList(pr.val) {
				ls.p.addTag(t, pr.line, "property")
			}
		case "alias", "id", "title":
		default:
			ls.p.typedLinksProp(pr)
		}
	}
}

// taskFields gives the task that starts block blk (if any) its
// SCHEDULED / DEADLINE dates and its block id.
func (ls *logseq) taskFields(blk *Block, b *lsBlock) {
	d := ls.p.doc
	if len(d.Tasks) == 0 {
		return
	}
	t := &d.Tasks[len(d.Tasks)-1]
	if t.Line < blk.Line || t.Line > blk.EndLine || t.Block != "" || t.Due != "" || t.Scheduled != "" {
		return
	}
	t.Block = blk.UUID
	for _, l := range b.lines[min(1, len(b.lines)):] {
		if f, date, ok := logseqDateLine(l); ok {
			setField(t, f, date)
		}
	}
}

// pageProperty applies one page-level property: frontmatter value, title,
// aliases, tags or typed links.
func (ls *logseq) pageProperty(pr lsProp) {
	p := ls.p
	d := p.doc
	if d.Frontmatter == nil {
		d.Frontmatter = make(map[string]any)
	}
	if _, ok := d.Frontmatter[pr.key]; !ok {
		d.Frontmatter[pr.key] = pr.val
		d.FrontmatterKeys = append(d.FrontmatterKeys, pr.key)
	}
	switch strings.ToLower(pr.key) {
	case "title":
		if p.pageTitle == "" {
			p.pageTitle = pr.val
		}
	case "alias":
		for _, a := range splitPropList(pr.val) {
			p.addAlias(a)
		}
	case "tags":
		for _, t := range splitPropList(pr.val) {
			p.addTag(t, pr.line, "property")
		}
	case "id":
	default:
		p.typedLinksProp(pr)
	}
}

// typedLinksProp records a typed link for each [[X]] in a property value.
func (p *parser) typedLinksProp(pr lsProp) {
	if !strings.Contains(pr.val, "[[") {
		return
	}
	for _, l := range wikilinksIn(pr.val) {
		l.Kind, l.Key, l.Line = LinkTyped, pr.key, pr.line
		p.doc.Links = append(p.doc.Links, l)
	}
}

// splitPropList splits a comma-separated property value, keeping commas
// inside [[...]], and strips '#' and [[ ]] from each item.
func splitPropList(v string) []string {
	var out []string
	for _, s := range SplitLinkList(v) {
		s = NormalizeTag(s)
		if len(s) >= 4 && strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]]") {
			s = strings.TrimSpace(s[2 : len(s)-2])
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// SplitLinkList splits a Logseq property value at the commas outside
// [[...]], as Logseq does, and trims each element (empty ones dropped);
// the elements keep their link or tag syntax.
func SplitLinkList(v string) []string {
	var out []string
	depth, start := 0, 0
	emit := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	for i := 0; i < len(v); i++ {
		switch {
		case strings.HasPrefix(v[i:], "[["):
			depth++
			i++
		case strings.HasPrefix(v[i:], "]]") && depth > 0:
			depth--
			i++
		case v[i] == ',' && depth == 0:
			emit(v[start:i])
			start = i + 1
		}
	}
	emit(v[start:])
	return out
}

// afterFirstLine returns s without its first line.
func afterFirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// lsUnit is one block's text inside a chunk.
type lsUnit struct {
	start, end int
	text       string
}

// logseqChunks makes one chunk per top-level block with its descendants,
// merging consecutive small top-level blocks and splitting large ones at
// block boundaries. A heading block gives the chunk its HeadingPath.
func (p *parser) logseqChunks(info []lsInfo) {
	blocks := p.doc.Blocks
	// The chunk being merged: its span, size and the units it holds.
	var pend []lsUnit
	pendStart, pendEnd, pendSize := 0, 0, 0
	flush := func() {
		if len(pend) > 0 {
			p.doc.Chunks = append(p.doc.Chunks, Chunk{StartLine: pendStart, EndLine: pendEnd, Text: joinUnits(pend)})
			pend = pend[:0]
		}
	}
	var units []lsUnit
	for t := 0; t < len(blocks); {
		u := t + 1
		for u < len(blocks) && blocks[u].Depth > 0 {
			u++
		}
		units = units[:0]
		endLine, size := blocks[t].EndLine, -1
		for k := t; k < u; k++ {
			endLine = max(endLine, blocks[k].EndLine)
			text := blocks[k].Content
			if k == t && info[t].isHeading {
				text = afterFirstLine(text)
			}
			if strings.TrimSpace(text) == "" {
				continue
			}
			units = append(units, lsUnit{blocks[k].Line, blocks[k].EndLine, text})
			size += len(text) + 1
		}
		top := blocks[t]
		switch {
		case info[t].isHeading:
			flush()
			path := []string{info[t].heading}
			if len(units) == 0 {
				p.doc.Chunks = append(p.doc.Chunks, Chunk{HeadingPath: path, StartLine: top.Line, EndLine: endLine})
			} else {
				p.packUnits(path, units, top.Line, endLine)
			}
		case len(units) == 0:
		case size > p.maxChunk:
			flush()
			p.packUnits(nil, units, top.Line, endLine)
		case len(pend) > 0 && pendSize+1+size <= p.maxChunk:
			pend = append(pend, units...)
			pendEnd = max(pendEnd, endLine)
			pendSize += 1 + size
		default:
			flush()
			pend = append(pend, units...)
			pendStart, pendEnd, pendSize = top.Line, endLine, size
		}
		t = u
	}
	flush()
}

// joinUnits joins unit texts with newlines.
func joinUnits(units []lsUnit) string {
	if len(units) == 1 {
		return units[0].text
	}
	n := len(units) - 1
	for _, u := range units {
		n += len(u.text)
	}
	var b strings.Builder
	b.Grow(n)
	for i, u := range units {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(u.text)
	}
	return b.String()
}

// packUnits emits chunks for units greedily filled up to maxChunk; the first
// chunk starts at firstLine and the last ends at lastLine or later. A unit
// above 4x the limit is cut at line breaks.
func (p *parser) packUnits(path []string, units []lsUnit, firstLine, lastLine int) {
	limit := p.maxChunk
	first := true
	emit := func(us []lsUnit) {
		c := Chunk{HeadingPath: path, StartLine: us[0].start, Text: joinUnits(us)}
		for _, u := range us {
			c.EndLine = max(c.EndLine, u.end)
		}
		if first {
			c.StartLine = min(c.StartLine, firstLine)
			first = false
		}
		p.doc.Chunks = append(p.doc.Chunks, c)
	}
	from, size := 0, -1
	for k, u := range units {
		if len(u.text) > 4*limit {
			if k > from {
				emit(units[from:k])
			}
			for _, part := range splitLinesBySize(u.text, limit) {
				emit([]lsUnit{{u.start, u.end, part}})
			}
			from, size = k+1, -1
			continue
		}
		if k > from && size+1+len(u.text) > limit {
			emit(units[from:k])
			from, size = k, -1
		}
		size += 1 + len(u.text)
	}
	if from < len(units) {
		emit(units[from:])
	}
	if c := &p.doc.Chunks[len(p.doc.Chunks)-1]; c.EndLine < lastLine {
		c.EndLine = lastLine
	}
}

// splitLinesBySize cuts s at line breaks into pieces of at most limit bytes
// (a single longer line stays whole).
func splitLinesBySize(s string, limit int) []string {
	var out []string
	start, end, lines := 0, 0, 0
	for i := 0; ; {
		nl := strings.IndexByte(s[i:], '\n')
		lineEnd := len(s)
		if nl >= 0 {
			lineEnd = i + nl
		}
		if lines > 0 && lineEnd-start > limit {
			out = append(out, s[start:end])
			start, lines = i, 0
		}
		end = lineEnd
		lines++
		if nl < 0 {
			break
		}
		i = lineEnd + 1
	}
	return append(out, s[start:end])
}
