package read_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
)

// listTasksRef is list_tasks as it was when its status, page and path
// filters ran in Go over every task: the reference the SQL filters must
// match.
func listTasksRef(all []index.TaskRow, status, glob, page string, off, limit int) ([]index.TaskRow, int, string) {
	match := func(t index.TaskRow) bool {
		switch strings.ToLower(status) {
		case "", "open":
			return t.Status != "done" && t.Status != "cancelled"
		case "all":
			return true
		case "done", "todo", "in_progress", "waiting", "cancelled":
			return t.Status == strings.ToLower(status)
		}
		return t.Marker == status || (len([]rune(status)) == 1 && strings.EqualFold(t.Marker, status))
	}
	page = strings.ToLower(strings.TrimSpace(page))
	kept := []index.TaskRow{}
	for _, t := range all {
		if !match(t) || !ops.GlobMatch(glob, t.Path) {
			continue
		}
		if page != "" && strings.ToLower(t.Title) != page && strings.ToLower(strings.TrimSuffix(t.Path, ".md")) != page {
			continue
		}
		kept = append(kept, t)
	}
	rows, next := ops.Page(kept, off, limit)
	return rows, len(kept), next
}

// TestListTasksSQLFiltersMatchGo: for every combination of status (names,
// markers, one character in another case, a Kelvin sign K that folds to
// k), path glob (exact prefixes, other globs), page (titles with
// non-ASCII case, paths with .md and .MD) and page window, list_tasks
// answers what the Go filters over all tasks answered, with and without
// a read fence.
func TestListTasksSQLFiltersMatchGo(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"Projects/Ärger.md":       "# Ärger\n\n- [ ] a 📅 2026-11-22\n- [x] b\n- [X] c\n- [/] d\n- [-] e\n- [K] big K\n- [k] small k\n- [\u212a] kelvin\n- [?] q\n",
		"Projects/sub/Deep.md":    "- [ ] deep 📅 2026-11-21\n- [x] done deep\n",
		"Projects2/Other.md":      "- [ ] other\n",
		"Notes/Shout.MD":          "# Shout\n\n- [ ] loud\n- [x] louder\n",
		"HR/pay.md":               "- [ ] raise\n",
		"graph/logseq/config.edn": "{:meta/version 1}\n",
		"graph/pages/Garden.md":   "- TODO plant\n- DOING water\n- DONE mulch\n- LATER prune\n- CANCELED old\n- todo lower\n",
	})
	all := opstest.Call[read.ListTasksOut](t, env, "list_tasks", `{"status": "all", "limit": 1000}`)
	if all.Total != 20 {
		t.Fatalf("%d tasks in the fixture: %+v", all.Total, all.Tasks)
	}
	statuses := []string{"", "open", "OPEN", "all", "done", "Done", "todo", "in_progress", "waiting", "cancelled", "x", "X", "k", "K", "\u212a", "/", "-", "?", "TODO", "todo", "DOING", "CANCELED", "nope"}
	globs := []string{"", "**", "Projects/**", "Projects/*", "Projects*/**", "graph/**", "Notes/Shout.MD", "*.MD", "Nope/**"}
	pages := []string{"", "ärger", "ÄRGER", "projects/ärger", "notes/shout.md", "notes/shout", "Shout", " garden ", "graph/pages/garden", "nope"}
	windows := [][2]int{{0, 100}, {0, 2}, {2, 2}, {1, 1000}, {50, 10}}
	for _, fenced := range []bool{false, true} {
		env.Vaults[0].Read = ops.ReadRules{}
		src := all.Tasks
		if fenced {
			env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"HR/**"}}
			src = ops.Visible(ops.FenceFor(t.Context(), env.Vaults[0]), src, func(r index.TaskRow) string { return r.Path })
		}
		n := 0
		for _, st := range statuses {
			for _, g := range globs {
				for _, pg := range pages {
					for _, w := range windows {
						if (g != "" && pg != "") || (w != [2]int{0, 100} && (g != "" || pg != "")) {
							continue // keep the product small: globs, pages and windows one at a time
						}
						in := map[string]any{"status": st, "path_glob": g, "page": pg, "limit": w[1]}
						if w[0] > 0 {
							in["cursor"] = ops.EncodeCursor(w[0])
						}
						got := opstest.Call[read.ListTasksOut](t, env, "list_tasks", opstest.JS(in))
						rows, total, next := listTasksRef(src, st, g, pg, w[0], w[1])
						key := func(rs []index.TaskRow) string {
							return fmt.Sprint(opstest.Paths(rs, func(r index.TaskRow) string { return fmt.Sprintf("%s:%d", r.Path, r.Line) }))
						}
						if key(got.Tasks) != key(rows) || got.Total != total || got.NextCursor != next {
							t.Errorf("fenced=%v %s:\n got %s total %d next %q\nwant %s total %d next %q", fenced, opstest.JS(in),
								key(got.Tasks), got.Total, got.NextCursor, key(rows), total, next)
						}
						n++
					}
				}
			}
		}
		if n < 300 {
			t.Fatalf("only %d cases", n)
		}
	}
	// The reference is not vacuous: these answers are worked out by hand.
	for in, want := range map[string][]string{
		`{"status": "k"}`:                          {"Projects/Ärger.md:8", "Projects/Ärger.md:9", "Projects/Ärger.md:10"},
		"{\"status\": \"\u212a\"}":                 {"Projects/Ärger.md:8", "Projects/Ärger.md:9", "Projects/Ärger.md:10"},
		`{"status": "X"}`:                          {"Notes/Shout.MD:4", "Projects/sub/Deep.md:2", "Projects/Ärger.md:4", "Projects/Ärger.md:5"},
		`{"page": "notes/shout.md"}`:               {"Notes/Shout.MD:3"},
		`{"page": "ÄRGER", "status": "done"}`:      {"Projects/Ärger.md:4", "Projects/Ärger.md:5"},
		`{"path_glob": "Projects/**", "limit": 2}`: {"Projects/sub/Deep.md:1", "Projects/Ärger.md:3"},
	} {
		got := opstest.Call[read.ListTasksOut](t, env, "list_tasks", in)
		if keys := opstest.Paths(got.Tasks, func(r index.TaskRow) string { return fmt.Sprintf("%s:%d", r.Path, r.Line) }); !slices.Equal(keys, want) {
			t.Errorf("%s = %v, want %v", in, keys, want)
		}
	}
}

// TestListTasksNestedTags: a tag takes the notes tagged with it or with a
// tag nested under it, in any script (a prefix compared by characters
// once missed 知识/子 for 知识), and never a tag that merely starts alike.
func TestListTasksNestedTags(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"a.md": "#知识/子 x\n\n- [ ] one\n", "b.md": "#proj/x\n\n- [ ] two\n", "c.md": "#project #知识子\n\n- [ ] three\n", "d.md": "#知识\n\n- [ ] four\n",
	})
	for tag, want := range map[string]string{"知识": "[a.md d.md]", "#Proj": "[b.md]", "proj/x": "[b.md]", "project": "[c.md]", "知识/子": "[a.md]", "pro": "[]"} {
		out := opstest.Call[read.ListTasksOut](t, env, "list_tasks", opstest.JS(map[string]string{"tag": tag}))
		if got := fmt.Sprint(opstest.Paths(out.Tasks, func(r index.TaskRow) string { return r.Path })); got != want {
			t.Errorf("tag %s: %s, want %s", tag, got, want)
		}
	}
}
