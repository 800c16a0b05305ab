package ops_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/query"
)

// found renders a scan as "line language query [error code]" lines.
func found(qs []ops.FoundQuery) string {
	var b strings.Builder
	for _, q := range qs {
		fmt.Fprintf(&b, "%d %s %q", q.Line, q.Language, q.Query)
		if q.Err != nil {
			b.WriteString(" ! " + q.Err.Code)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestScanQueries: which embedded queries a note's text holds, where they
// start and what text is evaluated, worked out by hand per case.
func TestScanQueries(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"logseq macro in a block", "- TODO a\n- {{query (task TODO)}}\n", "2 logseq-simple \"(task TODO)\"\n"},
		{"two macros on a line, CRLF", "x {{query \"a\"}} and {{query [[b]]}}\r\n", "1 logseq-simple \"\\\"a\\\"\"\n1 logseq-simple \"[[b]]\"\n"},
		{"}} inside a string", `{{query "a}}b" }}`, "1 logseq-simple \"\\\"a}}b\\\"\"\n"},
		{"empty macro", "{{query}}", "1 logseq-simple \"\"\n"},
		{"not the query macro", "{{queryx (a)}} {{embed [[p]]}} {{ query (a)}}", ""},
		{"unclosed macro", "- {{query (task TODO)\n", "1 logseq-simple \"(task TODO)\" ! validation_failed\n"},
		{"inline code is skipped", "`{{query (a)}}` and ``{{query (b)}}`` then {{query (c)}}", "1 logseq-simple \"(c)\"\n"},
		{"unmatched backtick is literal", "a ` {{query (c)}}", "1 logseq-simple \"(c)\"\n"},
		{"fenced code is skipped", "```clojure\n{{query (a)}}\n```\n{{query (b)}}\n", "4 logseq-simple \"(b)\"\n"},
		{"frontmatter is skipped", "---\nq: \"{{query (a)}}\"\n---\n{{query (b)}}\n", "4 logseq-simple \"(b)\"\n"},
		{"unclosed frontmatter is text", "---\n{{query (a)}}\n", "2 logseq-simple \"(a)\"\n"},
		{"advanced query block", "- #+BEGIN_QUERY\n  {:title \"t\"\n   :query [:find ?b]}\n  #+END_QUERY\n- after\n",
			"1 logseq-advanced \"{:title \\\"t\\\"\\n:query [:find ?b]}\"\n"},
		{"advanced query, lower case, unclosed", "#+begin_query\n[:find ?b]\n", "1 logseq-advanced \"[:find ?b]\" ! validation_failed\n"},
		{"src blocks are skipped", "#+BEGIN_SRC\n{{query (a)}}\n#+END_SRC\n{{query (b)}}", "4 logseq-simple \"(b)\"\n"},
		{"dataview fence", "# T\n\n```dataview\nLIST\nFROM #a\n```\n", "3 dataview \"LIST\\nFROM #a\"\n"},
		{"dataview in a callout", "> [!note]\n> ```dataview\n> TASK WHERE !completed\n> ```\n", "2 dataview \"TASK WHERE !completed\"\n"},
		{"dataview in a list item, tildes, longer fence", "- ~~~~ Dataview\n  LIST\n  ~~~\n  ~~~~\n", "1 dataview \"LIST\\n~~~\"\n"},
		{"unclosed dataview runs to the end", "```dataview\nLIST", "1 dataview \"LIST\"\n"},
		{"dataviewjs is unsupported", "```dataviewjs\ndv.list()\n```\n", "1 dataviewjs \"dv.list()\" ! unsupported_query\n"},
		{"other fences are not queries", "```query\nfoo\n```\n```tasks\nnot done\n```\n", ""},
		{"backtick fence with a backtick in the info is text", "```dataview `x`\n{{query (a)}}\n", "2 logseq-simple \"(a)\"\n"},
	} {
		if got := found(ops.ScanQueries(c.text)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// FuzzScanQueries: any text scans without a panic, every query found lies
// inside the text's lines with a known language, and a query with an error
// carries a stable code.
func FuzzScanQueries(f *testing.F) {
	for _, s := range []string{
		"- {{query (task TODO)}}\n", "```dataview\nLIST\n```", "#+BEGIN_QUERY\n[:find ?b]\n#+END_QUERY",
		"> ```dataviewjs\n> x\n", "`` {{query a}} ``{{query \"}}\\\"\"}}", "---\na\n---\n{{query", "~~~\n```\n~~~",
	} {
		f.Add(s)
	}
	langs := map[string]bool{query.LogseqSimple: true, query.LogseqAdvanced: true, query.Dataview: true, "dataviewjs": true}
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.Count(s, "\n") + 1
		for _, q := range ops.ScanQueries(s) {
			if q.Line < 1 || q.Line > lines || !langs[q.Language] {
				t.Fatalf("found %+v in %q", q, s)
			}
			if q.Err != nil && (q.Err.Code != errs.CodeInvalidInput && q.Err.Code != errs.CodeUnsupportedQuery) {
				t.Fatalf("error code %s", q.Err.Code)
			}
			if utf8.ValidString(s) && !utf8.ValidString(q.Query) {
				t.Fatalf("query %q is not UTF-8 from %q", q.Query, s)
			}
		}
	})
}

// TestEmbeddedQueryTimeBudget: with the note's time budget spent, the
// queries are query_skipped naming it (the malformed one too: it is only
// found malformed when run); past the caller's deadline they are
// query_timeout.
func TestEmbeddedQueryTimeBudget(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"logseq/config.edn": "{:meta/version 1}\n",
		"pages/p.md":        "- TODO a\n- {{query (task TODO)}}\n- {{query (todo todo)}}\n",
	})
	vh := env.Vaults[0]
	text := "- {{query (task TODO)}}\n```dataview\nLIST\n```\n- {{query (and}}\n"

	got := ops.RunEmbeddedQueries(context.Background(), env, vh, text, 1, 0, nil)
	if len(got) != 3 || got[0].Error != nil || len(got[0].Result.Rows) != 1 || got[1].Error != nil || got[2].Error.Code != errs.CodeInvalidInput {
		t.Fatalf("with the budget: %s", opstest.JS(got))
	}

	restore := ops.SetEmbeddedQueryBudget(0)
	got = ops.RunEmbeddedQueries(context.Background(), env, vh, text, 1, 0, nil)
	restore()
	if len(got) != 3 {
		t.Fatalf("budget spent: %s", opstest.JS(got))
	}
	for _, q := range got {
		if q.Error == nil || q.Error.Code != ops.CodeQuerySkipped || q.Error.Details["budget_ms"] != int64(0) || q.Result != nil {
			t.Errorf("budget spent: %s", opstest.JS(q))
		}
	}

	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	got = ops.RunEmbeddedQueries(ctx, env, vh, text, 1, 0, nil)
	for _, q := range got[:2] {
		if q.Error == nil || q.Error.Code != errs.CodeQueryTimeout {
			t.Errorf("past the deadline: %s", opstest.JS(q))
		}
	}
}
