package search_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestAnchorText: a note is found by the words other notes link to it with
// (display text, sentence, heading), and ranks above a note that has the
// words only in passing.
func TestAnchorText(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"Manage vaults.md": "# Manage vaults\n\nCreate, open, rename and move your folders of notes.\n",
		"Ribbon.md":        "# Ribbon\n\nA column of icons.\n",
		"Settings.md":      "# Settings\n\n## Toolbar\n\nOpen the [[Manage vaults|vault switcher]] to pick another one.\n\nThe [[Ribbon]] is a vertical toolbar with customizable actions.\n",
		"Other.md":         "# Other\n\nA switcher for vault themes, mentioned once.\n",
	}
	// Other notes and links, so that the words above are rare (BM25 gives
	// a word in half the rows no weight).
	for i := 0; i < 20; i++ {
		files[fmt.Sprintf("f%02d.md", i)] = fmt.Sprintf("# F%02d\n\nSee [[g%02d]] about filler topics.\n", i, i)
		files[fmt.Sprintf("g%02d.md", i)] = fmt.Sprintf("# G%02d\n\nMore filler.\n", i)
	}
	testutil.WriteFiles(t, root, files)
	ix := indexVault(t, root)
	s := &search.Searcher{DB: ix.DB}
	ctx := context.Background()
	for _, c := range []struct{ q, want, below string }{
		// Display text: "switcher" appears nowhere in the target's own
		// text; Other.md has both words in passing.
		{"vault switcher", "Manage vaults.md", "Other.md"},
		// The link's sentence: the target's text has none of these words.
		{"customizable actions", "Ribbon.md", ""},
	} {
		// Explain takes the fused path (that of hybrid mode).
		for _, explain := range []bool{false, true} {
			mode := fmt.Sprintf("explain=%v", explain)
			r, err := s.Search(ctx, search.Query{Text: c.q, Mode: search.ModeLexical, Explain: explain})
			if err != nil {
				t.Fatal(err)
			}
			at, below := -1, len(r.Results)
			for i, x := range r.Results {
				switch x.Path {
				case c.want:
					at = i
					if x.Matched != "all" {
						t.Errorf("%s %q: matched %q", mode, c.q, x.Matched)
					}
				case c.below:
					below = i
				}
			}
			if at < 0 || at > below {
				t.Errorf("%s %q: %v, want %s (above %q)", mode, c.q, paths(r), c.want, c.below)
			}
		}
	}
	// An exclusion is checked against the note's own text only, so a note
	// found only by its anchor text is left out of such a query.
	r, err := s.Search(ctx, search.Query{Text: "customizable -column", Mode: search.ModeLexical})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range r.Results {
		if x.Path == "Ribbon.md" {
			t.Errorf("excluded note found by anchor text: %v", paths(r))
		}
	}
	// Off, the anchor text finds nothing.
	old := search.AnchorWeight
	search.AnchorWeight = 0
	defer func() { search.AnchorWeight = old }()
	r, err = s.Search(ctx, search.Query{Text: "customizable actions", Mode: search.ModeLexical})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range r.Results {
		if x.Path == "Ribbon.md" {
			t.Errorf("found without anchor text: %v", paths(r))
		}
	}
}
