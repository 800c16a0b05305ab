package search_test

import (
	"context"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestSemanticFindsByLinkSentence: a note's vector embeds what other notes
// say where they link to it, so a query made of words found only in
// another note's link sentence finds the target by meaning.
func TestSemanticFindsByLinkSentence(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for k, v := range hybridVault {
		files[k] = v
	}
	files["Ribbon.md"] = "# Ribbon\n\nIt sits on the left of the window.\n"
	files["Tour.md"] = "# Tour\n\nMeet the app. The [[Ribbon]] is a vertical toolbar with customizable buttons.\n"
	testutil.WriteFiles(t, root, files)
	ix := indexVault(t, root)
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	ctx := context.Background()
	// "vertical toolbar buttons": none of it is in Ribbon.md.
	r, err := s.Search(ctx, search.Query{Text: "vertical toolbar buttons", Mode: search.ModeSemantic, Limit: 3})
	if err != nil || len(r.Results) < 2 {
		t.Fatalf("semantic: %v %v", paths(r), err)
	}
	if p := paths(r); p[0] != "Ribbon.md" && p[1] != "Ribbon.md" {
		t.Errorf("semantic, words of the link sentence: %v", p)
	}
	// The description (frontmatter) counts too.
	testutil.WriteFiles(t, root, map[string]string{"Canvas.md": "---\ndescription: An infinite whiteboard for diagrams\n---\n# Canvas\n\nOpen a new file.\n"})
	if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err = s.Search(ctx, search.Query{Text: "whiteboard diagrams", Mode: search.ModeSemantic, Limit: 1})
	if err != nil || len(r.Results) == 0 || r.Results[0].Path != "Canvas.md" {
		t.Errorf("semantic, words of the description: %v %v", paths(r), err)
	}
}

// TestSemanticFindsMisspelling: a misspelled query word still finds its
// note by meaning, through its character n-grams.
func TestSemanticFindsMisspelling(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, hybridVault)
	ix := indexVault(t, root)
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	ctx := context.Background()
	for q, want := range map[string]string{
		"keybaord shortcts": "Keyboard.md",
		"gardning":          "Gardening.md",
		"recipies":          "Cooking.md",
	} {
		lex, _ := s.Search(ctx, search.Query{Text: q, Mode: search.ModeLexical})
		if len(lex.Results) != 0 {
			t.Fatalf("%q: lexical finds %v; the test needs a word it does not know", q, paths(lex))
		}
		r, err := s.Search(ctx, search.Query{Text: q})
		if err != nil || len(r.Results) == 0 || r.Results[0].Path != want {
			t.Errorf("%q: %v %v (want %s)", q, paths(r), err, want)
		}
	}
}
