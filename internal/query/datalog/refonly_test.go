package datalog

import (
	"context"
	"reflect"
	"testing"

	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/query/graph"
	"github.com/loci-dev/loci/internal/testutil"
)

// refFixture has names referenced without a page file: tags (#ToRead),
// links ([[Dune]]), page tags (Library, Sci Fi), a page property
// (type:: [[Book]]), a journal title ([[Nov 20th, 2026]]), and a name
// used only in a note the fence hides ([[Secret Plan]]). Its journals are
// named yyyyMMdd and titled by the default "MMM do, yyyy".
var refFixture = map[string]string{
	"logseq/config.edn": "{:journal/file-name-format \"yyyyMMdd\"}\n",
	"pages/Reading.md": "type:: [[Book]]\ntags:: Library, [[Sci Fi]]\n\n" +
		"- r1 started #ToRead\n" +
		"- r2 see [[Dune]] and [[Nov 20th, 2026]]\n  - r3 child\n" +
		"- r4 links [x](other.md) and ![[cover.png]]\n",
	"pages/Hidden.md":      "- h1 only here [[Secret Plan]] #toread\n",
	"pages/Shown.md":       "- s1 about [[Hidden]]\n",
	"journals/20261121.md": "- j1 read [[dune]]\n",
}

func refGraph(t *testing.T) *graph.Graph {
	t.Helper()
	root := t.TempDir()
	testutil.WriteFiles(t, root, refFixture)
	g, err := graph.For(context.Background(), indexOf(t, root))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestPagesByReference(t *testing.T) {
	g := refGraph(t)
	ev := Evaluator{Now: fixedNow}
	hidden := query.Options{Visible: func(p string) bool { return p != "pages/Hidden.md" }}
	cases := []struct {
		name, q string
		opt     query.Options
		want    []string // column 0, sorted
	}{
		// The commonest advanced query, on a tag with no page file.
		{"tag refs", `[:find ?b :where [?p :block/name "toread"] [?b :block/refs ?p]]`, query.Options{}, []string{"h1", "r1"}},
		{"tag refs fenced", `[:find ?b :where [?p :block/name "toread"] [?b :block/refs ?p]]`, hidden, []string{"r1"}},
		{"link refs", `[:find ?b :where [?p :block/name "dune"] [?b :block/refs ?p]]`, query.Options{}, []string{"j1", "r2"}},
		{"path refs", `[:find ?b :where [?p :block/name "dune"] [?b :block/path-refs ?p]]`, query.Options{}, []string{"j1", "r2", "r3"}},
		{"lookup ref", `[:find ?b :where [?b :block/refs [:block/name "dune"]]]`, query.Options{}, []string{"j1", "r2"}},
		{"page-ref rule", `[:find ?b :where (page-ref ?b "ToRead")]`, query.Options{}, []string{"h1", "r1"}},
		// Every page name, with and without the fence. A Markdown link to
		// a file (other.md) and an embedded attachment make no page.
		{"names", `[:find ?n :where [?p :block/name ?n]]`, query.Options{},
			[]string{"book", "dune", "hidden", "library", "nov 20th, 2026", "nov 21st, 2026", "reading", "sci fi", "secret plan", "shown", "toread"}},
		// Hidden.md is as absent: its name stays (Shown links to it),
		// [[Secret Plan]], named only there, goes.
		{"names fenced", `[:find ?n :where [?p :block/name ?n]]`, hidden,
			[]string{"book", "dune", "hidden", "library", "nov 20th, 2026", "nov 21st, 2026", "reading", "sci fi", "shown", "toread"}},
		// As first written by a visible note (blocks in path order).
		{"original name", `[:find ?n :where [?p :block/name "toread"] [?p :block/original-name ?n]]`, query.Options{}, []string{"toread"}},
		{"original name fenced", `[:find ?n :where [?p :block/name "toread"] [?p :block/original-name ?n]]`, hidden, []string{"ToRead"}},
		{"original name dune", `[:find ?n :where [?p :block/name "dune"] [?p :block/original-name ?n]]`, query.Options{}, []string{"dune"}},
		// Page tags that have no page file.
		{"page tags", `[:find ?t :where [?p :block/name "reading"] [?p :block/tags ?tp] [?tp :block/original-name ?t]]`, query.Options{}, []string{"Library", "Sci Fi"}},
		{"tagged", `[:find ?n :where [?t :block/name "sci fi"] [?p :block/tags ?t] [?p :block/original-name ?n]]`, query.Options{}, []string{"Reading"}},
		// A name that reads as a journal title is a journal, with its day.
		{"journal by ref", `[:find ?d :where [?p :block/name "nov 20th, 2026"] [?p :block/journal? true] [?p :block/journal-day ?d]]`, query.Options{}, []string{"?"}},
		{"journals", `[:find ?n :where [?p :block/journal? true] [?p :block/original-name ?n]]`, query.Options{}, []string{"Nov 20th, 2026", "Nov 21st, 2026"}},
		{"not journal", `[:find ?n :where [?p :block/name "dune"] [?p :block/journal? false] [?p :block/original-name ?n]]`, query.Options{}, []string{"dune"}},
		// No blocks, no properties.
		{"no blocks", `[:find ?b :where [?p :block/name "dune"] [?b :block/page ?p]]`, query.Options{}, []string{}},
		{"no props", `[:find ?p :where [?p :block/name "book"] [?p :block/properties _]]`, query.Options{}, []string{}},
	}
	for _, c := range cases {
		r, err := ev.Eval(context.Background(), g, c.q, nil, c.opt)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := sorted(col0(r)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %s = %v, want %v", c.name, c.q, got, c.want)
		}
	}

	// The journal day of a journal that exists only by reference.
	r, err := ev.Eval(context.Background(), g, `[:find ?d :where [?p :block/name "nov 20th, 2026"] [?p :block/journal-day ?d]]`, nil, query.Options{})
	if err != nil || len(r.Rows) != 1 || r.Rows[0].Values[0] != int64(20261120) {
		t.Errorf("journal day: %+v %v", r, err)
	}
	// A row whose first entity is such a page has no path; a page with a
	// file has its path (also when the fence hides another note).
	for _, c := range []struct {
		name string
		opt  query.Options
		path string
	}{
		{"dune", query.Options{}, ""},
		{"hidden", query.Options{}, "pages/Hidden.md"},
		{"hidden", hidden, ""},
		{"reading", hidden, "pages/Reading.md"},
	} {
		r, err := ev.Eval(context.Background(), g, `[:find ?p :where [?p :block/name "`+c.name+`"]]`, nil, c.opt)
		if err != nil || len(r.Rows) != 1 || r.Rows[0].Path != c.path || r.Rows[0].Line != 0 {
			t.Errorf("%s: %+v %v", c.name, r, err)
		}
	}
	// pull [*] of such a page: its names and journal?, nothing else.
	r, err = ev.Eval(context.Background(), g, `[:find (pull ?p [*]) :where [?p :block/name "sci fi"]]`, nil, query.Options{})
	if err != nil || len(r.Rows) != 1 {
		t.Fatalf("pull: %+v %v", r, err)
	}
	m := r.Rows[0].Values[0].(map[string]any)
	want := map[string]any{"block/name": "sci fi", "block/original-name": "Sci Fi", "block/journal?": false}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("pull = %v, want %v", m, want)
	}
}
