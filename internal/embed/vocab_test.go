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
		b, okB := tb.index[w]
		if okA != okB || a != b {
			t.Fatalf("word %q: scan (%d,%v) vs index (%d,%v)", w, a, okA, b, okB)
		}
		checked++
	}
	for _, w := range []string{"", "zzqxjv", "the", "obsidian"} {
		a, okA := tb.scan(w)
		b, okB := tb.index[w]
		if okA != okB || (okA && a != b) {
			t.Fatalf("word %q: scan (%d,%v) vs index (%d,%v)", w, a, okA, b, okB)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d words checked", checked)
	}
}
