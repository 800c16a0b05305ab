package markdown

import "strings"

// markdownChunks splits the body at headings. Text before the first heading
// is a chunk without HeadingPath; each heading starts a chunk whose
// HeadingPath is the path of enclosing headings, kept even when empty.
func (p *parser) markdownChunks(heads []hspan, kinds []uint8) {
	n := len(p.lines)
	first := n
	if len(heads) > 0 {
		first = heads[0].start
	}
	p.section(nil, nil, p.body(), first, kinds)

	var stack []hspan
	for k := range heads {
		h := &heads[k]
		for len(stack) > 0 && stack[len(stack)-1].level >= h.level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, *h)
		path := make([]string, len(stack))
		for i, s := range stack {
			path[i] = s.text
		}
		next := n
		if k+1 < len(heads) {
			next = heads[k+1].start
		}
		p.section(path, h, h.end+1, next, kinds)
	}
}

// section emits the chunks for content lines [a, b) (0-based) under heading h
// (nil for the text before the first heading). Sections above the size limit
// are split at blank lines outside fenced code; a paragraph above 4x the
// limit is cut at line boundaries.
func (p *parser) section(path []string, h *hspan, a, b int, kinds []uint8) {
	for a < b && isBlank(p.lines[a]) {
		a++
	}
	for b > a && isBlank(p.lines[b-1]) {
		b--
	}
	if a >= b {
		if h != nil {
			p.doc.Chunks = append(p.doc.Chunks, Chunk{HeadingPath: path, StartLine: h.start + 1, EndLine: h.end + 1})
		}
		return
	}
	startLine := a + 1
	if h != nil {
		startLine = h.start + 1
	}
	limit := p.maxChunk
	if p.textLen(a, b) <= limit {
		p.doc.Chunks = append(p.doc.Chunks, Chunk{HeadingPath: path, StartLine: startLine, EndLine: b, Text: p.text(a, b)})
		return
	}

	emit := func(x, y int) {
		p.doc.Chunks = append(p.doc.Chunks, Chunk{HeadingPath: path, StartLine: min(startLine, x+1), EndLine: y, Text: p.text(x, y)})
		startLine = b + 1 // only the first part starts at the heading line
	}
	emitPart := func(x, y int) {
		if p.textLen(x, y) <= 4*limit {
			emit(x, y)
			return
		}
		s := x
		for j := x + 1; j < y; j++ {
			if p.textLen(s, j+1) > limit {
				emit(s, j)
				s = j
			}
		}
		emit(s, y)
	}
	partA, partB := -1, -1
	for i := a; i < b; {
		for i < b && kinds[i] == kindBlank {
			i++
		}
		if i >= b {
			break
		}
		us := i
		for i < b && kinds[i] != kindBlank {
			i++
		}
		switch {
		case partA < 0:
			partA, partB = us, i
		case p.textLen(partA, i) <= limit:
			partB = i
		default:
			emitPart(partA, partB)
			partA, partB = us, i
		}
	}
	if partA >= 0 {
		emitPart(partA, partB)
	}
}

// textLen is the length in bytes of lines [a, b) joined with "\n".
func (p *parser) textLen(a, b int) int {
	if !p.hasCR {
		return p.starts[b-1] + len(p.lines[b-1]) - p.starts[a]
	}
	if p.cum == nil {
		p.cum = make([]int, len(p.lines)+1)
		for i, l := range p.lines {
			p.cum[i+1] = p.cum[i] + len(l) + 1
		}
	}
	return p.cum[b] - p.cum[a] - 1
}

// text returns lines [a, b) joined with "\n", sliced from the source when
// the file has no CRLF line endings.
func (p *parser) text(a, b int) string {
	if !p.hasCR {
		return p.src[p.starts[a] : p.starts[b-1]+len(p.lines[b-1])]
	}
	var sb strings.Builder
	sb.Grow(p.textLen(a, b))
	for i := a; i < b; i++ {
		if i > a {
			sb.WriteByte('\n')
		}
		sb.WriteString(p.lines[i])
	}
	return sb.String()
}
