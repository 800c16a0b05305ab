package datalog

import (
	"context"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/query/graph"
	"github.com/loci-dev/loci/internal/testutil"
)

// fixture is a small Logseq graph; every block holds a label (px1, al2,
// ...) the tests use to name the expected answers.
var fixture = map[string]string{
	"logseq/config.edn": "{}\n",
	"pages/Project X.md": "tags:: work, [[Planning]]\nstatus:: active\neffort:: 5\n\n" +
		"- TODO [#A] px1 write the plan\n  id:: 6500aaaa-0000-4000-8000-000000000001\n  SCHEDULED: <2026-11-26 Thu>\n" +
		"- px2 notes about [[Alice]]\n" +
		"  - DOING px3 review with #urgent\n    DEADLINE: <2026-12-10 Thu>\n",
	"pages/Alice.md": "type:: person\nalias:: Al\n\n" +
		"- DONE al1 call [[Project X]]\n" +
		"- LATER [#B] al2 lunch\n  owner:: [[Bob]], [[Carol]]\n  effort:: 3\n",
	"pages/Bob.md":           "type:: person\n\n- bob1 about [[Al]]\n",
	"pages/urgent.md":        "- urg1 the urgent page\n",
	"pages/work.md":          "- work1 the work page\n",
	"pages/lib.md":           "- lib1 libraries\n",
	"pages/Lib___Go.md":      "title:: lib/go\n\n- TODO lg1 read the spec #urgent\n",
	"pages/Secret.md":        "- TODO sec1 hidden [[Alice]]\n",
	"journals/2026_11_20.md": "- TODO [#C] j20 buy milk\n- j20b met [[Alice]] about the plan\n",
	"journals/2026_11_24.md": "- DONE j24 shipped [[Project X]]\n  owner:: [[Bob]]\n",
	"journals/2026_10_01.md": "- j01 old entry\n",
	// Not an outline page (outside pages/ and journals/): never an answer.
	"other/Plain.md": "- TODO plain1 [[Alice]]\n",
}

var fixedNow = func() time.Time { return time.Date(2026, 11, 25, 15, 4, 5, 0, time.UTC) }

func loadFixture(tb testing.TB) (*index.Index, *graph.Graph) {
	tb.Helper()
	root := tb.TempDir()
	testutil.WriteFiles(tb, root, fixture)
	ix := indexOf(tb, root)
	g, err := graph.Load(context.Background(), ix.DB)
	if err != nil {
		tb.Fatal(err)
	}
	return ix, g
}

var labelRe = regexp.MustCompile(`^[a-z]+[0-9]+b?$`)

// label names a value: a block by its label word, a pulled block by its
// content's, a page by its title.
func label(v any) string {
	switch x := v.(type) {
	case map[string]any:
		if c, ok := x["block/content"]; ok {
			return label(c)
		}
		if n, ok := x["block/original-name"]; ok {
			return label(n)
		}
		return "?map"
	case string:
		for _, w := range strings.Fields(x) {
			if labelRe.MatchString(w) {
				return w
			}
		}
		return x
	}
	return "?"
}

// col0 lists the labels of the first column, in row order.
func col0(r *query.Result) []string {
	out := []string{}
	for _, row := range r.Rows {
		out = append(out, label(row.Values[0]))
	}
	return out
}

func sorted(s []string) []string {
	s = append([]string{}, s...)
	sort.Strings(s)
	return s
}

func TestQueries(t *testing.T) {
	_, g := loadFixture(t)
	ev := Evaluator{Now: fixedNow}
	pull := `[:find (pull ?b [*]) :where `
	cases := []struct {
		name, q string
		want    []string // labels of column 0, sorted
	}{
		{"marker", pull + `[?b :block/marker "TODO"]]`, []string{"j20", "lg1", "px1", "sec1"}},
		{"marker set", `[:find ?b :where [?b :block/marker ?m] [(contains? #{"DOING" "LATER"} ?m)]]`, []string{"al2", "px3"}},
		{"any marker", `[:find ?b :where [?b :block/marker]]`, []string{"al1", "al2", "j20", "j24", "lg1", "px1", "px3", "sec1"}},
		{"property via get", `[:find ?e :where [?e :block/properties ?p] [(get ?p :effort) ?n] [(> ?n 2)]]`, []string{"Project X", "al2"}},
		{"get and =", `[:find ?name :where [?p :block/properties ?props] [(get ?props :type) ?t] [(= ?t "person")] [?p :block/original-name ?name]]`, []string{"Alice", "Bob"}},
		{"get default", `[:find ?b :where [?b :block/properties ?p] [(get ?p :owner "nobody") ?o] [(= ?o "nobody")]]`, []string{"Alice", "Bob", "Project X", "lib/go"}},
		// Direct references: [[Al]] is Alice's alias.
		{"refs", pull + `[?p :block/name "alice"] [?b :block/refs ?p]]`, []string{"bob1", "j20b", "px2", "sec1"}},
		// Path references add the children (px3 under px2) and the page's own blocks.
		{"path-refs", `[:find ?b :where [?p :page/name "alice"] [?b :block/path-refs ?p]]`, []string{"al1", "al2", "bob1", "j20b", "px2", "px3", "sec1"}},
		{"tag ref", `[:find ?b :where [?t :block/name "urgent"] [?b :block/refs ?t]]`, []string{"lg1", "px3"}},
		{"page tags", `[:find ?n :where [?t :block/name "work"] [?p :block/tags ?t] [?p :block/original-name ?n]]`, []string{"Project X"}},
		{"journal range", `{:query [:find (pull ?b [*]) :in $ ?start ?today :where [?b :block/page ?p] [?p :block/journal-day ?d] [(>= ?d ?start)] [(<= ?d ?today)]] :inputs [:-7d :today]}`, []string{"j20", "j20b", "j24"}},
		{"journal range 2m", `{:query [:find ?b :in $ ?start ?end :where (between ?b ?start ?end)] :inputs [:-2m :yesterday]}`, []string{"j01", "j20", "j20b", "j24"}},
		{"journal?", `[:find ?n :where [?p :block/journal? true] [?p :block/original-name ?n]]`, []string{"Nov 20th, 2026", "Nov 24th, 2026", "Oct 1st, 2026"}},
		{"not", `[:find ?b :where [?b :block/marker ?m] (not [?b :block/priority _])]`, []string{"al1", "j24", "lg1", "px3", "sec1"}},
		{"not two clauses", `[:find ?b :where [?b :block/marker "TODO"] (not [?b :block/refs ?p] [?p :block/name "alice"])]`, []string{"j20", "lg1", "px1"}},
		{"or and", `[:find ?b :where (or [?b :block/marker "DONE"] (and [?b :block/priority "A"] [?b :block/marker "TODO"]))]`, []string{"al1", "j24", "px1"}},
		{"or-join", `[:find ?n :where [?p :block/name] (or-join [?p] [?p :block/tags ?t] (and [?b :block/page ?p] [?b :block/marker "DONE"])) [?p :block/original-name ?n]]`, []string{"Alice", "Nov 24th, 2026", "Project X"}},
		// carol ([[Carol]] in al2's owner::) and planning (Project X's
		// tags::) are pages that exist only by reference: no blocks.
		{"not-join", `[:find ?n :where [?p :block/name ?n] (not-join [?p] [?b :block/page ?p] [?b :block/marker _])]`, []string{"bob", "carol", "lib", "oct 1st, 2026", "planning", "urgent", "work"}},
		{"scheduled or deadline", `{:query [:find (pull ?block [*]) :in $ ?start ?next :where (or [?block :block/scheduled ?d] [?block :block/deadline ?d]) [(> ?d ?start)] [(< ?d ?next)]] :inputs [:today :+7d]}`, []string{"px1"}},
		{"deadline", `[:find ?b :where [?b :block/deadline 20261210]]`, []string{"px3"}},
		{"includes", `[:find ?b :where [?b :block/content ?c] [(clojure.string/includes? ?c "the plan")]]`, []string{"j20b", "px1"}},
		{"starts-with", `[:find ?b :where [?b :block/content ?c] [(clojure.string/starts-with? ?c "DONE")]]`, []string{"al1", "j24"}},
		{"regex", `[:find ?b :where [?b :block/content ?c] [(re-pattern "^j2[0-9]") ?re] [(re-find ?re ?c)]]`, []string{"j20b"}},
		{"lower-case", `[:find ?b :where [?b :block/content ?c] [(clojure.string/lower-case ?c) ?l] [(clojure.string/includes? ?l "todo lg1")]]`, []string{"lg1"}},
		{"namespace attr", `[:find ?n :where [?ns :block/name "lib"] [?p :block/namespace ?ns] [?p :block/name ?n]]`, []string{"lib/go"}},
		{"parent", `[:find ?c :where [?p :block/content ?pc] [(clojure.string/includes? ?pc "px2")] [?c :block/parent ?p]]`, []string{"px3"}},
		{"missing?", `[:find ?b :where [?b :block/page ?p] [?p :block/name "project x"] [(missing? $ ?b :block/marker)]]`, []string{"px2"}},
		{"str", `[:find ?s :where [?p :block/name "bob"] [?p :block/properties ?pr] [(get ?pr :type) ?t] [(str "type:" ?t) ?s]]`, []string{"type:person"}},
		{"collection input", `{:query [:find ?b :in $ [?m ...] :where [?b :block/marker ?m]] :inputs [["DOING" "DONE"]]}`, []string{"al1", "j24", "px3"}},
		{"page ref input", `{:query [:find ?b :in $ ?n :where [?p :block/name ?n] [?b :block/refs ?p]] :inputs ["[[Project X]]"]}`, []string{"al1", "j24"}},
		// Logseq's built-in rules.
		{"rule task", pull + `(task ?b #{"TODO"})]`, []string{"j20", "lg1", "px1", "sec1"}},
		{"rule priority", `[:find ?b :where (priority ?b #{"A" "B"})]`, []string{"al2", "px1"}},
		{"rule page-ref", `{:query [:find ?b :in $ ?tag :where (page-ref ?b ?tag)] :inputs ["Alice"]}`, []string{"al1", "al2", "bob1", "j20b", "px2", "px3", "sec1"}},
		{"rule property", `[:find ?b :where (property ?b :owner "bob")]`, []string{"al2", "j24"}},
		{"rule property number", `[:find ?b :where (property ?b :effort 3)]`, []string{"al2"}},
		{"rule page-property", `[:find ?p :where (page-property ?p :type "person")]`, []string{"Alice", "Bob"}},
		{"rule has-property", `[:find ?b :where (has-property ?b :owner)]`, []string{"al2", "j24"}},
		{"rule page", `[:find ?b :where (page ?b "Alice")]`, []string{"al1", "al2"}},
		{"rule namespace", `[:find ?p :where (namespace ?p "lib")]`, []string{"lib/go"}},
		{"rule page-tags", `[:find ?p :where (page-tags ?p #{"work"})]`, []string{"Project X"}},
		{"rule block-content", `[:find ?b :where (block-content ?b "the plan")]`, []string{"j20b", "px1"}},
		{"rule between", `{:query [:find ?b :in $ ?s ?e :where (task ?b #{"TODO" "DONE"}) (between ?b ?s ?e)] :inputs [:-7d :today]}`, []string{"j20", "j24"}},
		{"wrapper", "#+BEGIN_QUERY\n{:title \"All tasks\"\n :query [:find (pull ?b [*])\n :where\n [?b :block/marker \"DOING\"]]\n :collapsed? false}\n#+END_QUERY", []string{"px3"}},
		{"find collection", `[:find [?b ...] :where [?b :block/marker "DOING"]]`, []string{"px3"}},
		{"find scalar", `[:find ?b . :where [?b :block/marker "DOING"]]`, []string{"px3"}},
		{"with uuid tag", `[:find ?b :where [?b :block/uuid #uuid "6500aaaa-0000-4000-8000-000000000001"]]`, []string{"px1"}},
		// Joins the planner must get right whatever the written order.
		{"same var twice", `[:find ?x :where [?x :block/parent ?x]]`, []string{}},
		{"or on a bound var", `[:find ?b :where [?b :block/refs ?p] (or [?p :block/name "alice"] [?p :block/name "urgent"])]`, []string{"bob1", "j20b", "lg1", "px2", "px3", "sec1"}},
		{"not before its binder", `[:find ?b :where (not [?b :block/marker "TODO"]) [?b :block/marker ?m]]`, []string{"al1", "al2", "j24", "px3"}},
		{"predicate before its binder", `[:find ?b :where [(> ?d 20261121)] [?b :block/page ?p] [?p :block/journal-day ?d]]`, []string{"j24"}},
		{"binding unifies", `[:find ?b :where [?b :block/marker ?m] [(str "DO" "NE") ?m]]`, []string{"al1", "j24"}},
		{"entities compare", `[:find ?b :where [?b :block/page ?p] [?b :block/parent ?q] [(not= ?p ?q)]]`, []string{"px3"}},
		{"or-join bound outside", `[:find ?b :where [?b :block/marker _] (or-join [?b] [?b :block/priority "A"] (and [?b :block/page ?p] [?p :block/name "alice"]))]`, []string{"al1", "al2", "px1"}},
		{"lookup ref", `[:find ?b :where [?b :block/refs [:block/name "alice"]]]`, []string{"bob1", "j20b", "px2", "sec1"}},
		{"lookup ref entity", `[:find ?b :where [[:block/original-name "Alice"] :block/journal? ?j] [?b :block/page [:block/name "alice"]]]`, []string{"al1", "al2"}},
		{"lookup ref none", `[:find ?b :where [?b :block/refs [:block/name "nobody"]]]`, []string{}},
		{"lookup ref in a function", `[:find ?b :where [?b :block/page ?p] [(= ?p [:block/name "bob"])]]`, []string{"bob1"}},
		{"subs and count", `[:find ?s :where [?b :block/marker "LATER"] [?b :block/content ?c] [(subs ?c 11 14) ?s] [(count ?s) ?n] [(= ?n 3)]]`, []string{"al2"}},
		{"arithmetic", `[:find ?b :where [?b :block/properties ?pr] [(get ?pr :effort) ?e] [(* ?e 2) ?d] [(- ?d 1) ?x] [(inc ?x) ?y] [(= ?y 6)]]`, []string{"al2"}},
		{"name", `[:find ?n :where [(ground :block/marker) ?k] [(name ?k) ?n]]`, []string{"marker"}},
		{"no match constant", `[:find ?b :where [?b :block/marker "NOPE"]]`, []string{}},
	}
	for _, c := range cases {
		r, err := ev.Eval(context.Background(), g, c.q, nil, query.Options{})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := sorted(col0(r)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRows checks the rows' locations, order, columns and pulled maps.
func TestRows(t *testing.T) {
	_, g := loadFixture(t)
	ev := Evaluator{Now: fixedNow}
	r, err := ev.Eval(context.Background(), g, `[:find (pull ?b [*]) :where [?b :block/marker "TODO"]]`, nil, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Path then line order.
	if got, want := col0(r), []string{"j20", "lg1", "px1", "sec1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if !reflect.DeepEqual(r.Columns, []string{"?b"}) {
		t.Errorf("columns %v", r.Columns)
	}
	px1 := r.Rows[2]
	if px1.Path != "pages/Project X.md" || px1.Line != 5 || px1.Block != "6500aaaa-0000-4000-8000-000000000001" {
		t.Errorf("px1 row %+v", px1)
	}
	m := px1.Values[0].(map[string]any)
	want := map[string]any{
		"block/content":   "TODO [#A] px1 write the plan\nSCHEDULED: <2026-11-26 Thu>",
		"block/marker":    "TODO",
		"block/priority":  "A",
		"block/page":      "Project X",
		"block/parent":    "Project X",
		"block/path-refs": []any{"Project X"},
		"block/uuid":      "6500aaaa-0000-4000-8000-000000000001",
		"block/scheduled": int64(20261126),
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("pull [*] = %#v\nwant %#v", m, want)
	}
	// A chosen pattern, a nested pull, and the page's map.
	r, err = ev.Eval(context.Background(), g, `[:find (pull ?b [:block/content :block/properties {:block/page [:block/original-name :block/properties]}]) :where [?b :block/content ?c] [(clojure.string/includes? ?c "al2")]]`, nil, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantRow := query.Row{Path: "pages/Alice.md", Line: 5, Values: []any{map[string]any{
		"block/content":    "LATER [#B] al2 lunch",
		"block/properties": map[string]any{"owner": []any{"Bob", "Carol"}, "effort": int64(3)},
		"block/page":       map[string]any{"block/original-name": "Alice", "block/properties": map[string]any{"type": "person", "alias": []any{"Al"}}},
	}}}
	if len(r.Rows) != 1 || !reflect.DeepEqual(r.Rows[0], wantRow) {
		t.Errorf("nested pull = %#v\nwant %#v", r.Rows, wantRow)
	}
	// Aggregates, grouped; rows with no entity sort by value.
	r, err = ev.Eval(context.Background(), g, `[:find ?m (count ?b) :where [?b :block/marker ?m]]`, nil, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := [][]any{}
	for _, row := range r.Rows {
		got = append(got, row.Values)
		if row.Path != "" {
			t.Errorf("aggregate row has a path: %+v", row)
		}
	}
	wantAgg := [][]any{{"DOING", int64(1)}, {"DONE", int64(2)}, {"LATER", int64(1)}, {"TODO", int64(4)}}
	if !reflect.DeepEqual(got, wantAgg) || !reflect.DeepEqual(r.Columns, []string{"?m", "(count ?b)"}) {
		t.Errorf("count = %v %v, want %v", r.Columns, got, wantAgg)
	}
	r, err = ev.Eval(context.Background(), g, `[:find (count ?b) (min ?d) (max ?d) :where [?b :block/page ?p] [?p :block/journal-day ?d]]`, nil, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 1 || !reflect.DeepEqual(r.Rows[0].Values, []any{int64(4), int64(20261001), int64(20261124)}) {
		t.Errorf("count/min/max = %+v", r.Rows)
	}
	// sum, avg, count-distinct; :with keeps equal values apart.
	for q, want := range map[string][]any{
		`[:find (sum ?e) (avg ?e) :where [?x :block/properties ?p] [(get ?p :effort) ?e]]`:          {int64(8), 4.0},
		`[:find (count ?e) :where [?x :block/properties ?p] [(get ?p :type) ?e]]`:                   {int64(1)},
		`[:find (count ?e) :with ?x :where [?x :block/properties ?p] [(get ?p :type) ?e]]`:          {int64(2)},
		`[:find (count-distinct ?e) :with ?x :where [?x :block/properties ?p] [(get ?p :type) ?e]]`: {int64(1)},
	} {
		r, err := ev.Eval(context.Background(), g, q, nil, query.Options{})
		if err != nil || len(r.Rows) != 1 || !reflect.DeepEqual(r.Rows[0].Values, want) {
			t.Errorf("%s = %+v %v, want %v", q, r, err, want)
		}
	}
	// :keys names the columns; two columns, one row per distinct pair.
	r, err = ev.Eval(context.Background(), g, `[:find ?name ?type :keys name type :where [?p :block/properties ?pr] [(get ?pr :type) ?type] [?p :block/original-name ?name]]`, nil, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Columns, []string{"name", "type"}) || len(r.Rows) != 2 ||
		!reflect.DeepEqual(r.Rows[0], query.Row{Values: []any{"Alice", "person"}}) { // strings: no entity, no path
		t.Errorf(":keys = %v %+v", r.Columns, r.Rows)
	}
}

func TestFenceAndLimit(t *testing.T) {
	_, g := loadFixture(t)
	ev := Evaluator{Now: fixedNow}
	hidden := map[string]bool{"pages/Secret.md": true, "pages/Alice.md": true}
	opt := query.Options{Visible: func(p string) bool { return !hidden[p] }}
	cases := []struct {
		q    string
		want []string
	}{
		{`[:find ?b :where [?b :block/marker _]]`, []string{"j20", "j24", "lg1", "px1", "px3"}},
		// A hidden page is as absent: visible blocks that name it
		// reference a page that exists only by reference (no path, no
		// blocks). bob1's [[Al]] is the page "al": that Al is Alice's
		// alias is hidden with Alice.
		{`[:find ?b :where [?b :block/refs ?p]]`, []string{"bob1", "j20b", "j24", "lg1", "px2", "px3"}},
		{`[:find ?b :where [?p :block/name "alice"] [?b :block/path-refs ?p]]`, []string{"j20b", "px2", "px3"}},
		{`[:find ?b :where [?p :block/name "al"] [?b :block/refs ?p]]`, []string{"bob1"}},
		// Carol is named only in hidden Alice's al2: no page.
		{`[:find ?p :where [?p :block/name "carol"]]`, []string{}},
		{`[:find ?n :where (page-property ?p :type "person") [?p :block/original-name ?n]]`, []string{"Bob"}},
		{`[:find (count ?p) :where [?p :block/name]]`, []string{"?"}},
	}
	for _, c := range cases {
		r, err := ev.Eval(context.Background(), g, c.q, nil, opt)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if got := sorted(col0(r)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %v, want %v", c.q, got, c.want)
		}
	}
	r, err := ev.Eval(context.Background(), g, `[:find (count ?p) :where [?p :block/name]]`, nil, opt)
	// 11 pages, 2 hidden; alice, al and planning exist by reference.
	if err != nil || len(r.Rows) != 1 || r.Rows[0].Values[0] != int64(12) {
		t.Errorf("count of visible pages = %+v, %v", r, err)
	}
	r, err = ev.Eval(context.Background(), g, `[:find ?b :where [?b :block/marker "TODO"]]`, nil, query.Options{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := col0(r); !r.Truncated || !reflect.DeepEqual(got, []string{"j20", "lg1"}) {
		t.Errorf("limit 2: %v truncated %v", got, r.Truncated)
	}
	r, err = ev.Eval(context.Background(), g, `[:find ?b :where [?b :block/marker "TODO"]]`, nil, query.Options{Limit: 4})
	if err != nil || r.Truncated || len(r.Rows) != 4 {
		t.Errorf("limit 4: %+v %v", r, err)
	}
}

// TestInputs passes inputs from outside (the op's inputs), which replace
// the query map's.
func TestInputs(t *testing.T) {
	_, g := loadFixture(t)
	ev := Evaluator{Now: fixedNow}
	in, err := FromJSON([]any{":-30d", ":today", []any{"DONE"}})
	if err != nil {
		t.Fatal(err)
	}
	q := `{:query [:find ?b :in $ ?s ?e [?m ...] :where (between ?b ?s ?e) [?b :block/marker ?m]] :inputs [:-1d :today ["TODO"]]}`
	r, err := ev.Eval(context.Background(), g, q, in, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := col0(r); !reflect.DeepEqual(got, []string{"j24"}) {
		t.Errorf("inputs: %v", got)
	}
	r, err = ev.Eval(context.Background(), g, q, nil, query.Options{})
	if err != nil || len(r.Rows) != 0 {
		t.Errorf(":inputs of the map: %+v %v", r, err)
	}
	if _, err := FromJSON([]any{map[string]any{"a": 1.0}}); errs.Code(err) != errs.CodeInvalidInput {
		t.Errorf("object input: %v", err)
	}
}

func TestErrors(t *testing.T) {
	_, g := loadFixture(t)
	ev := Evaluator{Now: fixedNow, MaxRows: 50, MaxStrBytes: 1000}
	unsupportedCases := []struct{ q, construct string }{
		{`{:query [:find ?b :where [?b :block/marker _]] :result-transform (fn [r] r)}`, ":result-transform"},
		{`{:query [:find ?b :where [?b :block/marker _]] :view (fn [r] [:div r])}`, ":view"},
		{`{:query [:find ?b :in $ % :where (r ?b)] :rules [[(r ?b) [?b :block/marker _]]]}`, ":rules"},
		{`[:find ?b :in $ % :where [?b :block/marker _]]`, "rules (%)"},
		{`{:query (and (todo DOING) (priority A))}`, "simple query in :query"},
		{`{:query "(todo now)"}`, "simple query in :query"},
		{`[:find ?b :where [?b :block/left ?l]]`, "attribute :block/left"},
		{`[:find ?b :where [?b :block/file ?f]]`, "attribute :block/file"},
		{`[:find ?b :where [?b :foo/bar ?x]]`, "attribute :foo/bar"},
		{`{:query [:find ?b :in $ ?p :where [?b :block/page ?p]] :inputs [:current-page]}`, "input :current-page"},
		{`[:find ?b :where (my-rule ?b)]`, "rule (my-rule)"},
		{`[:find ?b :where [?b :block/content ?c] [(re-seq ?c ?c) ?x]]`, "function re-seq"},
		{`[:find ?b :where [?b ?a ?v]]`, "variable attribute"},
		{`[:find (pull ?b [:block/_parent]) :where [?b :block/name]]`, "reverse attribute :block/_parent"},
		{`[:find (distinct ?b) :where [?b :block/name]]`, "(distinct) in :find"},
		{`[:find ?b :where [?b :block/content ?c] [(str ?c) [?x ...]]]`, "collection, tuple or relation binding"},
		{`[:find ?b :where [?b :block/refs [:block/nope "x"]]]`, "attribute :block/nope"},
		{`[:find ?b :where [$2 ?b :block/name]]`, "source $2"},
		{`[:find ?a ?b :where [?a :block/content] [?b :block/content]]`, "more than 50 intermediate rows"},
		{`[:find ?s :where [?b :block/content ?c] [(str ?c ?c ?c) ?s]]`, "too many computed strings"},
		{`{:query [:find ?a ?b :in $ [?a ...] [?b ...]] :inputs [[1 2 3 4 5 6 7 8] [1 2 3 4 5 6 7 8]]}`, "more than 50 intermediate rows"},
	}
	for _, c := range unsupportedCases {
		_, err := ev.Eval(context.Background(), g, c.q, nil, query.Options{})
		e := errs.As(err)
		if e == nil || e.Code != errs.CodeUnsupportedQuery || e.Details["construct"] != c.construct {
			t.Errorf("%s: %v (%v), want unsupported_query construct %q", c.q, err, e, c.construct)
		}
	}
	invalidCases := []struct{ q, want string }{
		{``, "empty"},
		{`[:find`, "cannot read"},
		{`[:find ?b :where [?b :block/marker "x"]`, "cannot read"},
		{`{:query}`, "cannot read"},
		{`"a string"`, "a vector [:find"},
		{`[:where [?b :block/name]]`, "starts with :find"},
		{`[:find ?x :where [?b :block/marker _]]`, "?x in :find is not bound"},
		{`[:find ?b :where [?b :block/content ?c] [(> ?z 1)]]`, "?z in"},
		{"#+BEGIN_QUERY\n[:find ?b :where [?b :block/marker]]", "without #+END_QUERY"},
		{`[:find ?b :where [?b :block/marker]] [:find ?b]`, "text after"},
		{`[:find ?b :where ` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `]`, "nests deeper"},
		{`[:find ?b :where ` + strings.Repeat(`[?b :block/name "x"] `, 300) + `]`, "more than"},
		{strings.Repeat(" ", MaxQueryBytes+1), "longer than"},
		{`{:query [:find ?b :in $ ?x :where [?b :block/marker ?x]]}`, ":in takes 1 input(s), 0 given"},
		{`[:find ?b :where (or [?b :block/marker "A"] [?c :block/marker "B"]) (or-join [?b] [?c :block/name])]`, "does not use ?b"},
		{`[:find ?b :where [?b :block/content ?c] [(re-pattern "(") ?r]]`, "re-pattern"},
		{`[:find ?b :where (task ?b)]`, "takes 2 arguments"},
		{`[:find ?b :where [?b :block/content 18446744073709551616N]]`, "out of range"},
		{`[:find ?b ?b :keys a :where [?b :block/name]]`, ":keys names 1 columns"},
	}
	for _, c := range invalidCases {
		_, err := ev.Eval(context.Background(), g, c.q, nil, query.Options{})
		if errs.Code(err) != errs.CodeInvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.80q: %v (code %s), want validation_failed containing %q", c.q, err, errs.Code(err), c.want)
		}
	}
	// A string doubled per clause stops at 64 KiB, under the default caps.
	doubling := `[:find ?x :where [(ground "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") ?a] ` + strings.Repeat(`[(str ?a ?a) ?a1] [(str ?a1 ?a1) ?a2] [(str ?a2 ?a2) ?a3] [(str ?a3 ?a3) ?a4] [(str ?a4 ?a4) ?a5] [(str ?a5 ?a5) ?a6] [(str ?a6 ?a6) ?a7] [(str ?a7 ?a7) ?a8] [(str ?a8 ?a8) ?a9] [(str ?a9 ?a9) ?a10] [(str ?a10 ?a10) ?x]`, 1) + `]`
	if _, err := (Evaluator{}).Eval(context.Background(), g, doubling, nil, query.Options{}); errs.As(err) == nil || errs.As(err).Details["construct"] != "str longer than 64 KiB" {
		t.Errorf("doubling str: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ev.Eval(ctx, g, `[:find ?b :where [?b :block/name]]`, nil, query.Options{}); err == nil {
		t.Error("cancelled context: no error")
	}
}

// TestRegistered runs a query the way the query operation does: the
// language is told from the text, the graph read from the index.
func TestRegistered(t *testing.T) {
	ix, _ := loadFixture(t)
	r, err := query.Run(context.Background(), ix, "", `[:find (pull ?b [:block/content]) :where [?b :block/marker "DOING"]]`, query.Options{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.Language != query.LogseqAdvanced || len(r.Rows) != 1 || r.Rows[0].Path != "pages/Project X.md" || r.Rows[0].Line != 9 {
		t.Errorf("result %+v", r)
	}
	_, err = query.Run(context.Background(), ix, "", `{:query [:find ?b :where [?b :block/marker _]] :view (fn [x] x)}`, query.Options{})
	if errs.Code(err) != errs.CodeUnsupportedQuery {
		t.Errorf(":view: %v", err)
	}
}

func TestDetect(t *testing.T) {
	for _, q := range []string{`[:find ?b :where [?b :block/name]]`, `{:query [:find ?b]}`, `{:title "t" :query [:find ?b]}`,
		"#+BEGIN_QUERY\n[:find ?b]\n#+END_QUERY", "  \n{:title [:h2 \"x\"]\n :query []}"} {
		if got := query.Detect(q); got != query.LogseqAdvanced {
			t.Errorf("Detect(%q) = %q", q, got)
		}
	}
}
