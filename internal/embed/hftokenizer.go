package embed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"unicode/utf8"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
)

// m2vTokenizer turns a text into vocabulary ids, without special tokens.
type m2vTokenizer interface {
	tokenize(text string, dst []int32) []int32
	maxID() int32
	unk() int32     // the unknown token's id; -1: none
	medianLen() int // median vocabulary token length in characters
}

func (wp *wordPiece) unk() int32     { return wp.unkID }
func (wp *wordPiece) medianLen() int { return wp.medianTokenLen }

// hfTokenizer runs a tokenizer.json that is not the BERT WordPiece loci
// implements itself (wordpiece.go): SentencePiece Unigram with its
// Precompiled normalizer and Metaspace pre-tokenizer (XLM-R, e5, bge-m3
// and the multilingual potion models distilled from them), BPE, WordLevel.
// It uses github.com/sugarme/tokenizer, the library the ONNX provider
// tokenizes with. Encoding holds a lock: the library's models keep caches
// that are not safe for concurrent use, and a static model's cost is the
// tokenizing anyway.
type hfTokenizer struct {
	mu     sync.Mutex
	tok    *tokenizer.Tokenizer
	unkID  int32
	max    int32
	median int
}

// parseHFTokenizer loads a tokenizer.json with the library, recovering a
// panic on a damaged file into an error.
func parseHFTokenizer(raw []byte) (h *hfTokenizer, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("the tokenizer library failed on it: %v", r)
		}
	}()
	var tj struct {
		Model struct {
			Type     string  `json:"type"`
			UnkID    *int    `json:"unk_id"`    // Unigram
			UnkToken *string `json:"unk_token"` // BPE, WordLevel, WordPiece
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %v", err)
	}
	tok, err := pretrained.FromReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("unsupported or damaged tokenizer.json (model %q): %v", tj.Model.Type, err)
	}
	vocab := tok.GetVocab(true)
	if len(vocab) == 0 || len(vocab) > maxVocab {
		return nil, fmt.Errorf("tokenizer vocab has %d tokens (1 to %d allowed)", len(vocab), maxVocab)
	}
	h = &hfTokenizer{tok: tok, unkID: -1}
	lens := make([]int, 0, len(vocab))
	for t, id := range vocab {
		if id < 0 || id > 1<<30 {
			return nil, fmt.Errorf("tokenizer vocab: token %q has id %d", t, id)
		}
		h.max = max(h.max, int32(id))
		lens = append(lens, utf8.RuneCountInString(t))
	}
	sort.Ints(lens)
	if m := len(lens); m%2 == 1 {
		h.median = lens[m/2]
	} else {
		h.median = (lens[m/2-1] + lens[m/2]) / 2
	}
	switch {
	case tj.Model.UnkID != nil:
		h.unkID = int32(*tj.Model.UnkID)
	case tj.Model.UnkToken != nil:
		if id, ok := vocab[*tj.Model.UnkToken]; ok {
			h.unkID = int32(id)
		}
	}
	return h, nil
}

func (h *hfTokenizer) maxID() int32   { return h.max }
func (h *hfTokenizer) unk() int32     { return h.unkID }
func (h *hfTokenizer) medianLen() int { return h.median }

// tokenize appends the text's ids; a text the library fails on adds none
// (its vector is then the zero vector, which matches nothing).
func (h *hfTokenizer) tokenize(text string, dst []int32) (out []int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer func() {
		if recover() != nil {
			out = dst
		}
	}()
	enc, err := h.tok.EncodeSingle(text, false)
	if err != nil {
		return dst
	}
	for _, id := range enc.Ids {
		if id >= 0 && int32(id) <= h.max {
			dst = append(dst, int32(id))
		}
	}
	return dst
}

// parseM2VTokenizer picks the tokenizer for a Model2Vec folder: loci's own
// WordPiece for BERT-style files (exact, fuzzed), the library for the rest.
func parseM2VTokenizer(raw []byte) (m2vTokenizer, error) {
	if wp, err := parseWordPiece(raw); err == nil {
		return wp, nil
	}
	h, err := parseHFTokenizer(raw)
	if err != nil {
		return nil, err
	}
	return h, nil
}
