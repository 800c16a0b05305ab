package dataview

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/testutil"
)

// hubQueries are typical Dataview queries over the obsidian-hub corpus.
var hubQueries = []string{
	`LIST FROM #seedling`,
	`LIST FROM #seedling AND -#MOC LIMIT 20`,
	`TABLE file.name, file.tags FROM "01 - Community" SORT file.name LIMIT 50`,
	`TABLE publish, aliases WHERE publish = true AND length(aliases) > 0 SORT file.name LIMIT 50`,
	`TASK WHERE !completed`,
	`LIST FROM "04 - Guides, Workflows, & Courses" SORT file.mtime DESC LIMIT 20`,
	`LIST FROM [[Obsidian community plugins]]`,
	`LIST FROM [[Plugins]] or outgoing([[Plugins]])`,
	`TABLE length(file.inlinks) AS "in" WHERE length(file.inlinks) > 5 SORT file.name DESC LIMIT 20`,
	`LIST WHERE contains(file.name, "Obsidian") AND file.mtime > date(2000-01-01)`,
	`TABLE length(rows) AS n FROM "01 - Community" GROUP BY file.folder`,
}

// TestCorpusObsidianHub runs typical queries over the obsidian-hub corpus
// (read-only: the index goes to a temp dir). None may fail; it logs p50
// and p99 per query and asserts no timing.
func TestCorpusObsidianHub(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus test")
	}
	root := testutil.Corpus(t, "obsidian-hub")
	ix := indexOf(t, root)
	ctx := context.Background()
	start := time.Now()
	if _, err := Eval(ctx, ix, `LIST LIMIT 1`, query.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("first query (loads the model): %.2fms", ms(time.Since(start)))
	fence := query.Options{Limit: 200, Visible: func(p string) bool { return !strings.HasPrefix(p, "06 - Inbox/") }}
	start = time.Now()
	if _, err := Eval(ctx, ix, `LIST LIMIT 1`, fence); err != nil {
		t.Fatal(err)
	}
	t.Logf("first fenced query (builds its view): %.2fms", ms(time.Since(start)))
	const rounds = 100
	for _, q := range hubQueries {
		for _, fenced := range []bool{false, true} {
			opt := query.Options{Limit: 200}
			if fenced {
				opt = fence
			}
			var times []time.Duration
			var n int
			for round := 0; round < rounds; round++ {
				start := time.Now()
				r, err := Eval(ctx, ix, q, opt)
				times = append(times, time.Since(start))
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				n = len(r.Rows)
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			t.Logf("fenced %-5v p50 %7.2fms p99 %7.2fms rows %4d  %s", fenced, ms(times[len(times)/2]), ms(times[len(times)*99/100]), n, q)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
