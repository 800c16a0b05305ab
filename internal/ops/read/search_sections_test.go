package read_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/search"
)

const blockUUID = "6745a1b2-0000-4000-8000-0000000000aa"

func sectionFiles() map[string]string {
	return map[string]string{
		"Guide.md": "# Guide\n\nintro without the word\n\n## Install\n\nthe gadget installs with one command; gadget setup\n\n## Configure\n\nconfigure the gadget in its file\n\n## Other\n\nnothing here\n",
		"Notes.md": "# Notes\n\nthe gadget broke once\n",
		// A Logseq graph: a block with an id:: and one without.
		"graph/logseq/config.edn": "{:meta/version 1}\n",
		"graph/pages/Gadgets.md":  "- gadget block with an id, long enough to be a section of its own " + "\n  id:: " + blockUUID + "\n- # Heading block\n\t- another gadget block under a heading\n",
	}
}

func sectionKey(r search.Result) string { return fmt.Sprintf("%s:%d-%d", r.Path, r.Line, r.EndLine) }

// TestSearchGroupBySection: with group_by section each result is a
// section with its heading path and line span; several of one note may
// appear; pages follow one another without repeats; Logseq sections carry
// the uuid of the block they start with.
func TestSearchGroupBySection(t *testing.T) {
	env := opstest.FixtureEnv(t, sectionFiles())
	for _, mode := range []string{"lexical", "hybrid", "semantic"} {
		in := `{"query": "gadget", "mode": "` + mode + `", "group_by": "section", "limit": 50}`
		out := opstest.Call[read.SearchNotesOut](t, env, "search_notes", in)
		var guide [][]string
		seen := map[string]bool{}
		for _, r := range out.Results {
			k := sectionKey(r)
			if seen[k] {
				t.Errorf("%s: section %s twice", mode, k)
			}
			seen[k] = true
			if r.Line <= 0 || r.EndLine < r.Line {
				t.Errorf("%s: span of %+v", mode, r)
			}
			if r.Path == "Guide.md" {
				guide = append(guide, r.HeadingPath)
			}
		}
		if mode == "semantic" {
			// By meaning too, several sections of one note.
			if len(guide) < 2 {
				t.Errorf("semantic sections = %v", out.Results)
			}
			continue
		}
		// Lexical: exactly the five sections that say gadget; hybrid adds
		// sections close in meaning, below them.
		slices.SortFunc(guide, slices.Compare)
		if want := [][]string{{"Guide", "Configure"}, {"Guide", "Install"}}; mode == "lexical" && !slices.EqualFunc(guide, want, slices.Equal) ||
			!slices.ContainsFunc(guide, func(h []string) bool { return slices.Equal(h, want[0]) }) ||
			!slices.ContainsFunc(guide, func(h []string) bool { return slices.Equal(h, want[1]) }) {
			t.Errorf("%s: Guide sections = %v, want %v", mode, guide, want)
		}
		if mode == "lexical" && len(out.Results) != 5 || len(out.Results) < 5 || out.NextCursor != "" {
			t.Errorf("%s: %d sections, cursor %q", mode, len(out.Results), out.NextCursor)
		}
		// Paging by two gives the same sections in the same order.
		var paged []string
		cursor := ""
		for page := 0; page < 10; page++ {
			in := `{"query": "gadget", "mode": "` + mode + `", "group_by": "section", "limit": 2`
			if cursor != "" {
				in += `, "cursor": "` + cursor + `"`
			}
			p := opstest.Call[read.SearchNotesOut](t, env, "search_notes", in+"}")
			paged = append(paged, opstest.Paths(p.Results, sectionKey)...)
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		if all := opstest.Paths(out.Results, sectionKey); !slices.Equal(paged, all) {
			t.Errorf("%s: paged %v, want %v", mode, paged, all)
		}
		// By note (the default), one result per note.
		byNote := opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"query": "gadget", "mode": "`+mode+`", "limit": 50}`)
		if got := listPaths(byNote); len(got) != 3 || slices.Contains(opstest.Paths(byNote.Results, func(r search.Result) string { return r.BlockUUID }), blockUUID) {
			t.Errorf("%s by note = %v", mode, byNote.Results)
		}
	}
	// The Logseq block with an id:: carries it; the other block does not.
	out := opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"query": "gadget block", "mode": "lexical", "group_by": "section", "path_glob": "graph/**"}`)
	uuids := map[int]string{}
	for _, r := range out.Results {
		uuids[r.Line] = r.BlockUUID
	}
	if len(out.Results) != 2 || uuids[1] != blockUUID || uuids[3] != "" {
		t.Errorf("logseq sections = %+v", out.Results)
	}
	for _, in := range []string{`{"query": "gadget", "group_by": "block"}`, `{"query": "gadget", "group_by": "section", "expand_links": true}`} {
		opstest.WantCode(t, env, "search_notes", in, errs.CodeInvalidInput)
	}
}
