package read_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/search"
)

// listFiles: four project notes with dates and titles in different orders,
// one without created, and a note outside the folder.
func listFiles() map[string]string {
	return map[string]string{
		"Projects/alpha.md": "---\ntitle: Zulu plan\ncreated: 2024-03-01\nupdated: 2024-06-01\nstatus: active\ntags: [proj]\n---\n# Alpha\n\nFirst section text.\n\n## Later\n\nmore\n",
		"Projects/beta.md":  "---\ntitle: Alpha plan\ncreated: 2024-01-15\nupdated: 2024-09-10\nstatus: done\ntags: [proj]\n---\nbeta body\n",
		"Projects/gamma.md": "---\ntitle: Mike plan\ncreated: 2024-02-20\nupdated: 2024-02-21\nstatus: active\ntags: [proj/sub]\n---\ngamma body\n",
		"Projects/delta.md": "---\ntitle: Echo plan\nupdated: 2023-12-31\nstatus: active\n---\n",
		"Other/x.md":        "---\nstatus: active\ncreated: 2025-01-01\n---\nelsewhere\n",
	}
}

func listPaths(out *read.SearchNotesOut) []string {
	return opstest.Paths(out.Results, func(r search.Result) string { return r.Path })
}

// TestSearchListsWithoutWords: an empty query with a filter lists the
// notes that pass it, ordered by sort and order, paged by cursor.
func TestSearchListsWithoutWords(t *testing.T) {
	env := opstest.FixtureEnv(t, listFiles())
	for _, c := range []struct {
		in   string
		want []string
	}{
		// Default: updated, newest first.
		{`{"path_glob": "Projects/**"}`, []string{"Projects/beta.md", "Projects/alpha.md", "Projects/gamma.md", "Projects/delta.md"}},
		{`{"path_glob": "Projects/**", "order": "asc"}`, []string{"Projects/delta.md", "Projects/gamma.md", "Projects/alpha.md", "Projects/beta.md"}},
		// created: the note without one comes last in both orders.
		{`{"query": "  ", "path_glob": "Projects/**", "sort": "created"}`, []string{"Projects/alpha.md", "Projects/gamma.md", "Projects/beta.md", "Projects/delta.md"}},
		{`{"path_glob": "Projects/**", "sort": "created", "order": "asc"}`, []string{"Projects/beta.md", "Projects/gamma.md", "Projects/alpha.md", "Projects/delta.md"}},
		// title: by the note's title, not its file name.
		{`{"path_glob": "Projects/**", "sort": "title"}`, []string{"Projects/beta.md", "Projects/delta.md", "Projects/gamma.md", "Projects/alpha.md"}},
		{`{"path_glob": "Projects/**", "sort": "path", "order": "desc"}`, []string{"Projects/gamma.md", "Projects/delta.md", "Projects/beta.md", "Projects/alpha.md"}},
		// Tags (nested ones too), frontmatter and dates are filters as well.
		{`{"tags": ["proj"], "sort": "path"}`, []string{"Projects/alpha.md", "Projects/beta.md", "Projects/gamma.md"}},
		{`{"frontmatter": {"status": "active"}, "sort": "path"}`, []string{"Other/x.md", "Projects/alpha.md", "Projects/delta.md", "Projects/gamma.md"}},
		{`{"created_from": "2024-02-01", "sort": "path"}`, []string{"Other/x.md", "Projects/alpha.md", "Projects/gamma.md"}},
		{`{"frontmatter": {"status": "none"}}`, []string{}},
	} {
		out := opstest.Call[read.SearchNotesOut](t, env, "search_notes", c.in)
		if got := listPaths(out); !slices.Equal(got, c.want) || out.Mode != search.ModeList || out.NextCursor != "" {
			t.Errorf("%s: %v (mode %s, cursor %q), want %v", c.in, got, out.Mode, out.NextCursor, c.want)
		}
	}
	// The result shape: score 0, matched filter, the first section.
	out := opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"path_glob": "Projects/alpha.md"}`)
	if len(out.Results) != 1 {
		t.Fatalf("alpha = %+v", out)
	}
	if r := out.Results[0]; r.Score != 0 || r.Matched != search.MatchedFilter || r.Title != "Zulu plan" || r.Line != 8 ||
		!slices.Equal(r.HeadingPath, []string{"Alpha"}) || r.Snippet == "" {
		t.Errorf("alpha result = %+v", r)
	}
	// An empty note is listed too.
	out = opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"path_glob": "Projects/delta.md"}`)
	if len(out.Results) != 1 || out.Results[0].Title != "Echo plan" {
		t.Errorf("empty note = %+v", out)
	}
	// Paging: three pages of two, one and none, in the same order.
	var got []string
	cursor := ""
	for page := 0; page < 5; page++ {
		in := `{"path_glob": "**", "sort": "path", "limit": 2`
		if cursor != "" {
			in += `, "cursor": "` + cursor + `"`
		}
		out := opstest.Call[read.SearchNotesOut](t, env, "search_notes", in+"}")
		got = append(got, listPaths(out)...)
		if cursor = out.NextCursor; cursor == "" {
			break
		}
	}
	if want := []string{"Other/x.md", "Projects/alpha.md", "Projects/beta.md", "Projects/delta.md", "Projects/gamma.md"}; !slices.Equal(got, want) {
		t.Errorf("paged = %v, want %v", got, want)
	}
	// No words and no filter is still refused; so are unknown sorts.
	for _, in := range []string{`{}`, `{"query": "   "}`, `{"tags": [" ", "#"]}`, `{"path_glob": "**", "sort": "size"}`, `{"path_glob": "**", "order": "up"}`,
		`{"path_glob": "**", "created_from": "yesterday"}`} {
		opstest.WantCode(t, env, "search_notes", in, errs.CodeInvalidInput)
	}
}

// TestSearchListingHonoursTheFence: a fenced note never appears in a
// listing, and never takes a place on a page.
func TestSearchListingHonoursTheFence(t *testing.T) {
	env := fencedEnv(t)
	all := []string{"Public/hub.md", "Public/p1.md", "Public/p2.md", "Public/p3.md", "Public/p4.md", "Public/p5.md", "Public/p6.md", "Public/p7.md"}
	for _, who := range []struct {
		name string
		want []string
	}{{"owner", append([]string{"Private/Diary.md"}, all...)}, {"narrowed", all}} {
		p := narrowed
		if who.name == "owner" {
			p = nil
		}
		var got []string
		cursor := ""
		for page := 0; page < 10; page++ {
			in := `{"path_glob": "**", "sort": "path", "limit": 3`
			if cursor != "" {
				in += `, "cursor": "` + cursor + `"`
			}
			js, e := callAs(t, env, p, "search_notes", in+"}")
			if e != nil {
				t.Fatal(js)
			}
			out := decode[read.SearchNotesOut](t, js)
			if page < 2 && len(out.Results) != 3 {
				t.Errorf("%s page %d has %d results", who.name, page, len(out.Results))
			}
			got = append(got, listPaths(out)...)
			if cursor = out.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(got, who.want) {
			t.Errorf("%s lists %v, want %v", who.name, got, who.want)
		}
		// A filter that only fenced notes pass lists nothing.
		js, _ := callAs(t, env, p, "search_notes", `{"frontmatter": {"salary_band": "*"}}`)
		if out := decode[read.SearchNotesOut](t, js); len(out.Results) != 0 {
			t.Errorf("%s: salary_band lists %v", who.name, listPaths(out))
		}
	}
}

func decode[T any](t *testing.T, js string) *T {
	t.Helper()
	var out T
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	return &out
}
