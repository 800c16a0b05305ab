package read_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/query"
)

const (
	uuidSpec  = "11111111-0000-4000-8000-000000000001"
	uuidOpen  = "11111111-0000-4000-8000-0000000000aa"
	uuidQuery = "11111111-0000-4000-8000-0000000000bb"
)

// embedFiles is a vault with a Logseq graph nested in it (graph/) and
// Obsidian notes; graph/pages/Secret.md and HR/ are fenced by embedEnv.
func embedFiles() map[string]string {
	return map[string]string{
		"graph/logseq/config.edn": "{:meta/version 1 :preferred-format :markdown}\n",
		"graph/pages/Tasks.md": "- TODO write the spec\n  id:: " + uuidSpec + "\n- DONE ship v1\n- Open work\n  id:: " + uuidOpen + "\n" +
			"\t- {{query (task TODO)}}\n\t  id:: " + uuidQuery + "\n" +
			"- #+BEGIN_QUERY\n  {:query [:find (pull ?b [*]) :where [?b :block/marker \"TODO\"]]}\n  #+END_QUERY\n" +
			"- Broken {{query (and [[x]]}}\n",
		"graph/pages/Secret.md": "- TODO quokka secret task\n",
		"Projects/Alpha.md":     "---\nstatus: active\ntags: [project]\n---\n# Alpha\n\n- [ ] write spec 📅 2026-12-03\n- [x] kickoff\n",
		"Projects/Beta.md":      "---\nstatus: done\ntags: [project]\n---\n# Beta\n\n- [ ] ship it\n",
		"HR/Secret.md":          "---\nstatus: quokka\ntags: [project]\n---\n# Secret\n\n- [ ] quokka task\n",
		"Dashboard.md": "---\ntitle: Dashboard\n---\n# Dashboard\n\n```dataview\nTABLE status FROM #project SORT file.name\n```\n\n" +
			"```dataviewjs\ndv.list([1])\n```\n\n> [!note]\n> ```dataview\n> TASK FROM \"Projects\" WHERE !completed\n> ```\n\n" +
			"`{{query (task TODO)}}` is inline code, not a query.\n\n```dataview\nLIST FROM \"Projects\" WHERE (\n```\n",
	}
}

func embedEnv(t *testing.T) *ops.Env { t.Helper(); return embedEnvWith(t, embedFiles()) }

func embedEnvWith(t *testing.T, files map[string]string) *ops.Env {
	t.Helper()
	env := opstest.FixtureEnv(t, files)
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"HR/**", "graph/pages/Secret.md"}}
	return env
}

// entry renders an embedded query as "line block language query" and
// then either its rows ("path:line block values") or "! code".
func entry(q ops.EmbeddedQuery) string {
	s := fmt.Sprintf("%d %s %s %q", q.Line, q.Block, q.Language, q.Query)
	if q.Error != nil {
		return s + " ! " + q.Error.Code
	}
	s += fmt.Sprintf(" %v:", q.Result.Columns)
	for _, r := range q.Result.Rows {
		s += fmt.Sprintf(" [%s:%d %s %v]", r.Path, r.Line, r.Block, r.Values)
	}
	return s
}

func entries(qs []ops.EmbeddedQuery) []string {
	out := []string{}
	for _, q := range qs {
		out = append(out, entry(q))
	}
	return out
}

func renderNote(t *testing.T, env *ops.Env, path string) *read.ReadNoteOut {
	t.Helper()
	return opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"path": "`+path+`", "render_queries": true}`)
}

// TestReadNoteRendersQueries: the Obsidian note's dataview blocks (one in
// a callout) and the Logseq page's {{query}} answer with hand-computed rows;
// dataviewjs and a malformed query are error entries while the read
// succeeds with the content unchanged; inline code holds no query.
func TestReadNoteRendersQueries(t *testing.T) {
	env := embedEnv(t)
	out := renderNote(t, env, "Dashboard.md")
	if out.Content != embedFiles()["Dashboard.md"] {
		t.Errorf("content changed:\n%s", out.Content)
	}
	want := []string{
		`6  dataview "TABLE status FROM #project SORT file.name" [File status]: [Projects/Alpha.md:0  [[[Alpha]] active]] [Projects/Beta.md:0  [[[Beta]] done]]`,
		`10  dataviewjs "dv.list([1])" ! unsupported_query`,
		`15  dataview "TASK FROM \"Projects\" WHERE !completed" [Task Status Due]: [Projects/Alpha.md:7  [write spec 📅 2026-12-03 todo 2026-12-03]] [Projects/Beta.md:7  [ship it todo <nil>]]`,
		`21  dataview "LIST FROM \"Projects\" WHERE (" ! validation_failed`,
	}
	if got := entries(out.Queries); !slices.Equal(got, want) {
		t.Errorf("Dashboard queries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if q := out.Queries[1]; q.Error.Details["construct"] != "dataviewjs" {
		t.Errorf("dataviewjs error = %+v", q.Error)
	}
	if q := out.Queries[3]; q.Error.Details["offset"] == nil || q.Error.Message == "" {
		t.Errorf("malformed query error = %+v", q.Error)
	}

	out = renderNote(t, env, "graph/pages/Tasks.md")
	got := entries(out.Queries)
	want = []string{
		`6 ` + uuidQuery + ` logseq-simple "(task TODO)" [page content]: [graph/pages/Tasks.md:1 ` + uuidSpec + ` [Tasks TODO write the spec]]`,
		`8  logseq-advanced "{:query [:find (pull ?b [*]) :where [?b :block/marker \"TODO\"]]}"`,
		`11  logseq-simple "(and [[x]]" ! validation_failed`,
	}
	if len(got) != 3 || got[0] != want[0] || !strings.HasPrefix(got[1], want[1]) || got[2] != want[2] {
		t.Errorf("Tasks queries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The advanced query answers once an evaluator is registered (the
	// visible TODO block only), and is unsupported_query until then.
	if adv := out.Queries[1]; slices.Contains(query.Languages(), query.LogseqAdvanced) {
		if adv.Error != nil || len(adv.Result.Rows) != 1 || adv.Result.Rows[0].Path != "graph/pages/Tasks.md" || adv.Result.Rows[0].Line != 1 {
			t.Errorf("advanced query = %s", entry(adv))
		}
	} else if adv.Error == nil || adv.Error.Code != errs.CodeUnsupportedQuery {
		t.Errorf("advanced query = %s", entry(adv))
	}

	// Without render_queries nothing runs; a line range keeps the queries
	// that start in it.
	plain := opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"path": "Dashboard.md"}`)
	if plain.Queries != nil || strings.Contains(opstest.JS(plain), `"queries"`) {
		t.Errorf("queries without render_queries: %s", opstest.JS(plain))
	}
	part := opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"path": "Dashboard.md", "start_line": 7, "end_line": 15, "render_queries": true}`)
	if got := opstest.Paths(part.Queries, func(q ops.EmbeddedQuery) string { return fmt.Sprint(q.Line) }); !slices.Equal(got, []string{"10", "15"}) {
		t.Errorf("queries of lines 7-15 start at %v", got)
	}
	none := opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"path": "Dashboard.md", "heading": "Dashboard", "end_line": 5, "render_queries": true}`)
	if none.Queries != nil {
		t.Errorf("queries of lines 4-5: %v", entries(none.Queries))
	}
}

// TestRenderedQueriesObeyReadFences: what a fenced note holds never shows
// in a rendered result, for the vault's fence and for a principal narrowed
// further; without the fence the same queries do show it (so the check can
// fail).
func TestRenderedQueriesObeyReadFences(t *testing.T) {
	open := opstest.FixtureEnv(t, embedFiles())
	js := opstest.JS(renderNote(t, open, "Dashboard.md").Queries) + opstest.JS(renderNote(t, open, "graph/pages/Tasks.md").Queries)
	for _, w := range []string{"HR/Secret.md", "quokka", "graph/pages/Secret.md"} {
		if !strings.Contains(js, w) {
			t.Errorf("unfenced answers lack %q: %s", w, js)
		}
	}

	env := embedEnv(t)
	for _, p := range []string{"Dashboard.md", "graph/pages/Tasks.md"} {
		js, e := callAs(t, env, nil, "read_note", `{"path": "`+p+`", "render_queries": true}`)
		if e != nil {
			t.Fatal(e)
		}
		noLeak(t, p, js, "HR/", "quokka", "Secret")
	}
	// A principal that may read the dashboard and Alpha only.
	p := &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead}, ReadPaths: []string{"Dashboard.md", "Projects/Alpha.md"}, Via: auth.ViaToken}
	js, e := callAs(t, env, p, "read_note", `{"path": "Dashboard.md", "render_queries": true}`)
	if e != nil {
		t.Fatal(e)
	}
	noLeak(t, "narrowed", js, "Beta", "HR/", "quokka")
	if !strings.Contains(js, "Projects/Alpha.md") {
		t.Errorf("narrowed answer lacks Alpha: %s", js)
	}
}

// TestEmbeddedQueryBudget: a note renders at most ops.EmbeddedQueryMax
// queries; the rest are query_skipped entries and the read succeeds. An
// empty macro is validation_failed and does not count against the budget.
func TestEmbeddedQueryBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("- {{query }}\n")
	for i := 1; i <= ops.EmbeddedQueryMax+2; i++ {
		fmt.Fprintf(&b, "- q%d {{query (task TODO)}}\n", i)
	}
	files := embedFiles()
	files["graph/pages/Many.md"] = b.String()
	env := embedEnvWith(t, files)
	out := renderNote(t, env, "graph/pages/Many.md")
	if len(out.Queries) != ops.EmbeddedQueryMax+3 {
		t.Fatalf("%d entries", len(out.Queries))
	}
	if e := out.Queries[0].Error; e == nil || e.Code != errs.CodeInvalidInput {
		t.Errorf("empty macro = %s", entry(out.Queries[0]))
	}
	for i, q := range out.Queries[1:] {
		switch {
		case i < ops.EmbeddedQueryMax:
			// The one visible TODO block (Secret.md is fenced).
			if q.Error != nil || len(q.Result.Rows) != 1 || q.Result.Rows[0].Path != "graph/pages/Tasks.md" || q.Line != i+2 {
				t.Fatalf("query %d = %s", i+1, entry(q))
			}
		default:
			if q.Error == nil || q.Error.Code != ops.CodeQuerySkipped || q.Result != nil || q.Error.Details["max_queries"] != ops.EmbeddedQueryMax {
				t.Errorf("query %d = %s %+v", i+1, entry(q), q.Error)
			}
		}
	}
}
