package markdown

import (
	"strings"
)

// maxBrackets bounds the '[' stack used to match markdown links; deeper
// nesting is treated as plain text.
const maxBrackets = 32

// bracket is an unmatched '[' (or "![") on the current line.
type bracket struct {
	pos   int // index of '['
	image bool
}

// scanner finds inline constructs (links, tags, block ids, block refs) in one
// line at a time, skipping code spans, %%comments%%, URLs and HTML tags. The
// only state kept across lines is whether an Obsidian comment is open.
type scanner struct {
	doc       *Doc
	logseq    bool
	inComment bool // inside a %% comment that started on an earlier line
	brackets  [maxBrackets]bracket
	nb        int

	// Per-line memory of failed searches: once a closing delimiter was not
	// found from some position, it cannot be found from any later one, so
	// the scan stays linear on hostile lines ("[[[[[[...", "<a<a<a...").
	noWikiClose  bool                 // no "]]" left on the line
	noAngleClose bool                 // no '>' left on the line
	noTickRun    [maxTickRun + 1]bool // no closing backtick run of that length left
	// destBudget and tickBudget bound the bytes scanned by failed link
	// destinations and failed code span searches on a line to a multiple of
	// its length; past that, the constructs are read as plain text.
	destBudget, tickBudget int
	// pos records where each body link sat, for its anchor context
	// (see linkContexts).
	pos []linkPos
}

// maxTickRun is the longest backtick run whose failed search is remembered.
const maxTickRun = 16

// scanLine scans one line (1-based line number ln) that is not inside fenced code.
func (sc *scanner) scanLine(line string, ln int) {
	sc.nb = 0
	sc.noWikiClose, sc.noAngleClose = false, false
	sc.noTickRun = [maxTickRun + 1]bool{}
	n := len(line)
	sc.destBudget = 8*n + 4*maxDestLen
	sc.tickBudget = 8*n + 4096
	i := 0
	for i < n {
		if sc.inComment {
			j := strings.Index(line[i:], "%%")
			if j < 0 {
				return
			}
			i += j + 2
			sc.inComment = false
			continue
		}
		switch line[i] {
		case '%':
			if !sc.logseq && i+1 < n && line[i+1] == '%' {
				sc.inComment = true
				i += 2
				continue
			}
		case '`':
			i = sc.skipCodeSpan(line, i)
			continue
		case '\\':
			i += 2
			continue
		case '!':
			if i+1 < n && line[i+1] == '[' {
				if i+2 < n && line[i+2] == '[' {
					if j, ok := sc.wikilink(line, i+1, ln, true); ok {
						i = j
						continue
					}
				}
				sc.push(i+1, true)
				i += 2
				continue
			}
		case '[':
			if i+1 < n && line[i+1] == '[' {
				if j, ok := sc.wikilink(line, i, ln, false); ok {
					i = j
					continue
				}
			}
			sc.push(i, false)
		case ']':
			if sc.nb > 0 {
				sc.nb--
				b := sc.brackets[sc.nb]
				if i+1 < n && line[i+1] == '(' {
					if j, ok := sc.markdownLink(line, b, i, ln); ok {
						i = j
						continue
					}
				}
			}
		case '#':
			i = sc.tag(line, i, ln)
			continue
		case '<':
			if j := sc.skipAngle(line, i); j > i {
				i = j
				continue
			}
		case ':':
			if j := skipBareURL(line, i); j > i {
				i = j
				continue
			}
		case '^':
			if sc.blockID(line, i, ln) {
				return
			}
		case '(':
			if sc.logseq && i+1 < n && line[i+1] == '(' {
				if j, ok := sc.blockRef(line, i, ln); ok {
					i = j
					continue
				}
			}
		}
		i++
	}
}

// push records an unmatched '['.
func (sc *scanner) push(pos int, image bool) {
	if sc.nb < maxBrackets {
		sc.brackets[sc.nb] = bracket{pos: pos, image: image}
		sc.nb++
	}
}

// skipCodeSpan returns the index after the code span starting at the backtick
// run at line[i], or after the run itself when it has no closing run of the
// same length on this line (or the line's search budget is spent).
func (sc *scanner) skipCodeSpan(line string, i int) int {
	n := runLen(line, i, '`')
	if n <= maxTickRun && sc.noTickRun[n] || sc.tickBudget <= 0 {
		return i + n
	}
	j := i + n
	for j < len(line) {
		k := strings.IndexByte(line[j:], '`')
		if k < 0 {
			break
		}
		k += j
		m := runLen(line, k, '`')
		if m == n {
			return k + m
		}
		j = k + m
	}
	if n <= maxTickRun {
		sc.noTickRun[n] = true
	}
	sc.tickBudget -= len(line) - i
	return i + n
}

// skipAngle skips an autolink (<https://...>) or an inline HTML tag (<a ...>,
// </span>) starting at line[i]; it returns i when there is none.
func (sc *scanner) skipAngle(line string, i int) int {
	if i+1 >= len(line) || sc.noAngleClose {
		return i
	}
	c := line[i+1]
	if !isAlpha(c) && c != '/' {
		return i
	}
	j := strings.IndexByte(line[i+1:], '>')
	if j < 0 {
		sc.noAngleClose = true
		return i
	}
	return i + 1 + j + 1
}

// skipBareURL skips the rest of a bare URL when line[i] is the ':' of "scheme://".
func skipBareURL(line string, i int) int {
	if i == 0 || !isAlpha(line[i-1]) || !strings.HasPrefix(line[i+1:], "//") {
		return i
	}
	j := i + 3
	for j < len(line) && !isSpace(line[j]) {
		j++
	}
	return j
}

// blockID records an Obsidian block anchor when line[i] is the '^' of a
// trailing " ^id" (or a line that is only "^id").
func (sc *scanner) blockID(line string, i, ln int) bool {
	if i > 0 && !isSpace(line[i-1]) {
		return false
	}
	j := i + 1
	for j < len(line) && isIDChar(line[j]) {
		j++
	}
	if j == i+1 || !isBlank(line[j:]) {
		return false
	}
	sc.doc.BlockIDs = append(sc.doc.BlockIDs, BlockID{ID: line[i+1 : j], Line: ln})
	return true
}

// blockRef records a Logseq block reference "((uuid))" at line[i].
func (sc *scanner) blockRef(line string, i, ln int) (int, bool) {
	const n = 36 // len of a uuid
	rest := line[i+2:]
	if len(rest) < n+2 || rest[n] != ')' || rest[n+1] != ')' || !isUUID(rest[:n]) {
		return 0, false
	}
	sc.doc.Links = append(sc.doc.Links, Link{Kind: LinkBlockRef, Target: rest[:n], Line: ln})
	return i + 2 + n + 2, true
}

// isUUID reports whether s looks like 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIDChar reports whether c may appear in an Obsidian block id.
func isIDChar(c byte) bool { return isAlpha(c) || isDigit(c) || c == '-' }
