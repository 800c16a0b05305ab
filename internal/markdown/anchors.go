package markdown

import (
	"path"
	"strings"
	"unicode/utf8"
)

// Anchor text: the words a note uses around a link describe the link's
// target (the display text of [[Note|display]], the sentence or list item
// the link sits in). The index stores them as a field of the target note
// (see internal/index, anchors). The headings above the link were tried
// too and added nothing (docs/search.md, "What was tried").

// Bounds of Link.Context.
const (
	// MaxContextSide is how many bytes of the link's sentence (or list item,
	// or table row) are kept on each side of the link.
	MaxContextSide = 100
	// contextScan bounds the raw bytes looked at on each side of a link, so
	// a line of many links costs time linear in their number.
	contextScan = 3 * MaxContextSide
)

// linkPos is where a body link sits in the line the scanner saw.
type linkPos struct {
	idx        int // index into Doc.Links
	start, end int // byte span of the link in line
	line       string
}

// anchorKind reports whether a link of this kind gets anchor context.
func anchorKind(kind string) bool {
	return kind == LinkWiki || kind == LinkEmbed || kind == LinkMarkdown
}

// linkContexts fills Context of every body link the scanner recorded.
func (p *parser) linkContexts() {
	for _, lp := range p.sc.pos {
		l := &p.doc.Links[lp.idx]
		if anchorKind(l.Kind) {
			l.Context = linkContext(lp.line, lp.start, lp.end, linkText(*l))
		}
	}
	p.sc.pos = nil
}

// linkContext returns the plain text of the sentence, list item or table
// row of line that holds the link at line[start:end] (whose text is self,
// cut to 2×MaxContextSide), at most MaxContextSide bytes on either side of
// the link's own text, with links
// rendered as their display text (or target) and list, quote and task
// markers removed.
func linkContext(line string, start, end int, self string) string {
	start = max(0, min(start, len(line)))
	end = max(start, min(end, len(line)))
	a := max(0, start-contextScan)
	b := min(len(line), end+contextScan)
	left, right := line[a:start], line[end:b]
	// Markers sit at the start (past 64 bytes of indentation it is code).
	lead := strings.TrimLeft(line[:min(len(line), 64)], " \t")
	table := strings.HasPrefix(lead, "|")
	item := table || listOrQuote(lead)
	if !item {
		// A paragraph: the sentence around the link.
		left = sentenceTail(left)
		right = sentenceHead(right)
	} else if a == 0 {
		left = stripMarkers(left)
	}
	self = cutRight(self, 2*MaxContextSide) // a display text can be a whole line
	lt := cutLeft(collapse(plainInline(left)), MaxContextSide)
	rt := cutRight(collapse(plainInline(right)), MaxContextSide)
	// The scan window may have split a character at either end.
	return strings.TrimSpace(strings.ToValidUTF8(collapse(lt+self+rt), ""))
}

// listOrQuote reports whether s (left-trimmed) starts a list item or a quote.
func listOrQuote(s string) bool {
	if s == "" {
		return false
	}
	switch s[0] {
	case '-', '*', '+':
		return len(s) > 1 && (s[1] == ' ' || s[1] == '\t')
	case '>':
		return true
	}
	i := 0
	for i < len(s) && i < 9 && isDigit(s[i]) {
		i++
	}
	return i > 0 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && (s[i+1] == ' ' || s[i+1] == '\t')
}

// stripMarkers removes leading list, quote, callout and task markers.
func stripMarkers(s string) string {
	for {
		t := strings.TrimLeft(s, " \t>")
		if len(t) > 1 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && (t[1] == ' ' || t[1] == '\t') {
			t = t[2:]
		} else {
			i := 0
			for i < len(t) && i < 9 && isDigit(t[i]) {
				i++
			}
			if i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && (t[i+1] == ' ' || t[i+1] == '\t') {
				t = t[i+2:]
			}
		}
		t = strings.TrimLeft(t, " \t")
		if len(t) >= 3 && t[0] == '[' && t[2] == ']' {
			t = t[3:] // task box
		}
		if strings.HasPrefix(t, "[!") {
			if k := strings.IndexByte(t, ']'); k >= 0 {
				t = t[k+1:] // callout type
			}
		}
		if t == s {
			return t
		}
		s = t
	}
}

// sentenceTail is the part of s after its last sentence end (". ", "! ",
// "? ").
func sentenceTail(s string) string {
	for i := len(s) - 2; i >= 0; i-- {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && (s[i+1] == ' ' || s[i+1] == '\t') {
			return s[i+1:]
		}
	}
	return s
}

// sentenceHead is s up to and including its first sentence end.
func sentenceHead(s string) string {
	for i := 0; i < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			return s[:i+1]
		}
	}
	return s
}

// plainInline renders the links of s as their text: [[T|d]] as d, [[T]] as
// T's last path segment (without "#..."), [t](u) as t; an embedded
// attachment (![[icon.svg]], ![a](img.png)) is dropped.
func plainInline(s string) string {
	if !strings.Contains(s, "[") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '[')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		embed := i > 0 && s[i-1] == '!'
		pre := s[:i]
		if embed {
			pre = s[:i-1]
		}
		if strings.HasPrefix(s[i:], "[[") {
			if j := strings.Index(s[i+2:], "]]"); j >= 0 {
				b.WriteString(pre)
				inner := s[i+2 : i+2+j]
				if l, ok := wikiTarget(inner); ok && !(embed && attachmentName(l.Target)) {
					b.WriteString(linkText(l))
				}
				s = s[i+2+j+2:]
				continue
			}
		} else if j := strings.Index(s[i:], "]("); j >= 0 {
			if k := strings.IndexByte(s[i+j:], ')'); k >= 0 {
				b.WriteString(pre)
				if !embed {
					b.WriteString(s[i+1 : i+j])
				}
				s = s[i+j+k+1:]
				continue
			}
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
	}
}

// linkText is what a reader sees of a link: its display text, else its
// target's name (and heading).
func linkText(l Link) string {
	if l.Display != "" {
		return l.Display
	}
	t := l.Target
	if k := strings.LastIndexByte(t, '/'); k >= 0 {
		t = t[k+1:]
	}
	t = trimMarkdownExt(t)
	if l.Heading != "" {
		t = strings.TrimSpace(t + " " + l.Heading)
	}
	return t
}

// attachmentName reports whether a target names a non-Markdown file.
func attachmentName(t string) bool {
	ext := strings.ToLower(path.Ext(t))
	return ext != "" && ext != ".md" && len(ext) <= 6 && !strings.Contains(ext, " ")
}

// collapse replaces runs of spaces and tabs with one space.
func collapse(s string) string {
	if !strings.Contains(s, "  ") && !strings.ContainsRune(s, '\t') {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteByte(c)
	}
	return b.String()
}

// cutLeft keeps the last n bytes of s, starting at a word boundary.
func cutLeft(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if k := strings.IndexByte(s, ' '); k >= 0 {
		return s[k+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}

// cutRight keeps the first n bytes of s, ending at a word boundary.
func cutRight(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	s = s[:n]
	if k := strings.LastIndexByte(s, ' '); k > 0 {
		return s[:k]
	}
	return strings.ToValidUTF8(s, "")
}
