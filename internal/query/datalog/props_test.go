package datalog

import (
	"context"
	"reflect"
	"testing"

	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/query/graph"
	"github.com/loci-dev/loci/internal/testutil"
)

// propFixture: property values as Logseq stores them.
var propFixture = map[string]string{
	"logseq/config.edn": "{}\n",
	"pages/Dune.md": "type:: [[Book]]\ntags:: SciFi, [[Classic Novel]]\nrating:: 5\nauthor:: Frank Herbert\n\n" +
		"- d1 notes\n  topics:: [[Spice]], #Desert, plain text\n  quoted:: \"[[Not a ref]]\"\n  filters:: [[Kept]]\n  score:: 4.5\n  done:: true\n",
	"pages/Emma.md": "type:: [[book]]\nrating:: 4\nalias:: Emma Novel, [[E]]\n\n- e1 notes\n",
	"pages/Cat.md":  "type:: animal\n\n- c1 meow\n  type:: [[Book]], [[Animal]]\n",
}

func TestPropertyValues(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, propFixture)
	g, err := graph.For(context.Background(), indexOf(t, root))
	if err != nil {
		t.Fatal(err)
	}
	ev := Evaluator{Now: fixedNow}
	typeIs := func(test string) string {
		return `[:find ?n :where [?p :block/properties ?props] [(get ?props :type) ?t] ` + test + ` [?p :block/original-name ?n]]`
	}
	cases := []struct {
		name, q string
		want    []string // column 0, sorted
	}{
		// type:: [[Book]] is #{"Book"}: contains? and = with a set, as in
		// Logseq, ignoring case as page names do.
		{"contains", typeIs(`[(contains? ?t "book")]`), []string{"Dune", "Emma"}},
		{"contains case", typeIs(`[(contains? ?t "BOOK")]`), []string{"Dune", "Emma"}},
		{"= set", typeIs(`[(= ?t #{"Book"})]`), []string{"Dune", "Emma"}},
		// A set is no string (false in Logseq too); plain text stays text.
		{"= string", typeIs(`[(= ?t "book")]`), []string{}},
		{"= text", typeIs(`[(= ?t "animal")]`), []string{"Cat"}},
		{"not= set", typeIs(`[(not= ?t #{"book"})]`), []string{"Cat"}},
		// Logseq's rules: (or [(= ?v val)] [(contains? ?v val)]).
		{"page-property", `[:find ?p :where (page-property ?p :type "book")]`, []string{"Dune", "Emma"}},
		{"page-property text", `[:find ?p :where (page-property ?p :type "Animal")]`, []string{"Cat"}},
		{"property", `[:find ?b :where (property ?b :type "Animal") [?b :block/page _]]`, []string{"c1"}},
		{"property set", `[:find ?b :where (property ?b :type "book") [?b :block/page _]]`, []string{"c1"}},
		// tags:: and alias:: items are names without [[ ]] too.
		{"tags plain", `[:find ?p :where (page-property ?p :tags "scifi")]`, []string{"Dune"}},
		{"tags ref", `[:find ?p :where (page-property ?p :tags "Classic Novel")]`, []string{"Dune"}},
		{"alias", `[:find ?n :where [?p :block/properties ?m] [(get ?m :alias) ?a] [(contains? ?a "emma novel")] [?p :block/original-name ?n]]`, []string{"Emma"}},
		// Numbers stay numbers.
		{"rating", `[:find ?n :where [?p :block/properties ?m] [(get ?m :rating) ?r] [(>= ?r 5)] [?p :block/original-name ?n]]`, []string{"Dune"}},
		// Elsewhere only references count: "plain text" is dropped, as
		// Logseq does.
		{"topics", `[:find ?c :where [?b :block/properties ?m] [(get ?m :topics) ?t] [(count ?t) ?c]]`, []string{"?"}},
	}
	for _, c := range cases {
		r, err := ev.Eval(context.Background(), g, c.q, nil, query.Options{})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := sorted(col0(r)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %s = %v, want %v", c.name, c.q, got, c.want)
		}
	}
	one := func(q string) []any {
		t.Helper()
		r, err := ev.Eval(context.Background(), g, q, nil, query.Options{})
		if err != nil || len(r.Rows) != 1 {
			t.Fatalf("%s: %+v %v", q, r, err)
		}
		return r.Rows[0].Values
	}
	if got := one(`[:find ?c :where [?b :block/properties ?m] [(get ?m :topics) ?t] [(count ?t) ?c]]`); got[0] != int64(2) {
		t.Errorf("topics count %v", got)
	}
	// Equal sets are one value: pages join on them ([[Book]] = [[book]]).
	if got := one(`[:find ?a ?b :where [?x :block/properties ?px] [(get ?px :type) ?t] [?y :block/properties ?py] [(get ?py :type) ?t] [?x :block/original-name ?a] [?y :block/original-name ?b] [(< ?a ?b)]]`); !reflect.DeepEqual(got, []any{"Dune", "Emma"}) {
		t.Errorf("join on sets = %v", got)
	}
	// A set shows as its names, sorted, as written.
	if got := one(`[:find ?t :where [?p :block/name "dune"] [?p :block/properties ?m] [(get ?m :tags) ?t]]`); !reflect.DeepEqual(got, []any{[]any{"Classic Novel", "SciFi"}}) {
		t.Errorf("tags = %#v", got)
	}
	got := one(`[:find (pull ?b [:block/properties]) :where [?b :block/content ?c] [(clojure.string/includes? ?c "d1")]]`)[0]
	want := map[string]any{"block/properties": map[string]any{
		"topics":  []any{"Desert", "Spice"},
		"quoted":  `"[[Not a ref]]"`, // in quotes: text
		"filters": "[[Kept]]",        // a key Logseq leaves unparsed
		"score":   4.5,
		"done":    true,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pull = %#v\nwant %#v", got, want)
	}
}

func TestRefNames(t *testing.T) {
	for _, c := range []struct {
		in     string
		commas bool
		want   []string
	}{
		{"[[A]], [[B]]", false, []string{"A", "B"}},
		{"plain, text", false, nil},
		{"plain, text", true, []string{"plain", "text"}},
		{"[[A]], b , c", true, []string{"A", "b", "c"}},
		{"#tag, #[[Two Words]] and #end.", false, []string{"tag", "Two Words", "end"}},
		{"a#notatag", false, nil},
		{`"[[quoted]]" [[real]]`, false, []string{"real"}},
		{"[[unclosed", false, nil},
		{"# lone", false, nil},
		{"[[ ]]", false, nil},
		{"x，y", true, []string{"x", "y"}},
	} {
		if got := refNames(c.in, c.commas); !reflect.DeepEqual(got, c.want) {
			t.Errorf("refNames(%q, %v) = %q, want %q", c.in, c.commas, got, c.want)
		}
	}
}
