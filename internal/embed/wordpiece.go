package embed

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// wordPiece is the subset of a Hugging Face tokenizer.json that the
// Model2Vec models distilled from BERT-style sentence transformers use
// (potion-base-*): a BertNormalizer, a BertPreTokenizer and a WordPiece
// model. Other tokenizers (Unigram, BPE, WordLevel, other normalizers or
// pre-tokenizers) are refused when the file is read, never approximated.
type wordPiece struct {
	vocab        map[string]int32
	unkID        int32 // -1: no unknown token
	prefix       string
	maxWordChars int
	// normalizer (BertNormalizer); none of them when the file has no
	// normalizer.
	cleanText, chineseChars, stripAccents, lowercase bool
	// medianTokenLen is the median length in characters of the vocabulary's
	// tokens: Model2Vec cuts a text to max tokens × this many characters
	// before it tokenizes.
	medianTokenLen int
}

// maxVocab bounds the vocabulary of a tokenizer.json.
const maxVocab = 4 << 20

// tokenizerJSON is the part of tokenizer.json read here.
type tokenizerJSON struct {
	Normalizer *struct {
		Type               string `json:"type"`
		CleanText          *bool  `json:"clean_text"`
		HandleChineseChars *bool  `json:"handle_chinese_chars"`
		StripAccents       *bool  `json:"strip_accents"`
		Lowercase          *bool  `json:"lowercase"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type                    string          `json:"type"`
		UnkToken                *string         `json:"unk_token"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int             `json:"max_input_chars_per_word"`
		Vocab                   json.RawMessage `json:"vocab"`
	} `json:"model"`
}

// parseWordPiece reads a tokenizer.json. It refuses what it does not
// implement, naming what is supported.
func parseWordPiece(raw []byte) (*wordPiece, error) {
	var tj tokenizerJSON
	if err := json.Unmarshal(raw, &tj); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %v", err)
	}
	if tj.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("tokenizer model %q is not supported: only WordPiece tokenizers (BertNormalizer + BertPreTokenizer, as in potion-base-*) are", tj.Model.Type)
	}
	wp := &wordPiece{unkID: -1, prefix: "##", maxWordChars: 100}
	if tj.Normalizer != nil {
		n := tj.Normalizer
		if n.Type != "BertNormalizer" {
			return nil, fmt.Errorf("tokenizer normalizer %q is not supported: only BertNormalizer (or none) is", n.Type)
		}
		flag := func(p *bool, def bool) bool {
			if p == nil {
				return def
			}
			return *p
		}
		wp.cleanText = flag(n.CleanText, true)
		wp.chineseChars = flag(n.HandleChineseChars, true)
		wp.lowercase = flag(n.Lowercase, true)
		wp.stripAccents = flag(n.StripAccents, wp.lowercase) // unset: as lowercase (as in tokenizers)
	}
	if tj.PreTokenizer == nil || tj.PreTokenizer.Type != "BertPreTokenizer" {
		got := "none"
		if tj.PreTokenizer != nil {
			got = fmt.Sprintf("%q", tj.PreTokenizer.Type)
		}
		return nil, fmt.Errorf("tokenizer pre_tokenizer %s is not supported: only BertPreTokenizer is", got)
	}
	if tj.Model.ContinuingSubwordPrefix != nil {
		wp.prefix = *tj.Model.ContinuingSubwordPrefix
	}
	if tj.Model.MaxInputCharsPerWord > 0 {
		wp.maxWordChars = tj.Model.MaxInputCharsPerWord
	}
	if err := json.Unmarshal(tj.Model.Vocab, &wp.vocab); err != nil {
		return nil, fmt.Errorf("tokenizer vocab is not a map of token to id: %v", err)
	}
	if len(wp.vocab) == 0 || len(wp.vocab) > maxVocab {
		return nil, fmt.Errorf("tokenizer vocab has %d tokens (1 to %d allowed)", len(wp.vocab), maxVocab)
	}
	lens := make([]int, 0, len(wp.vocab))
	for tok, id := range wp.vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer vocab: token %q has negative id %d", tok, id)
		}
		lens = append(lens, utf8.RuneCountInString(tok))
	}
	sort.Ints(lens)
	if m := len(lens); m%2 == 1 {
		wp.medianTokenLen = lens[m/2]
	} else {
		wp.medianTokenLen = (lens[m/2-1] + lens[m/2]) / 2 // int(np.median): the mean of the middle two, floored
	}
	if tj.Model.UnkToken != nil {
		id, ok := wp.vocab[*tj.Model.UnkToken]
		if !ok {
			return nil, fmt.Errorf("tokenizer unk_token %q is not in the vocab", *tj.Model.UnkToken)
		}
		wp.unkID = id
	}
	return wp, nil
}

// maxID is the largest id of the vocabulary.
func (wp *wordPiece) maxID() int32 {
	m := int32(-1)
	for _, id := range wp.vocab {
		m = max(m, id)
	}
	return m
}

// normalize applies the BertNormalizer: drop control characters and turn
// whitespace into spaces, put spaces around CJK ideographs, strip accents
// (NFD, then drop non-spacing marks), lowercase.
func (wp *wordPiece) normalize(s string) string {
	if isASCIIString(s) {
		return wp.normalizeASCII(s)
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		if wp.cleanText {
			if r == 0 || r == utf8.RuneError || isBertControl(r) {
				continue
			}
			if isBertSpace(r) {
				r = ' '
			}
		}
		if wp.chineseChars && isCJK(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if wp.stripAccents {
		d := norm.NFD.String(out)
		b.Reset()
		for _, r := range d {
			if !unicode.Is(unicode.Mn, r) {
				b.WriteRune(r)
			}
		}
		out = b.String()
	}
	if wp.lowercase {
		out = strings.ToLower(out)
	}
	return out
}

// normalizeASCII is normalize for ASCII text (no accents, no CJK): one
// pass over the bytes.
func (wp *wordPiece) normalizeASCII(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if wp.cleanText {
			switch {
			case c == '\t' || c == '\n' || c == '\r':
				c = ' '
			case c < 0x20 || c == 0x7f:
				continue // control characters (including \v and \f, which are Cc)
			}
		}
		if wp.lowercase && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// words applies the BertPreTokenizer: split on whitespace, and every
// punctuation character is a word of its own.
func words(s string, fn func(w string)) {
	start := -1
	for i, r := range s {
		switch {
		case isBertSpace(r):
			if start >= 0 {
				fn(s[start:i])
				start = -1
			}
		case isBertPunct(r):
			if start >= 0 {
				fn(s[start:i])
				start = -1
			}
			fn(s[i : i+utf8.RuneLen(r)])
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		fn(s[start:])
	}
}

// tokenize returns the ids of text (no special tokens), appending to dst:
// normalize, split into words, then greedy longest-match-first WordPiece
// per word; a word that cannot be covered, or is longer than
// max_input_chars_per_word, is the unknown token.
func (wp *wordPiece) tokenize(text string, dst []int32) []int32 {
	var key []byte
	words(wp.normalize(text), func(w string) {
		if utf8.RuneCountInString(w) > wp.maxWordChars {
			if wp.unkID >= 0 {
				dst = append(dst, wp.unkID)
			}
			return
		}
		mark := len(dst)
		for start := 0; start < len(w); {
			end := len(w)
			found := int32(-1)
			for end > start {
				key = key[:0]
				if start > 0 {
					key = append(key, wp.prefix...)
				}
				key = append(key, w[start:end]...)
				if id, ok := wp.vocab[string(key)]; ok {
					found = id
					break
				}
				_, size := utf8.DecodeLastRuneInString(w[start:end])
				end -= size
			}
			if found < 0 {
				dst = dst[:mark]
				if wp.unkID >= 0 {
					dst = append(dst, wp.unkID)
				}
				return
			}
			dst = append(dst, found)
			start = end
		}
	})
	return dst
}

// isBertSpace is tokenizers' whitespace test (Rust's char::is_whitespace:
// the White_Space property, as Go's unicode.IsSpace).
func isBertSpace(r rune) bool { return unicode.IsSpace(r) }

// isBertControl is tokenizers' control test: categories Cc, Cf, Cn, Co,
// except tab, newline and carriage return.
func isBertControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co) || !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// isBertPunct: ASCII punctuation (which includes $+<=>^`|~) or Unicode
// punctuation.
func isBertPunct(r rune) bool {
	if r < 0x80 {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}

// isCJK: the CJK Unified Ideographs blocks BERT puts spaces around.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
