package llm

import "unicode"

// EstimateTokens is a rough token count for text the server did not count:
// about 4 bytes a token for ASCII (English, code), a token a character
// for Chinese, Japanese and Korean (each ideograph, kana or hangul
// syllable is one or more tokens in the common BPE vocabularies, where
// 4 bytes a token would count it as 0.75), and 2 characters a token for
// other scripts (accented Latin, Cyrillic, Greek, Arabic, ...).
func EstimateTokens(s string) int {
	var ascii, other, wide int
	for _, r := range s {
		switch {
		case r < 0x80:
			ascii++
		case isWide(r):
			wide++
		default:
			other++
		}
	}
	// ceil(ascii/4 + other/2 + wide)
	return (ascii + 2*other + 4*wide + 3) / 4
}

// isWide reports a character of a Chinese, Japanese or Korean script, or
// their punctuation and full-width forms.
func isWide(r rune) bool {
	switch {
	case r >= 0x3000 && r <= 0x303F, // CJK symbols and punctuation
		r >= 0xFF00 && r <= 0xFFEF: // half- and full-width forms
		return true
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Bopomofo)
}
