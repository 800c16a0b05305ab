package search

import "testing"

// TestLightStem: inflected forms of a word meet at one stem, short words
// are left alone, and different words stay apart.
func TestLightStem(t *testing.T) {
	meet := [][]string{
		{"embed", "embedding", "embeddings", "embedded", "embeds"},
		{"class", "classes"},
		{"note", "notes"},
		{"file", "files"},
		{"image", "images"},
		{"story", "stories"},
		{"cache", "caches", "cached"},
		{"tool", "tools"},
		{"use", "uses"},
		{"run", "running"},
		{"link", "links", "linked", "linking"},
	}
	for _, group := range meet {
		want := lightStem(group[0])
		for _, w := range group[1:] {
			if got := lightStem(w); got != want {
				t.Errorf("lightStem(%q) = %q, lightStem(%q) = %q: want them equal", w, got, group[0], want)
			}
		}
	}
	for w, want := range map[string]string{
		"is": "is", "bus": "bus", "red": "red", "see": "see", "need": "need", // too short to strip
		"embed": "embed", "class": "class", "glass": "glass",
		"embedding": "embed", "stories": "story", "running": "run",
		"tools": "tool", "all": "all", "tall": "tall", // a double l is kept
		"": "",
	} {
		if got := lightStem(w); got != want {
			t.Errorf("lightStem(%q) = %q, want %q", w, got, want)
		}
	}
	for _, pair := range [][2]string{{"bed", "bad"}, {"note", "nodes"}, {"vault", "vaults2"}} {
		if lightStem(pair[0]) == lightStem(pair[1]) {
			t.Errorf("%q and %q meet at %q", pair[0], pair[1], lightStem(pair[0]))
		}
	}
	// covers uses it where the prefix rule misses a shorter title word.
	if !covers([]string{"image"}, "images") || !covers([]string{"story"}, "stories") || covers([]string{"story"}, "history") {
		t.Error("covers does not use the stem as expected")
	}
}
