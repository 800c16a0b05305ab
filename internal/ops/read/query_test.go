package read_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/testutil"
)

// queryEnv is a small vault whose answers are worked out by hand below;
// HR/ is fenced (deny_read_paths), so nothing of HR/Secret.md may show.
func queryEnv(t *testing.T) *ops.Env {
	t.Helper()
	env := opstest.FixtureEnv(t, map[string]string{
		"Projects/Alpha.md": "---\nstatus: active\npriority: 2\ndue: 2026-12-01\ntags: [project, project/alpha]\n---\n# Alpha\n\n" +
			"Depends on [[Beta]], led by [[People/Ann]].\n\n- [ ] write spec 📅 2026-12-03\n- [x] kickoff\n",
		"Projects/Beta.md":        "---\nstatus: done\npriority: 1\nowner: ann\ntags: [project]\n---\n# Beta\n\nPart of [[Alpha]].\n\n- [ ] ship it\n",
		"Projects/Archive/Old.md": "---\nstatus: archived\npriority: 5\n---\n# Old\n\nOld work #project/old\n",
		"People/Ann.md":           "---\naliases: [Annie]\n---\n# Ann\n\nWorks on [[Alpha]]. #person\n",
		"Inbox.md":                "# Inbox\n\n- [ ] call Ann\n\nSee [[Missing]].\n",
		"HR/Secret.md":            "---\nstatus: active\npriority: 9\ntags: [project]\n---\n# Secret\n\nAbout [[Alpha]].\n\n- [ ] secret task\n",
	})
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"HR/**"}}
	return env
}

func runQuery(t *testing.T, env *ops.Env, q string, extra ...string) *read.QueryOut {
	t.Helper()
	in := map[string]any{"query": q}
	for i := 0; i+1 < len(extra); i += 2 {
		in[extra[i]] = extra[i+1]
	}
	return opstest.Call[read.QueryOut](t, env, "query", opstest.JS(in))
}

func rowPaths(o *read.QueryOut) []string {
	out := []string{}
	for _, r := range o.Rows {
		out = append(out, r.Path)
	}
	return out
}

func TestQueryDataviewSources(t *testing.T) {
	env := queryEnv(t)
	for _, c := range []struct {
		q    string
		want []string
	}{
		{`LIST FROM #project`, []string{"Projects/Alpha.md", "Projects/Archive/Old.md", "Projects/Beta.md"}},
		{`LIST FROM #Project/Alpha`, []string{"Projects/Alpha.md"}},
		{`LIST FROM "Projects" AND -#project/old`, []string{"Projects/Alpha.md", "Projects/Beta.md"}},
		{`LIST FROM "Projects/Archive" or #person`, []string{"People/Ann.md", "Projects/Archive/Old.md"}},
		{`LIST FROM [[Alpha]]`, []string{"People/Ann.md", "Projects/Beta.md"}},
		{`LIST FROM outgoing([[Alpha]])`, []string{"People/Ann.md", "Projects/Beta.md"}},
		{`LIST FROM [[Secret]]`, []string{}},
		{`LIST FROM -("Projects" or "People")`, []string{"Inbox.md"}},
		{`list from "projects"`, []string{}}, // folders match as written
		{`LIST`, []string{"Inbox.md", "People/Ann.md", "Projects/Alpha.md", "Projects/Archive/Old.md", "Projects/Beta.md"}},
	} {
		out := runQuery(t, env, c.q)
		if got := rowPaths(out); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.q, got, c.want)
		}
		if out.Language != "dataview" || !slices.Equal(out.Columns, []string{"File"}) {
			t.Errorf("%s: language %q, columns %v", c.q, out.Language, out.Columns)
		}
	}
}

func TestQueryDataviewWhereSort(t *testing.T) {
	env := queryEnv(t)
	for _, c := range []struct {
		q    string
		want []string
	}{
		{`LIST WHERE status = "active"`, []string{"Projects/Alpha.md"}},
		{`LIST WHERE status != "active" AND status`, []string{"Projects/Archive/Old.md", "Projects/Beta.md"}},
		{`LIST WHERE !status`, []string{"Inbox.md", "People/Ann.md"}},
		{`LIST WHERE priority > 1 and priority <= 5 SORT priority DESC`, []string{"Projects/Archive/Old.md", "Projects/Alpha.md"}},
		{`LIST WHERE due < date(2026-12-02)`, []string{"Projects/Alpha.md"}},
		{`LIST WHERE due >= date(2026-12-02)`, []string{}},
		{`LIST WHERE contains(file.tags, "#project")`, []string{"Projects/Alpha.md", "Projects/Archive/Old.md", "Projects/Beta.md"}},
		{`LIST WHERE contains(file.etags, "#project")`, []string{"Projects/Alpha.md", "Projects/Beta.md"}},
		{`LIST WHERE contains(file.outlinks, [[Alpha]])`, []string{"People/Ann.md", "Projects/Beta.md"}},
		{`LIST WHERE contains(file.inlinks, [[Ann]])`, []string{"Projects/Alpha.md"}},
		{`LIST WHERE file.folder = "Projects" or file.name = "Ann" SORT file.name ASC`, []string{"Projects/Alpha.md", "People/Ann.md", "Projects/Beta.md"}},
		{`LIST WHERE file.path = "Inbox.md"`, []string{"Inbox.md"}},
		{`LIST WHERE contains(file.aliases, "Annie")`, []string{"People/Ann.md"}},
		{`LIST FROM "Projects" SORT status`, []string{"Projects/Alpha.md", "Projects/Archive/Old.md", "Projects/Beta.md"}},
		{`LIST FROM "Projects" SORT file.name DESC LIMIT 2`, []string{"Projects/Archive/Old.md", "Projects/Beta.md"}},
		{`LIST WHERE file.mtime > date(2000-01-01) AND file.ctime <= date(now) WHERE file.name = "Ann"`, []string{"People/Ann.md"}},
	} {
		if got := rowPaths(runQuery(t, env, c.q)); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.q, got, c.want)
		}
	}
}

func TestQueryDataviewTable(t *testing.T) {
	env := queryEnv(t)
	out := runQuery(t, env, `TABLE status, priority AS "P", file.inlinks FROM "Projects" WHERE priority >= 2 SORT priority DESC`)
	if !slices.Equal(out.Columns, []string{"File", "status", "P", "file.inlinks"}) {
		t.Fatalf("columns: %v", out.Columns)
	}
	got := fmt.Sprint(out.Rows[0].Values, out.Rows[1].Values, len(out.Rows))
	// Alpha's inlinks leave out the fenced HR/Secret.md.
	want := "[[[Old]] archived 5 []] [[[Alpha]] active 2 [[[Ann]] [[Beta]]]] 2"
	if got != want {
		t.Errorf("rows: %s\nwant  %s", got, want)
	}
	out = runQuery(t, env, `TABLE WITHOUT ID file.name AS name, file.outlinks WHERE file.name = "Inbox"`)
	if fmt.Sprint(out.Columns, out.Rows[0].Values) != "[name file.outlinks] [Inbox [[[Missing]]]]" {
		t.Errorf("without id: %v %v", out.Columns, out.Rows)
	}
	// The text rendering is a table with a location column.
	text := read.Query().CLI.Text(out)
	if !strings.HasPrefix(text, "Location  name") || !strings.Contains(text, "Inbox.md  ") || !strings.HasSuffix(text, "1 row(s)\n") {
		t.Errorf("text:\n%s", text)
	}
}

func TestQueryDataviewTasks(t *testing.T) {
	env := queryEnv(t)
	out := runQuery(t, env, `TASK WHERE !completed`)
	if got := fmt.Sprint(rowPaths(out)); got != "[Inbox.md Projects/Alpha.md Projects/Beta.md]" {
		t.Errorf("open tasks: %s", got)
	}
	if !slices.Equal(out.Columns, []string{"Task", "Status", "Due"}) || out.Rows[0].Line != 3 || out.Rows[1].Line != 11 {
		t.Errorf("columns %v, rows %+v", out.Columns, out.Rows)
	}
	if got := fmt.Sprint(out.Rows[1].Values); got != "[write spec 📅 2026-12-03 todo 2026-12-03]" {
		t.Errorf("values: %s", got)
	}
	for q, want := range map[string]string{
		`TASK FROM "Projects" WHERE due < date(2026-12-10)`:  "[Projects/Alpha.md]",
		`TASK WHERE completed`:                               "[Projects/Alpha.md]",
		`TASK WHERE status = "x"`:                            "[Projects/Alpha.md]",
		`TASK WHERE contains(text, "Ann")`:                   "[Inbox.md]",
		`TASK FROM #project WHERE !completed SORT text DESC`: "[Projects/Alpha.md Projects/Beta.md]",
		`TASK WHERE owner = "ann"`:                           "[Projects/Beta.md]", // a page field, inherited
	} {
		if got := fmt.Sprint(rowPaths(runQuery(t, env, q))); got != want {
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
}

func TestQueryLimitAndLanguage(t *testing.T) {
	env := queryEnv(t)
	out := opstest.Call[read.QueryOut](t, env, "query", `{"query": "LIST", "limit": 2}`)
	if len(out.Rows) != 2 || !out.Truncated {
		t.Errorf("limit 2: %d rows, truncated %v", len(out.Rows), out.Truncated)
	}
	out = runQuery(t, env, "LIST LIMIT 1")
	if len(out.Rows) != 1 || out.Truncated {
		t.Errorf("LIMIT 1: %d rows, truncated %v", len(out.Rows), out.Truncated)
	}
	out = runQuery(t, env, "LIST FROM #person", "language", "Dataview")
	if len(out.Rows) != 1 {
		t.Errorf("explicit language: %+v", out)
	}
	for _, in := range []string{`{"query": "LIST", "limit": 1001}`, `{"query": "LIST", "timeout_ms": -1}`, `{"query": "  "}`} {
		opstest.WantCode(t, env, "query", in, errs.CodeInvalidInput)
	}
}

func TestQueryErrors(t *testing.T) {
	env := queryEnv(t)
	for q, construct := range map[string]string{
		`LIST GROUP BY a GROUP BY b`:    "GROUP BY twice",
		`LIST WHERE file.tasks`:         "field file.tasks",
		`CALENDAR file.mtime`:           "CALENDAR queries",
		`LIST WHERE regexmatch("a", x)`: "function regexmatch()",
		`LIST WHERE file.lists`:         "field file.lists",
		`TABLE priority * 2`:            "arithmetic (*)",
		`LIST FROM csv("a.csv")`:        "FROM csv(...)",
		`LIST FROM [[]]`:                "[[]] (the current note) in FROM",
		`{:query [:find ?b :where [?b :block/marker]] :view (fn [r] r)}`: ":view",
		`[:find ?b :where [?b :block/left ?l]]`:                          "attribute :block/left",
		`hello world`:                                                    "query language",
	} {
		d := opstest.WantCode(t, env, "query", opstest.JS(map[string]any{"query": q}), errs.CodeUnsupportedQuery)
		if d["construct"] != construct {
			t.Errorf("%s: construct %v, want %q", q, d["construct"], construct)
		}
	}
	for _, q := range []string{`LIST FROM`, `LIST WHERE (status = "a"`, `LIST WHERE status = "open`, `TABLE a, WHERE`,
		`LIST LIMIT -1`, `LIST WHERE date(someday) = 1`, `LIST FROM #`, `TASK foo`, `LIST WHERE [[x`, strings.Repeat("(", 200)} {
		opstest.WantCode(t, env, "query", opstest.JS(map[string]any{"query": q, "language": "dataview"}), errs.CodeInvalidInput)
	}
}

// TestQueryLogseq: Logseq tasks carry their block uuid, journals their
// day, and page properties are fields.
func TestQueryLogseq(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"logseq/config.edn":      "{:meta/version 1}\n",
		"pages/Plan.md":          "type:: project\n\n- TODO draft the plan\n  id:: 6561a0b2-1111-4222-8333-444455556666\n- DONE old step\n",
		"journals/2026_11_20.md": "- DOING review [[Plan]]\n",
	})
	out := runQuery(t, env, `TASK WHERE !completed`)
	if got := fmt.Sprint(out.Rows); got != "[{journals/2026_11_20.md 1  [review [[Plan]] in_progress <nil>]} {pages/Plan.md 3 6561a0b2-1111-4222-8333-444455556666 [draft the plan todo <nil>]}]" {
		t.Errorf("logseq tasks: %s", got)
	}
	out = runQuery(t, env, `TABLE file.day WHERE file.day = date(2026-11-20) OR type = "project"`)
	if got := fmt.Sprint(out.Rows); got != "[{journals/2026_11_20.md 0  [[[2026_11_20]] 2026-11-20]} {pages/Plan.md 0  [[[Plan]] <nil>]}]" {
		t.Errorf("file.day and page properties: %s", got)
	}
	out = runQuery(t, env, `LIST WHERE file.size > 10 AND file.size < 1000`)
	if len(out.Rows) != 2 {
		t.Errorf("file.size: %+v", out.Rows)
	}
}

// TestQueryTimeout: a deadline already past is query_timeout, from the
// query package the op calls.
func TestQueryTimeout(t *testing.T) {
	env := queryEnv(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := query.Run(ctx, env.Vaults[0].Index, "", "LIST", query.Options{Limit: 10})
	if errs.Code(err) != errs.CodeQueryTimeout {
		t.Errorf("expired deadline: %v", err)
	}
}

// TestQueryFenced: the fenced note's rows, field values and links never
// show, whatever the query asks.
func TestQueryFenced(t *testing.T) {
	env := queryEnv(t)
	for _, q := range []string{`LIST FROM "HR"`, `TABLE status, file.inlinks, file.outlinks`, `TASK`, `LIST WHERE priority = 9`,
		`TABLE file.inlinks FROM [[Alpha]]`, `LIST FROM outgoing([[Secret]])`} {
		out := runQuery(t, env, q)
		s := fmt.Sprint(out.Rows)
		if strings.Contains(s, "HR/") || strings.Contains(s, "Secret") || strings.Contains(s, "secret") || strings.Contains(s, " 9") {
			t.Errorf("%s leaks the fenced note: %s", q, s)
		}
	}
}

// TestQueryDemoVault: the demo vault's open project tasks make a table.
func TestQueryDemoVault(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := runQuery(t, env, `TASK FROM "Projects" WHERE !completed`)
	if len(out.Rows) < 2 {
		t.Fatalf("open project tasks: %+v", out.Rows)
	}
	text := read.Query().CLI.Text(out)
	if !strings.Contains(text, "Projects/Project Atlas.md:") || !strings.Contains(text, "Answer Dataview queries") || !strings.Contains(text, "2026-12-04") {
		t.Errorf("demo table:\n%s", text)
	}
	for _, q := range []string{`TABLE status, owner FROM #project`, `LIST FROM [[Project Atlas]] SORT file.name`, `TABLE file.tags WHERE file.folder = "People"`} {
		if out := runQuery(t, env, q); len(out.Rows) == 0 {
			t.Errorf("%s: no rows", q)
		}
	}
}

// TestQueryHubCorpus runs a handful of queries over the obsidian-hub
// corpus (skipped when it is absent): none may fail.
func TestQueryHubCorpus(t *testing.T) {
	root := testutil.Corpus(t, "obsidian-hub")
	if testing.Short() {
		t.Skip("indexes a large corpus")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	env := opstest.OpenEnv(t, dir)
	for _, q := range []string{
		`LIST FROM #seedling AND -#MOC LIMIT 20`,
		`TABLE file.name, file.tags FROM "01 - Community" SORT file.name LIMIT 50`,
		`LIST FROM [[Plugins]] or outgoing([[Plugins]])`,
		`TABLE length(file.inlinks) AS "in" WHERE length(file.inlinks) > 5 SORT file.name DESC LIMIT 20`,
		`TASK WHERE !completed LIMIT 20`,
		`LIST WHERE contains(file.name, "Obsidian") AND file.mtime > date(2000-01-01)`,
	} {
		res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, "query", []byte(opstest.JS(map[string]any{"query": q, "timeout_ms": 60000})))
		if res.Err != nil {
			t.Errorf("%s: %s %s", q, res.Err.Code, res.Err.Message)
		}
	}
}

// TestQueryLogseqSimple: the query operation answers Logseq simple queries
// (detected from the leading parenthesis or {{query}}), with block uuids,
// lines and the read fence applied before the limit.
func TestQueryLogseqSimple(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"logseq/config.edn": "{:meta/version 1}\n",
		"pages/Work.md":     "- TODO write the spec\n  id:: 6571a1b2-0000-4000-8000-000000000001\n- DONE ship v1\n- LATER tidy up [[Garden]]\n",
		"pages/Garden.md":   "- TODO plant tomatoes\n- a note about soil\n",
		"pages/Secret.md":   "- TODO hidden task\n",
	})
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"pages/Secret.md"}}
	got := func(o *read.QueryOut) []string {
		var out []string
		for _, r := range o.Rows {
			out = append(out, fmt.Sprintf("%s:%d:%s", r.Path, r.Line, r.Block))
		}
		return out
	}
	o := runQuery(t, env, `(task TODO)`)
	if o.Language != query.LogseqSimple || !slices.Equal(o.Columns, []string{"page", "content"}) {
		t.Fatalf("language %q columns %v", o.Language, o.Columns)
	}
	if want := []string{"pages/Garden.md:1:", "pages/Work.md:1:6571a1b2-0000-4000-8000-000000000001"}; !slices.Equal(got(o), want) {
		t.Errorf("(task TODO): %v, want %v", got(o), want)
	}
	o = runQuery(t, env, `{{query (and [[Garden]] (task TODO LATER))}}`)
	if want := []string{"pages/Garden.md:1:", "pages/Work.md:4:"}; !slices.Equal(got(o), want) {
		t.Errorf("garden tasks: %v, want %v", got(o), want)
	}
	o = opstest.Call[read.QueryOut](t, env, "query", opstest.JS(map[string]any{"query": `(task TODO DONE LATER)`, "limit": 2}))
	if len(o.Rows) != 2 || !o.Truncated || slices.ContainsFunc(o.Rows, func(r query.Row) bool { return strings.Contains(r.Path, "Secret") }) {
		t.Errorf("limit 2: %v truncated %v", got(o), o.Truncated)
	}
	if d := opstest.WantCode(t, env, "query", opstest.JS(map[string]any{"query": `(and (task TODO) (full-text-search "x"))`}), errs.CodeUnsupportedQuery); d["construct"] != "(full-text-search)" {
		t.Errorf("(full-text-search) details: %v", d)
	}
}

// TestQueryLogseqAdvanced: a Datalog query through the operation, with
// inputs from the call, the read fence, and the CLI's table of pulled
// blocks.
func TestQueryLogseqAdvanced(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"logseq/config.edn":      "{:meta/version 1}\n",
		"pages/Plan.md":          "type:: project\n\n- TODO draft the plan\n  id:: 6561a0b2-1111-4222-8333-444455556666\n- DONE old step\n",
		"journals/2026_11_20.md": "- DOING review [[Plan]]\n",
		"pages/HR___Pay.md":      "- TODO secret raise [[Plan]]\n",
	})
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"pages/HR*"}}
	out := runQuery(t, env, `[:find (pull ?b [*]) :where [?b :block/marker ?m] [(contains? #{"TODO" "DOING"} ?m)]]`)
	if got := rowPaths(out); !slices.Equal(got, []string{"journals/2026_11_20.md", "pages/Plan.md"}) {
		t.Errorf("tasks: %v", got)
	}
	if out.Language != query.LogseqAdvanced || out.Rows[1].Block != "6561a0b2-1111-4222-8333-444455556666" || out.Rows[1].Line != 3 {
		t.Errorf("rows: %+v", out)
	}
	text := read.Query().CLI.Text(out)
	if !strings.Contains(text, "pages/Plan.md:3 ") || !strings.Contains(text, " block/content: TODO draft the plan; block/marker: TODO; block/page: Plan;") {
		t.Errorf("CLI text:\n%s", text)
	}
	// Inputs from the call replace the query's :inputs.
	in := `{"query": "{:query [:find ?b :in $ ?name :where [?p :block/name ?name] [?b :block/refs ?p]] :inputs [\"nothing\"]}", "inputs": ["[[Plan]]"]}`
	out = opstest.Call[read.QueryOut](t, env, "query", in)
	if fmt.Sprint(out.Rows) != "[{journals/2026_11_20.md 1  [DOING review [[Plan]]]}]" {
		t.Errorf("inputs: %v", out.Rows)
	}
	opstest.WantCode(t, env, "query", `{"query": "LIST", "inputs": [1]}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "query", `{"query": "[:find ?b :in $ ?x :where [?b :block/name ?x]]", "inputs": [{"a": 1}]}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "query", `{"query": "[:find ?b :where [?b :block/name"}`, errs.CodeInvalidInput)
}

// TestQueryInlineFields: Dataview inline fields reach the query op, and a
// task's [due:: …] field is its due date for list_tasks' due filter too.
func TestQueryInlineFields(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"Books/Dune.md": "Rating:: 9\nStatus:: read\n- [ ] lend it to Ann [due:: 2026-12-01]\n- [ ] reread 📅 2026-12-02 [due:: 2026-12-01]\n",
		"Books/Emma.md": "I'd give it [rating:: 6] (status:: read)\n",
	})
	o := runQuery(t, env, `TABLE rating FROM "Books" WHERE rating > 5 SORT rating DESC`)
	if got := fmt.Sprint(o.Rows); got != "[{Books/Dune.md 0  [[[Dune]] 9]} {Books/Emma.md 0  [[[Emma]] 6]}]" {
		t.Errorf("inline fields: %s", got)
	}
	o = runQuery(t, env, `TABLE length(rows) AS n GROUP BY status`)
	if got := fmt.Sprint(o.Columns, o.Rows); got != "[status n] [{ 0  [read 2]}]" {
		t.Errorf("group by: %s", got)
	}
	lt := opstest.Call[read.ListTasksOut](t, env, "list_tasks", `{"due_from": "2026-12-01", "due_to": "2026-12-01"}`)
	if len(lt.Tasks) != 1 || lt.Tasks[0].Line != 3 || lt.Tasks[0].Due != "2026-12-01" {
		t.Errorf("list_tasks due 2026-12-01: %+v", lt.Tasks)
	}
}
