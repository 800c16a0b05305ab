package embed

import (
	"encoding/binary"
	"strings"
)

// BuiltinWordVector returns the unit vector of one word in the built-in
// embedder's table (the word lower-cased, accents folded if needed), and
// false when the word is not in its vocabulary. No SIF weight, typo
// correction or n-gram fallback applies: it is the word's own vector, for
// comparing words with each other (query expansion in internal/search).
func BuiltinWordVector(word string) ([]float32, bool) {
	t, err := loadTable()
	if err != nil {
		return nil, false
	}
	t.buildIndex()
	id, ok := t.lookup([]byte(strings.ToLower(word)))
	if !ok {
		return nil, false
	}
	return t.unitRow(int(id)), true
}

// BuiltinWords returns the first k words of the built-in embedder's
// vocabulary (most frequent first; fewer when it has fewer) and their unit
// vectors, word i's at vecs[i*dims:(i+1)*dims].
func BuiltinWords(k int) (words []string, vecs []float32, dims int) {
	t, err := loadTable()
	if err != nil || k <= 0 {
		return nil, nil, 0
	}
	k = min(k, t.n)
	words = make([]string, 0, k)
	vecs = make([]float32, 0, k*t.dims)
	r := t.vocab
	for i := 0; i < k; i++ {
		l, n := binary.Uvarint(r)
		words = append(words, string(r[n:n+int(l)]))
		r = r[n+int(l):]
		vecs = append(vecs, t.unitRow(i)...)
	}
	return words, vecs, t.dims
}

// unitRow is word i's vector, dequantized and L2-normalized.
func (t *wordTable) unitRow(i int) []float32 {
	v := make([]float32, t.dims)
	t.addRow(v, i, t.scale[i])
	return Normalize(v)
}
