package lsimple

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/testutil"
)

// TestCorpusLogseqDocs runs typical queries (most of them taken from the
// docs themselves) over the Logseq documentation graph. The corpus is
// read-only to us: the index goes to a temp dir. It logs p50/p99 times
// and asserts no timing.
func TestCorpusLogseqDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus test")
	}
	root := testutil.Corpus(t, "logseq-docs")
	ix := indexOf(t, root)
	queries := []struct {
		q        string
		nonEmpty bool
	}{
		{`{{query (property type book)}}`, false},
		{`{{query [[tag1]]}}`, false},
		{`{{query (or [[tag1]] [[tag2]])}}`, false},
		{`{{query (and [[tag2]] (not [[tag1]]))}}`, false},
		{`{{query (between [[Dec 5th, 2020]] [[Dec 7th, 2020]] )}}`, false},
		{`{{query (page-tags embed)}}`, false},
		{`{{query (page-property tags)}}`, true},
		{`{{query (namespace [[term]])}}`, false},
		{`{{query (page "term/alias")}}`, false},
		{`(and (task TODO DOING LATER NOW) (not (priority a)))`, false},
		{`(and "query" (between -10y today))`, false},
		{`{{query Something you're looking for}}`, false},
		{`"logseq"`, true},
		{`[[query]]`, true},
		{`((634fb9a8-cab9-441e-b476-41fa828010ea))`, true},
		{`(all-page-tags)`, true},
		{`(and (property type) (sort-by type asc))`, true},
		{`(and "logseq" (sample 5))`, true},
	}
	ev := Evaluator{Now: func() time.Time { return time.Date(2022, 6, 1, 0, 0, 0, 0, time.UTC) }}
	var times []time.Duration
	for round := 0; round < 5; round++ {
		for _, c := range queries {
			start := time.Now()
			r, err := ev.Eval(context.Background(), ix, c.q, 50)
			times = append(times, time.Since(start))
			if err != nil {
				t.Fatalf("%s: %v", c.q, err)
			}
			if round == 0 {
				t.Logf("%-60s %s: %d", c.q, r.Kind, r.Total)
				if c.nonEmpty && r.Total == 0 {
					t.Errorf("%s: no rows", c.q)
				}
			}
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	t.Logf("%d evaluations: p50 %v, p99 %v", len(times), times[len(times)/2], times[len(times)*99/100])
}
