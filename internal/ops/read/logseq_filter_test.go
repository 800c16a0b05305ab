package read_test

import (
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
)

// TestLogseqPropertyFilter: a Logseq page property written as a page link
// or tag (type:: [[Feature]]) matches a frontmatter filter asking for
// Feature, [[Feature]] or #Feature, in a search and in a listing; plain
// values still match whole only.
func TestLogseqPropertyFilter(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"logseq/config.edn":        "{:meta/version 1}\n",
		"pages/Login.md":           "type:: [[Feature]]\nstatus:: open\n\n- login screen widget\n",
		"pages/Export.md":          "type:: [[Bug]], [[feature]]\n\n- export widget\n",
		"pages/Search.md":          "type:: #Feature\n\n- search widget\n",
		"pages/Sync.md":            "type:: #[[Feature]]\n\n- sync widget\n",
		"pages/Featureless.md":     "type:: [[Feature request]]\n\n- a widget that is not one\n",
		"pages/Plain.md":           "type:: Feature, Bug\n\n- plain list widget\n",
		"pages/Word.md":            "type:: Feature\n\n- plain widget\n",
		"pages/Other.md":           "kind:: [[Feature]]\n\n- other key widget\n",
		"journals/2026_11_20.md":   "- a journal widget\n",
		"pages/NotAProperty.md":    "- mentions [[Feature]] in a block widget\n",
		"pages/Feature.md":         "- the Feature page itself\n",
		"pages/BugOnly.md":         "type:: [[Bug]]\n\n- bug widget\n",
		"pages/Hashtag in text.md": "type:: C#\n\n- hash widget\n",
	})
	want := []string{"pages/Export.md", "pages/Login.md", "pages/Search.md", "pages/Sync.md", "pages/Word.md"}
	for _, v := range []string{"Feature", "[[Feature]]", "#Feature", "feature", " #[[Feature]] "} {
		fm := opstest.JS(map[string]any{"frontmatter": map[string]string{"type": v}, "sort": "path"})
		out := opstest.Call[read.SearchNotesOut](t, env, "search_notes", fm)
		if got := listPaths(out); !slices.Equal(got, want) {
			t.Errorf("list type=%q: %v, want %v", v, got, want)
		}
		q := opstest.JS(map[string]any{"query": "widget", "mode": "lexical", "frontmatter": map[string]string{"type": v}, "limit": 50})
		out = opstest.Call[read.SearchNotesOut](t, env, "search_notes", q)
		got := listPaths(out)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("search type=%q: %v, want %v", v, got, want)
		}
	}
	// A plain list is one value; a plain value matches whole.
	for _, c := range []struct {
		v    string
		want []string
	}{
		{"Feature, Bug", []string{"pages/Plain.md"}},
		{"Bug", []string{"pages/BugOnly.md", "pages/Export.md"}},
		{"Feature request", []string{"pages/Featureless.md"}},
		{"C#", []string{"pages/Hashtag in text.md"}},
		{"C", []string{}},
	} {
		out := opstest.Call[read.SearchNotesOut](t, env, "search_notes", opstest.JS(map[string]any{"frontmatter": map[string]string{"type": c.v}, "sort": "path"}))
		if got := listPaths(out); !slices.Equal(got, c.want) {
			t.Errorf("type=%q: %v, want %v", c.v, got, c.want)
		}
	}
}
