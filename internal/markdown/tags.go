package markdown

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// NormalizeTag strips surrounding whitespace and leading '#' characters. It
// keeps the case: "  #Project/Alpha " → "Project/Alpha".
func NormalizeTag(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimLeft(s, "#")
	return strings.TrimSpace(s)
}

// TagKey is the comparison key of a tag: NormalizeTag, lower-cased and in
// Unicode NFC, so "#Café" (decomposed or not) and "café" match.
func TagKey(s string) string {
	s = NormalizeTag(s)
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	return norm.NFC.String(strings.ToLower(norm.NFC.String(s)))
}

// tag handles a '#' at line[i]: an inline tag "#tag", "#nested/tag" or, in
// Logseq, "#[[multi word tag]]". It returns the index to continue from.
func (sc *scanner) tag(line string, i, ln int) int {
	if i > 0 {
		r, _ := utf8.DecodeLastRuneInString(line[:i])
		if !tagMayFollow(r) {
			return i + 1
		}
	}
	n := len(line)
	if sc.logseq {
		if strings.HasPrefix(line[i+1:], "[[") && !sc.noWikiClose {
			j := strings.Index(line[i+3:], "]]")
			if j < 0 {
				sc.noWikiClose = true
			} else {
				inner := line[i+3 : i+3+j]
				if k := strings.LastIndex(inner, "[["); k >= 0 {
					// "#[[a [[b]]": resume at the inner page reference.
					return i + 3 + k
				}
				if name := strings.TrimSpace(inner); name != "" {
					sc.addInlineTag(name, ln)
				}
				return i + 3 + j + 2
			}
			return i + 1
		}
		// Priority markers "[#A]" are not tags.
		if i > 0 && line[i-1] == '[' && i+2 < n && line[i+2] == ']' && line[i+1] >= 'A' && line[i+1] <= 'Z' {
			return i + 3
		}
	}
	j := i + 1
	for j < n {
		c := line[j]
		if c < utf8.RuneSelf {
			if isAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '/' {
				j++
				continue
			}
			break
		}
		r, size := utf8.DecodeRuneInString(line[j:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) {
			break
		}
		j += size
	}
	name := strings.TrimRight(line[i+1:j], "/")
	if name == "" || allDigits(name) {
		return max(j, i+1)
	}
	sc.addInlineTag(name, ln)
	return j
}

// addInlineTag records an inline tag; in Logseq a tag is also a page reference.
func (sc *scanner) addInlineTag(name string, ln int) {
	sc.doc.Tags = append(sc.doc.Tags, Tag{Name: name, Line: ln, Source: "inline"})
	if sc.logseq {
		sc.doc.Links = append(sc.doc.Links, Link{Kind: LinkTagRef, Target: name, Line: ln})
	}
}

// tagMayFollow reports whether a tag may start right after r: not after a
// letter, digit or mark (C#, a#b), nor '&' (HTML entities &#123;), '/', '#',
// '\\' (escaped) or '_'.
func tagMayFollow(r rune) bool {
	if r < utf8.RuneSelf {
		c := byte(r)
		return !isAlpha(c) && !isDigit(c) && c != '&' && c != '/' && c != '#' && c != '\\' && c != '_'
	}
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
}

// allDigits reports whether s consists of ASCII or Unicode digits only.
func allDigits(s string) bool {
	for _, r := range s {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// splitTagList splits a frontmatter tag string on commas and whitespace.
func splitTagList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}
