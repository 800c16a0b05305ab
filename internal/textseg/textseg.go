// Package textseg prepares text for SQLite FTS5's unicode61 tokenizer.
//
// unicode61 splits on spaces and punctuation, which leaves Chinese, Japanese,
// Thai, Khmer, ... text (written without spaces) as one giant token per run,
// so a word inside a sentence can never match. Like Lucene's CJK analyzer we
// rewrite every run of such characters as overlapping bigrams ("知识管理" →
// "知识 识管 管理") both when indexing and when querying; a query word then
// becomes a phrase of its bigrams, which matches exactly the texts that
// contain it. Korean Hangul is included: its words carry attached particles
// ("노트를"), which bigrams also handle.
package textseg

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// IsSegmented reports whether r belongs to a script written without spaces
// between words (or with agglutinated particles) that we bigram.
func IsSegmented(r rune) bool {
	if r < 0x0E00 {
		return false
	}
	switch {
	case r >= 0x0E00 && r <= 0x0EFF: // Thai, Lao
		return unicode.IsLetter(r) || unicode.Is(unicode.Mn, r)
	case r >= 0x1000 && r <= 0x109F: // Myanmar
		return true
	case r >= 0x1780 && r <= 0x17FF: // Khmer
		return unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)
	case r >= 0x3040 && r <= 0x30FF: // Hiragana, Katakana
		return r != 0x30FB // katakana middle dot is punctuation
	case r >= 0x3400 && r <= 0x4DBF, r >= 0x4E00 && r <= 0x9FFF, r >= 0xF900 && r <= 0xFAFF, r >= 0x20000 && r <= 0x3FFFF: // Han
		return true
	case r >= 0xAC00 && r <= 0xD7AF, r >= 0x1100 && r <= 0x11FF, r >= 0x3130 && r <= 0x318F: // Hangul
		return true
	case r >= 0x31F0 && r <= 0x31FF, r >= 0xFF66 && r <= 0xFF9F: // Katakana ext, half-width
		return true
	}
	return false
}

// HasSegmented reports whether s contains any character IsSegmented accepts.
func HasSegmented(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xE0 { // lead byte of a 3- or 4-byte sequence (U+0800 and up)
			r, _ := utf8.DecodeRuneInString(s[i:])
			if IsSegmented(r) {
				return true
			}
		}
	}
	return false
}

// ForIndex returns s with every segmented run replaced by its space-separated
// overlapping bigrams (a run of one character stays as it is). Text without
// such characters is returned unchanged and without allocation.
func ForIndex(s string) string {
	if !HasSegmented(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) * 2)
	var run []rune
	flush := func() {
		writeBigrams(&b, run)
		run = run[:0]
	}
	for _, r := range s {
		if IsSegmented(r) {
			run = append(run, r)
			continue
		}
		if len(run) > 0 {
			flush()
		}
		b.WriteRune(r)
	}
	if len(run) > 0 {
		flush()
	}
	return b.String()
}

func writeBigrams(b *strings.Builder, run []rune) {
	b.WriteByte(' ')
	if len(run) == 1 {
		b.WriteRune(run[0])
	} else {
		for i := 0; i+1 < len(run); i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteRune(run[i])
			b.WriteRune(run[i+1])
		}
	}
	b.WriteByte(' ')
}

// Bigrams returns the bigrams of one segmented run (the run itself if it has
// a single character).
func Bigrams(run string) []string {
	rs := []rune(run)
	if len(rs) <= 1 {
		return []string{run}
	}
	out := make([]string, 0, len(rs)-1)
	for i := 0; i+1 < len(rs); i++ {
		out = append(out, string(rs[i:i+2]))
	}
	return out
}

// Word is one query word as unicode61 would see it, split further into
// segmented runs and plain parts.
type Word struct {
	Text      string
	Segmented bool
}

// Words splits s into the token-character runs unicode61 produces (letters,
// digits, marks; everything else separates), splitting segmented runs apart
// from plain ones.
func Words(s string) []Word {
	var out []Word
	start := -1
	seg := false
	emit := func(end int) {
		if start >= 0 {
			out = append(out, Word{Text: s[start:end], Segmented: seg})
			start = -1
		}
	}
	for i, r := range s {
		if !isTokenChar(r) {
			emit(i)
			continue
		}
		rs := IsSegmented(r)
		if start >= 0 && rs != seg {
			emit(i)
		}
		if start < 0 {
			start, seg = i, rs
		}
	}
	emit(len(s))
	return out
}

func isTokenChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.No, r) || r == 0x200C || r == 0x200D
}

// foldPool holds the diacritic-removing transformers: a transform.Chain
// keeps buffers and state between calls, so one shared chain used by
// concurrent searches (loci serve) corrupted its state and panicked with
// "slice bounds out of range"; each call takes its own from the pool.
var foldPool = sync.Pool{New: func() any {
	return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
}}

// Fold lower-cases s and removes diacritics ("Café" → "cafe").
func Fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	t := foldPool.Get().(transform.Transformer)
	out, _, err := transform.String(t, s) // transform.String resets t first
	foldPool.Put(t)
	if err != nil {
		out = s
	}
	return strings.ToLower(out)
}
