package search

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/textseg"
)

// Highlight markers in snippets (Markdown bold reads well for people and agents).
const (
	markOpen  = "**"
	markClose = "**"
)

type hlTerms struct {
	words []string // folded plain words, matched as word prefixes (stem-tolerant)
	runs  []string // segmented runs, matched as substrings
}

func highlighter(terms []term) hlTerms {
	var h hlTerms
	for _, t := range terms {
		if t.neg {
			continue
		}
		for _, w := range t.words {
			if w.Segmented {
				h.runs = append(h.runs, w.Text)
			} else if !isStopWord(w.Text) || len(t.words) > 1 {
				h.words = append(h.words, textseg.Fold(w.Text))
			}
		}
	}
	return h
}

func isStopWord(w string) bool { return stopwords[strings.ToLower(w)] }

// matchWord reports whether a folded text word matches a folded query word,
// tolerating English inflection the way the porter stemmer does at index time.
func matchWord(word, q string) bool {
	n := len(q)
	switch {
	case n >= 7:
		n -= 3
	case n >= 5:
		n -= 2
	}
	if len(word) < n {
		return false
	}
	return word[:n] == q[:n]
}

type span struct{ start, end int }

// spans finds every highlighted span in text, in order, non-overlapping.
func (h hlTerms) spans(text string) []span {
	var out []span
	if len(h.words) > 0 {
		i := 0
		for i < len(text) {
			r, size := utf8.DecodeRuneInString(text[i:])
			if !isWordRune(r) || textseg.IsSegmented(r) {
				i += size
				continue
			}
			j := i
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !isWordRune(r2) || textseg.IsSegmented(r2) {
					break
				}
				j += s2
			}
			w := textseg.Fold(text[i:j])
			for _, q := range h.words {
				if matchWord(w, q) {
					out = append(out, span{i, j})
					break
				}
			}
			i = j
		}
	}
	for _, run := range h.runs {
		from := 0
		for {
			k := strings.Index(text[from:], run)
			if k < 0 {
				break
			}
			out = append(out, span{from + k, from + k + len(run)})
			from += k + len(run)
		}
	}
	if len(h.runs) > 0 && len(out) > 1 {
		sortSpans(out)
		merged := out[:1]
		for _, s := range out[1:] {
			last := &merged[len(merged)-1]
			if s.start < last.end {
				if s.end > last.end {
					last.end = s.end
				}
				continue
			}
			merged = append(merged, s)
		}
		out = merged
	}
	return out
}

// sortSpans orders spans by start (O(n log n): a long chunk of CJK text
// can hold hundreds of thousands of matches).
func sortSpans(s []span) {
	sort.Slice(s, func(i, j int) bool { return s[i].start < s[j].start })
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// snippet cuts a window of about width bytes around the densest cluster of
// matches, with whitespace collapsed and matches wrapped in markers.
func (h hlTerms) snippet(text string, width int) string {
	sp := h.spans(text)
	start := 0
	if len(sp) > 0 {
		// Pick the span whose window [start, start+width) covers most
		// matches: two pointers over the ordered spans, linear.
		best, bestN, j := 0, 0, 0
		for i := range sp {
			if j < i {
				j = i
			}
			for j < len(sp) && sp[j].end-sp[i].start <= width {
				j++
			}
			if n := j - i; n > bestN {
				best, bestN = i, n
			}
		}
		start = sp[best].start - width/4
		if start < 0 {
			start = 0
		}
	}
	if len(text) <= width {
		start = 0
	}
	end := start + width
	if end > len(text) {
		end = len(text)
		if end-width > 0 && len(sp) > 0 {
			start = max(0, min(start, end-width))
		}
	}
	// Snap to rune and word boundaries.
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	if start > 0 {
		if k := strings.IndexAny(text[start:min(end, start+24)], " \n\t"); k >= 0 {
			start += k + 1
		}
	}
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	if end < len(text) {
		if k := strings.LastIndexAny(text[max(start, end-24):end], " \n\t"); k >= 0 {
			end = max(start, end-24) + k
		}
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	pos := start
	write := func(s string) { b.WriteString(collapse(s)) }
	for _, s := range sp {
		if s.end <= start || s.start >= end {
			continue
		}
		st, en := max(s.start, start), min(s.end, end)
		write(text[pos:st])
		b.WriteString(markOpen)
		b.WriteString(text[st:en])
		b.WriteString(markClose)
		pos = en
	}
	write(text[pos:end])
	if end < len(text) {
		b.WriteString("…")
	}
	return strings.TrimSpace(b.String())
}

// collapse turns runs of whitespace (newlines included) into single spaces.
func collapse(s string) string {
	if !strings.ContainsAny(s, "\n\t\r  ") {
		return s
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
