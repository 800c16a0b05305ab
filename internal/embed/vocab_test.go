package embed

import (
	"encoding/binary"
	"testing"
)

// The query path scans the vocabulary before the map exists; both must
// agree on every word, including ones that are not in it.
func TestVocabScanMatchesIndex(t *testing.T) {
	tb, err := loadTable()
	if err != nil {
		t.Fatal(err)
	}
	tb.buildIndex()
	r := tb.vocab
	checked := 0
	for i := 0; i < tb.n; i++ {
		l, k := binary.Uvarint(r)
		w := string(r[k : k+int(l)])
		r = r[k+int(l):]
		if i%997 != 0 && i > 50 {
			continue
		}
		a, okA := tb.scan(w)
		b, okB := vocabGet(tb.index, w)
		if okA != okB || a != b {
			t.Fatalf("word %q: scan (%d,%v) vs index (%d,%v)", w, a, okA, b, okB)
		}
		checked++
	}
	for _, w := range []string{"", "zzqxjv", "the", "obsidian"} {
		a, okA := tb.scan(w)
		b, okB := vocabGet(tb.index, w)
		if okA != okB || (okA && a != b) {
			t.Fatalf("word %q: scan (%d,%v) vs index (%d,%v)", w, a, okA, b, okB)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d words checked", checked)
	}
}

// The index answers as a map from each word to its last rank would, for
// every word and n-gram of the table and for words it does not hold.
func TestVocabIndexMatchesMap(t *testing.T) {
	tb, err := loadTable()
	if err != nil {
		t.Fatal(err)
	}
	tb.buildIndex()
	for _, x := range []*wordTable{tb, tb.grams} {
		want := map[string]int32{}
		r := x.vocab
		for i := 0; i < x.n; i++ {
			l, k := binary.Uvarint(r)
			if l > 0 {
				want[string(r[k:k+int(l)])] = int32(i)
			}
			r = r[k+int(l):]
		}
		for w, id := range want {
			if got, ok := vocabGet(x.index, w); !ok || got != id {
				t.Fatalf("%q: got (%d,%v), want %d", w, got, ok, id)
			}
			if got, ok := vocabGet(x.index, []byte(w)); !ok || got != id {
				t.Fatalf("%q as bytes: got (%d,%v), want %d", w, got, ok, id)
			}
		}
		for _, w := range []string{"", "zzqxjvqq", "obsidianmdvault", "<<<"} {
			if _, in := want[w]; in {
				continue
			}
			if id, ok := vocabGet(x.index, w); ok {
				t.Errorf("%q found as %d", w, id)
			}
		}
	}
}

// BenchmarkVocabIndex: building the word index (vocabIndex) against the
// map[string]int32 it replaced, over the built-in table's 150k words.
func BenchmarkVocabIndex(b *testing.B) {
	tb, err := loadTable()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			newVocabIndex(tb.vocab, tb.n)
		}
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			m := make(map[string]int32, tb.n)
			r := tb.vocab
			for i := 0; i < tb.n; i++ {
				l, k := binary.Uvarint(r)
				if l > 0 {
					m[string(r[k:k+int(l)])] = int32(i)
				}
				r = r[k+int(l):]
			}
		}
	})
}

// scanWords finds in one walk what scan finds word by word: known words,
// accented words by their folded form, repeated words, unknown words.
func TestScanWordsMatchesScan(t *testing.T) {
	tb, err := loadTable()
	if err != nil {
		t.Fatal(err)
	}
	text := "The café and THE obsidian vault, zzqxjv naïve résumé — 東京 notes' don't x"
	var buf []byte
	found := tb.scanWords(text, &buf)
	n := 0
	forEachWord(text, &buf, func(w []byte) {
		for _, form := range []string{string(w), foldWord(w)} {
			want, okW := tb.scan(form)
			got, okG := found[form]
			if okW != okG || want != got {
				t.Errorf("%q: scanWords (%d,%v), scan (%d,%v)", form, got, okG, want, okW)
			}
			if okW {
				n++
			}
		}
	})
	if n < 8 {
		t.Fatalf("only %d forms found in the vocabulary", n)
	}
}
