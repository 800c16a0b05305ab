package embed

import (
	"context"
	"strings"
	"testing"
)

// TestSubwordVectors: an unknown word one edit away from a vocabulary
// word (a typo) takes that word's vector; another unknown word (a
// compound, a foreign form) gets a vector from its character n-grams, close
// to the words it resembles; a random string has too few known n-grams and
// gets nothing (a text of such words alone is the zero vector).
func TestSubwordVectors(t *testing.T) {
	tb, err := loadTable()
	if err != nil || tb.grams == nil || tb.gramMinN != 3 || tb.gramMaxN != 5 {
		t.Fatalf("n-gram table: %v %+v", err, tb)
	}
	p := Builtin()
	texts := []string{"worksapce", "workspace", "embeding", "embedding", "recipies", "recipes",
		"synchronisieren", "synchronize", "markdownlint", "markdown",
		"banana", "keyboard", "xqzvkj", "qwzxjkv", "zzqqxx qqzzyy", "pfffrtz garden", "garden"}
	vs, err := p.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	v := map[string][]float32{}
	for i, s := range texts {
		v[s] = vs[i]
	}
	// A query's typo is corrected; the same word in a note's text is not.
	for _, c := range [][2]string{{"worksapce", "workspace"}, {"embeding", "embedding"}, {"recipies", "recipes"}} {
		q, err := QueryIn(context.Background(), p, c[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		if s := Dot(q, v[c[1]]); s < 0.999 {
			t.Errorf("query typo %s·%s = %.3f, want the word's vector", c[0], c[1], s)
		}
		if s := Dot(v[c[0]], v[c[1]]); s > 0.99 {
			t.Errorf("text typo %s·%s = %.3f: corrected outside a query", c[0], c[1], s)
		}
	}
	for _, c := range []struct{ word, like, other string }{
		{"synchronisieren", "synchronize", "banana"},
		{"markdownlint", "markdown", "keyboard"},
	} {
		if _, ok := tb.correct([]byte(c.word)); ok {
			t.Fatalf("%s is one edit from a word; the case needs n-grams", c.word)
		}
		near, far := Dot(v[c.word], v[c.like]), Dot(v[c.word], v[c.other])
		if near < 0.1 || near < far+0.1 {
			t.Errorf("%s·%s = %.3f, %s·%s = %.3f", c.word, c.like, near, c.word, c.other, far)
		}
	}
	for _, g := range []string{"xqzvkj", "qwzxjkv", "zzqqxx qqzzyy"} {
		if n := Dot(v[g], v[g]); n != 0 {
			t.Errorf("gibberish %q has a vector (norm² %.3f)", g, n)
		}
	}
	// A random string next to a real word: the word decides.
	if s := Dot(v["pfffrtz garden"], v["garden"]); s < 0.7 {
		t.Errorf("pfffrtz garden·garden = %.3f", s)
	}
	// The same vector for one text (before the vocabulary map is built)
	// as in bulk.
	one, _ := p.Embed(context.Background(), []string{"synchronisieren"})
	if Dot(one[0], v["synchronisieren"]) < 0.9999 {
		t.Error("one text's vector differs from the bulk one")
	}
	// A word the vault uses is not corrected in a query.
	q, _ := QueryIn(context.Background(), p, "recipies", func(w string) bool { return w == "recipies" })
	if s := Dot(q, v["recipes"]); s > 0.99 {
		t.Errorf("a word the vault has was corrected (%.3f)", s)
	}
	// A query of many unknown words: at most maxQueryCorrections are
	// tried, and the vault is asked only about those with a correction.
	asked := 0
	long := strings.Repeat("recipies xqzvkjw ", 40)
	if _, err := QueryIn(context.Background(), p, long, func(string) bool { asked++; return false }); err != nil {
		t.Fatal(err)
	}
	if asked == 0 || asked > maxQueryCorrections {
		t.Errorf("the vault was asked %d times", asked)
	}
	// Short words are not corrected (too many neighbours).
	if _, ok := tb.correct([]byte("teh")); ok {
		t.Error("a 3-letter word was corrected")
	}
}

// TestParseNgramsRejectsDamage: a cut or altered n-gram section is an
// error, not a crash.
func TestParseNgramsRejectsDamage(t *testing.T) {
	raw := wordsData
	tb, _ := parseTable(raw)
	if tb == nil || tb.grams == nil {
		t.Fatal("no n-grams in the embedded data")
	}
	size := tb.n * tb.dims / 2
	start := len(raw) - len(tb.grams.packed) - 4*tb.grams.n - len(tb.grams.vocab) - 10
	if string(raw[start:start+4]) != "NGRM" || start < size {
		t.Fatalf("section at %d: %q", start, raw[start:start+4])
	}
	for _, cut := range []int{start + 3, start + 9, start + 12, len(raw) - 1} {
		if _, err := parseTable(raw[:cut]); err == nil {
			t.Errorf("cut at %d accepted", cut)
		}
	}
	bad := append([]byte(nil), raw...)
	bad[start+9] = 1 // max n below min n
	if _, err := parseTable(bad); err == nil {
		t.Error("max n < min n accepted")
	}
}

// TestGramsASCIIMatchesRunes: the byte fast path finds the same n-grams as
// the rune path for ASCII words; a word past 64 characters has none.
func TestGramsASCIIMatchesRunes(t *testing.T) {
	tb, _ := loadTable()
	tb.grams.buildIndex()
	for _, w := range []string{"synchronisieren", "markdownlint", "abc", "xqzvkj", strings.Repeat("ab", 32), strings.Repeat("ab", 33)} {
		a, na := tb.gramsASCII([]byte(w), make([]int32, 0, 256))
		r, nr := tb.gramsRunes([]byte(w), make([]int32, 0, 256))
		if na != nr || len(a) != len(r) {
			t.Errorf("%q: ascii %d of %d, runes %d of %d", w, len(a), na, len(r), nr)
			continue
		}
		for i := range a {
			if a[i] != r[i] {
				t.Errorf("%q: n-gram %d differs", w, i)
			}
		}
	}
	if _, n := tb.gramsASCII([]byte(strings.Repeat("ab", 33)), nil); n != 0 {
		t.Errorf("a 66-letter word has %d n-grams", n)
	}
	// Non-ASCII words take the rune path: "münchen" has n-grams with ü.
	if _, n := tb.gramsRunes([]byte("münchen"), make([]int32, 0, 256)); n != 7+6+5 {
		t.Errorf("münchen: %d n-grams", n)
	}
}
