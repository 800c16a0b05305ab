package markdown

import (
	"slices"
	"testing"
)

func TestMatchHeadingsAndSections(t *testing.T) {
	doc := Parse([]byte("# A\n\n## Goals\none\n### Detail\ntwo\n## Other\n# B\n## Goals\nthree\n"), Options{Path: "n.md"})
	if got := doc.HeadingTexts(); !slices.Equal(got, []string{"A", "Goals", "Detail", "Other", "B", "Goals"}) {
		t.Fatalf("headings %v", got)
	}
	for _, c := range []struct {
		want string
		hits []int
	}{
		{"goals", []int{1, 5}},
		{"A > Goals", []int{1}},
		{"## b >  goals", []int{5}},
		{"Goals > Detail", []int{2}},
		{"A > Detail", nil},
		{"Missing", nil},
	} {
		if got := doc.MatchHeadings(c.want); !slices.Equal(got, c.hits) {
			t.Errorf("MatchHeadings(%q) = %v, want %v", c.want, got, c.hits)
		}
	}
	for i, want := range []int{7, 6, 6, 7, 10, 10} {
		if got := doc.SectionEnd(i, 10); got != want {
			t.Errorf("SectionEnd(%d) = %d, want %d", i, got, want)
		}
	}
	if (&Doc{}).HeadingTexts() != nil {
		t.Error("no headings: nil")
	}
}
