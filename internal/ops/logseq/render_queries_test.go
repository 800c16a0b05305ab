package logseq_test

import (
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/logseq"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// TestGetPageRendersQueries: get_page with render_queries answers the
// page's {{query}} with the block's uuid and hand-computed rows, leaves a
// fenced page out of them, reports a malformed query as an error entry
// (the page is returned all the same), and prints tables in text form.
func TestGetPageRendersQueries(t *testing.T) {
	const qid = "22222222-0000-4000-8000-0000000000bb"
	env := opstest.FixtureEnv(t, map[string]string{
		"logseq/config.edn": "{:meta/version 1 :preferred-format :markdown}\n",
		"pages/Home.md": "title:: Home\n\n- TODO call Ann\n- LATER read [[Book]]\n- Open\n\t- {{query (task TODO LATER)}}\n\t  id:: " + qid + "\n" +
			"- broken {{query (between)}}\n- ```dataview\n  LIST\n  ```\n",
		"pages/Hidden.md": "- TODO hidden quokka task\n",
	})
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"pages/Hidden.md"}}
	plain := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name": "home"}`)
	if plain.Queries != nil {
		t.Errorf("queries without render_queries: %+v", plain.Queries)
	}
	out := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name": "home", "render_queries": true}`)
	if out.BlockCount != plain.BlockCount || len(out.Blocks) != len(plain.Blocks) || len(out.Queries) != 3 {
		t.Fatalf("get_page = %s", opstest.JS(out))
	}
	q := out.Queries[0]
	if q.Line != 6 || q.Block != qid || q.Language != "logseq-simple" || q.Query != "(task TODO LATER)" || q.Error != nil {
		t.Fatalf("query 1 = %s", opstest.JS(q))
	}
	// Lines 3 and 4 of Home; Hidden.md's TODO is fenced.
	if rows := q.Result.Rows; len(rows) != 2 || rows[0].Path != "pages/Home.md" || rows[0].Line != 3 || rows[1].Line != 4 ||
		rows[1].Values[1] != "LATER read [[Book]]" {
		t.Errorf("query 1 rows = %s", opstest.JS(q.Result))
	}
	if q := out.Queries[1]; q.Line != 8 || q.Block != "" || q.Error == nil || q.Error.Code != errs.CodeInvalidInput {
		t.Errorf("query 2 = %s", opstest.JS(q))
	}
	// A dataview block in a Logseq block is run too: LIST of every visible note.
	if q := out.Queries[2]; q.Line != 9 || q.Language != "dataview" || q.Error != nil || len(q.Result.Rows) != 1 || q.Result.Rows[0].Path != "pages/Home.md" {
		t.Errorf("query 3 = %s", opstest.JS(q))
	}
	if js := opstest.JS(out); strings.Contains(js, "quokka") || strings.Contains(js, "Hidden") {
		t.Errorf("fenced page leaks: %s", js)
	}
	op, _ := opstest.Reg.Get("get_page")
	text := op.CLI.Text(out)
	for _, want := range []string{"── query at line 6 (logseq-simple), block " + qid, "   (task TODO LATER)", "pages/Home.md:4  Home  LATER read [[Book]]", "2 row(s)", "error validation_failed: "} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
}
