package markdown

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// wikilink parses "[[...]]" whose first '[' is at line[i] and records it
// (as an embed when embed is set, i.e. it was preceded by '!'). It returns the
// index after the closing "]]", or false when the brackets are not closed on
// this line. For "[[a [[b]]" it resumes at the last inner "[[".
func (sc *scanner) wikilink(line string, i, ln int, embed bool) (int, bool) {
	if sc.noWikiClose {
		return 0, false
	}
	rest := line[i+2:]
	j := strings.Index(rest, "]]")
	if j < 0 {
		sc.noWikiClose = true
		return 0, false
	}
	inner := rest[:j]
	if k := strings.LastIndex(inner, "[["); k >= 0 {
		// "[[a [[b]]": the link is the innermost one.
		return i + 2 + k, true
	}
	end := i + 2 + j + 2
	l, ok := wikiTarget(inner)
	if !ok {
		return end, true
	}
	l.Kind = LinkWiki
	if embed {
		l.Kind = LinkEmbed
	}
	l.Line = ln
	sc.doc.Links = append(sc.doc.Links, l)
	sc.pos = append(sc.pos, linkPos{idx: len(sc.doc.Links) - 1, start: i, end: end, line: line})
	return end, true
}

// wikiTarget splits the inside of a wikilink, "Note#Heading|alias",
// "Note#^block", "#Heading" or "Note\|alias" (escaped pipe in tables).
func wikiTarget(inner string) (Link, bool) {
	var l Link
	target := inner
	if k := strings.IndexByte(inner, '|'); k >= 0 {
		target = strings.TrimSuffix(inner[:k], "\\")
		l.Display = strings.TrimSpace(inner[k+1:])
	}
	if k := strings.IndexByte(target, '#'); k >= 0 {
		sub := target[k+1:]
		target = target[:k]
		if strings.HasPrefix(sub, "^") {
			l.BlockID = strings.TrimSpace(sub[1:])
		} else {
			l.Heading = strings.TrimSpace(sub)
		}
	}
	l.Target = strings.TrimSpace(target)
	if l.Target == "" && l.Heading == "" && l.BlockID == "" {
		return Link{}, false
	}
	return l, true
}

// markdownLink handles "[text](dest)" or "![alt](dest)" where b is the
// matching '[' and line[close] is the ']' followed by '('. It records local
// targets only and returns the index after ')'.
func (sc *scanner) markdownLink(line string, b bracket, close, ln int) (int, bool) {
	if sc.destBudget <= 0 {
		return 0, false
	}
	dest, end, ok := parseDest(line, close+2)
	if !ok {
		sc.destBudget -= end - close
		return 0, false
	}
	text := strings.TrimSpace(line[b.pos+1 : close])
	if sc.logseq && strings.HasPrefix(dest, "((") && strings.HasSuffix(dest, "))") {
		if id := strings.TrimSpace(dest[2 : len(dest)-2]); isUUID(id) {
			sc.doc.Links = append(sc.doc.Links, Link{Kind: LinkBlockRef, Target: id, Display: text, Line: ln})
		}
		return end, true
	}
	l, ok := localTarget(dest)
	if !ok {
		return end, true
	}
	l.Kind = LinkMarkdown
	if b.image {
		l.Kind = LinkEmbed
	}
	l.Display = text
	l.Line = ln
	sc.doc.Links = append(sc.doc.Links, l)
	sc.pos = append(sc.pos, linkPos{idx: len(sc.doc.Links) - 1, start: b.pos, end: end, line: line})
	return end, true
}

// maxDestLen bounds how far a link destination and title are scanned, so
// lines full of unclosed "](" stay cheap.
const maxDestLen = 2048

// parseDest parses a link destination and optional title starting at
// line[k] (just after '('), up to and including the closing ')'. On failure
// end is how far the scan went.
func parseDest(line string, k int) (dest string, end int, ok bool) {
	n := min(len(line), k+maxDestLen)
	for k < n && isSpace(line[k]) {
		k++
	}
	if k < n && line[k] == '<' {
		j := strings.IndexByte(line[k+1:n], '>')
		if j < 0 {
			return "", n, false
		}
		dest = line[k+1 : k+1+j]
		k += j + 2
	} else {
		start, depth := k, 0
	loop:
		for k < n {
			switch line[k] {
			case '\\':
				if k+1 < n {
					k++
				}
			case ' ', '\t':
				break loop
			case '(':
				depth++
			case ')':
				if depth == 0 {
					break loop
				}
				depth--
			}
			k++
		}
		dest = line[start:k]
	}
	for k < n && isSpace(line[k]) {
		k++
	}
	if k < n && (line[k] == '"' || line[k] == '\'' || line[k] == '(') {
		closeCh := line[k]
		if closeCh == '(' {
			closeCh = ')'
		}
		j := strings.IndexByte(line[k+1:n], closeCh)
		if j < 0 {
			return "", n, false
		}
		k += j + 2
		for k < n && isSpace(line[k]) {
			k++
		}
	}
	if k >= n || line[k] != ')' {
		return "", k, false
	}
	return dest, k + 1, true
}

// localTarget turns a markdown link destination into a Link target when it
// points at a local file: no URL scheme, not protocol-relative, not a pure
// "#anchor". The path and fragment are URL-decoded (kept as written when
// decoding would yield a control character or invalid UTF-8; see urlDecode).
func localTarget(dest string) (Link, bool) {
	dest = strings.TrimSpace(dest)
	if dest == "" || dest[0] == '#' || strings.HasPrefix(dest, "//") ||
		strings.HasPrefix(dest, "((") || hasScheme(dest) {
		return Link{}, false
	}
	if strings.IndexByte(dest, '\\') >= 0 {
		dest = unescapeBackslashes(dest)
	}
	var l Link
	p, frag, _ := strings.Cut(dest, "#")
	l.Target = strings.TrimSpace(urlDecode(p))
	if l.Target == "" {
		return Link{}, false
	}
	if frag != "" {
		frag = urlDecode(frag)
		if strings.HasPrefix(frag, "^") {
			l.BlockID = frag[1:]
		} else {
			l.Heading = frag
		}
	}
	return l, true
}

// hasScheme reports whether s starts with a URL scheme of two or more
// characters followed by ':' ("https:", "mailto:", "obsidian:"). A single
// letter ("C:") is treated as a Windows drive, not a scheme.
func hasScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlpha(c):
		case i > 0 && (isDigit(c) || c == '+' || c == '-' || c == '.'):
		case c == ':':
			return i >= 2
		default:
			return false
		}
	}
	return false
}

// urlDecode percent-decodes s, returning it unchanged when it is not valid
// or when decoding would produce a control character ("%00", "%0A", "%7F",
// "%C2%85") or invalid UTF-8 ("%FF"): a NUL or a newline smuggled into a
// stored target would reach SQL rows, JSON, terminals and file names built
// from it, and no file a link can mean has one.
func urlDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	u, err := url.PathUnescape(s)
	if err != nil || !utf8.ValidString(u) {
		return s
	}
	for _, r := range u {
		if unicode.IsControl(r) {
			return s
		}
	}
	return u
}

// unescapeBackslashes removes backslashes that escape ASCII punctuation.
func unescapeBackslashes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isPunct reports whether c is ASCII punctuation.
func isPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// wikilinksIn returns every [[...]] target in s (used for YAML values and
// Logseq property values).
func wikilinksIn(s string) []Link {
	var out []Link
	for {
		i := strings.Index(s, "[[")
		if i < 0 {
			return out
		}
		rest := s[i+2:]
		j := strings.Index(rest, "]]")
		if j < 0 {
			return out
		}
		inner := rest[:j]
		if k := strings.LastIndex(inner, "[["); k >= 0 {
			inner = inner[k+2:]
		}
		if l, ok := wikiTarget(inner); ok {
			out = append(out, l)
		}
		s = rest[j+2:]
	}
}
