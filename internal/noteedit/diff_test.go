package noteedit

import (
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	if d := UnifiedDiff("a.md", "a.md", "x\n", "x\n", false); d != "" {
		t.Errorf("equal: %q", d)
	}
	got := UnifiedDiff("a.md", "a.md", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\n2\n3\nfour\n5\n6\n7\n8\n9\n10\neleven\n", false)
	want := "--- a/a.md\n+++ b/a.md\n@@ -1,10 +1,11 @@\n 1\n 2\n 3\n-4\n+four\n 5\n 6\n 7\n 8\n 9\n 10\n+eleven\n"
	if got != want {
		t.Errorf("diff:\n%s\nwant\n%s", got, want)
	}
	got = UnifiedDiff("a.md", "a.md", "a\nb", "a\nb\n", false)
	if want := "--- a/a.md\n+++ b/a.md\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"; got != want {
		t.Errorf("final newline:\n%s\nwant\n%s", got, want)
	}
	got = UnifiedDiff("a.md", "a.md", "", "x\n", true)
	if want := "--- /dev/null\n+++ b/a.md\n@@ -0,0 +1 @@\n+x\n"; got != want {
		t.Errorf("create:\n%q\nwant\n%q", got, want)
	}
	// Property: applying the ops to a reproduces b, for many pairs.
	seed := uint32(7)
	rnd := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 17
		seed ^= seed << 5
		return int(seed % uint32(n))
	}
	for k := 0; k < 510; k++ {
		size := 30
		if k >= 500 {
			size = 3000 // beyond the edit bound: the middle becomes one block
		}
		var a, b []string
		for i := rnd(size); i > 0; i-- {
			a = append(a, string(rune('a'+rnd(4))))
		}
		for i := rnd(size); i > 0; i-- {
			b = append(b, string(rune('a'+rnd(4))))
		}
		var ra, rb []string
		for _, op := range DiffLines(a, b) {
			switch op.Kind {
			case ' ':
				ra, rb = append(ra, a[op.A]), append(rb, b[op.B])
			case '-':
				ra = append(ra, a[op.A])
			case '+':
				rb = append(rb, b[op.B])
			}
		}
		if !slices.Equal(ra, a) || !slices.Equal(rb, b) {
			t.Fatalf("diff of %v and %v does not reproduce them", a, b)
		}
	}
}
