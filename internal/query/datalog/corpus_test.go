package datalog

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/query/graph"
	"github.com/loci-dev/loci/internal/testutil"
)

// corpusQueries are typical advanced queries, most of them from the
// Logseq docs' own "Advanced Queries" page.
var corpusQueries = []struct {
	q        string
	nonEmpty bool
}{
	{`{:title "All tasks" :query [:find (pull ?b [*]) :where [?b :block/marker _]]}`, true},
	{`{:title "All blocks with tag project" :query [:find (pull ?b [*]) :where [?p :block/name "project"] [?b :block/refs ?p]]}`, false},
	{`{:query [:find (pull ?b [*]) :in $ ?start ?today ?tag :where (between ?b ?start ?today) (page-ref ?b ?tag)] :inputs [:-7d :today "datalog"]}`, false},
	{`{:title "TODO tasks" :query [:find (pull ?b [*]) :where (task ?b #{"TODO"})]}`, true},
	{`{:title "All page tags" :query [:find ?tag-name :where [?tag :block/name ?tag-name]]}`, true},
	{`{:query [:find ?name :in $ ?tag :where [?t :block/name ?tag] [?p :block/tags ?t] [?p :block/name ?name]] :inputs ["programming"]}`, false},
	{`{:query [:find (pull ?b [*]) :where (property ?b :type "programming_lang")]}`, false},
	{`{:query [:find (pull ?b [*]) :in $ ?start ?today :where (task ?b #{"NOW" "LATER" "TODO" "DOING"}) (between ?b ?start ?today)] :inputs [:-56d :today] :collapsed? false}`, false},
	{`{:query [:find (pull ?block [*]) :in $ ?start ?next :where (or [?block :block/scheduled ?d] [?block :block/deadline ?d]) [(> ?d ?start)] [(< ?d ?next)]] :inputs [:today :+7d]}`, false},
	{`[:find (count ?b) :where [?p :block/name "advanced queries"] [?b :block/page ?p]]`, true},
	{`[:find ?name (count ?b) :where [?b :block/path-refs ?p] [?p :block/original-name ?name]]`, true},
	{`[:find (pull ?b [*]) :where [?b :block/content ?c] [(clojure.string/includes? ?c "query")] (not [?b :block/marker _])]`, true},
	{`[:find (pull ?p [:block/original-name :block/properties]) :where [?p :block/properties ?props] [(get ?props :alias) ?a]]`, false},
	{`[:find ?b :where [?p :block/journal? true] [?b :block/page ?p] [?b :block/refs ?r] [?r :block/name "query"]]`, false},
}

// TestCorpusLogseqDocs runs the queries over the Logseq documentation
// graph: none may fail. It logs the graph load time and p50/p99 of the
// evaluations (the graph loaded once) and asserts no timing.
func TestCorpusLogseqDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus test")
	}
	root := testutil.Corpus(t, "logseq-docs")
	ix := indexOf(t, root)
	var loads []time.Duration
	var g *graph.Graph
	for i := 0; i < 5; i++ {
		start := time.Now()
		var err error
		if g, err = graph.Load(context.Background(), ix.DB); err != nil {
			t.Fatal(err)
		}
		loads = append(loads, time.Since(start))
	}
	sort.Slice(loads, func(i, j int) bool { return loads[i] < loads[j] })
	t.Logf("graph: %d pages, %d blocks; load p50 %v", len(g.Pages), len(g.Blocks), loads[2])
	ev := Evaluator{Now: func() time.Time { return time.Date(2022, 6, 1, 0, 0, 0, 0, time.UTC) }}
	var times []time.Duration
	for round := 0; round < 10; round++ {
		for _, c := range corpusQueries {
			start := time.Now()
			r, err := ev.Eval(context.Background(), g, c.q, nil, query.Options{Limit: 50})
			times = append(times, time.Since(start))
			if err != nil {
				t.Fatalf("%s: %v", c.q, err)
			}
			if round == 0 {
				t.Logf("%-70.70s %d rows (truncated %v)", c.q, len(r.Rows), r.Truncated)
				if c.nonEmpty && len(r.Rows) == 0 {
					t.Errorf("%s: no rows", c.q)
				}
			}
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	t.Logf("%d evaluations: p50 %v, p99 %v, max %v", len(times), times[len(times)/2], times[len(times)*99/100], times[len(times)-1])
}

// BenchmarkCorpusLogseqDocs evaluates the corpus queries once per
// iteration over the loaded Logseq docs graph (the graph load is not
// timed).
func BenchmarkCorpusLogseqDocs(b *testing.B) {
	root := testutil.Corpus(b, "logseq-docs")
	ix := indexOf(b, root)
	g, err := graph.Load(context.Background(), ix.DB)
	if err != nil {
		b.Fatal(err)
	}
	ev := Evaluator{Now: func() time.Time { return time.Date(2022, 6, 1, 0, 0, 0, 0, time.UTC) }}
	b.ResetTimer()
	for b.Loop() {
		for _, c := range corpusQueries {
			if _, err := ev.Eval(context.Background(), g, c.q, nil, query.Options{Limit: 50}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
