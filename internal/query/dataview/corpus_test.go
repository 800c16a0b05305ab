package dataview

import (
	"context"
	"fmt"
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

// BenchmarkHubLoad measures the first query after a change on the
// obsidian-hub corpus: "edit" changes one note (its hash, as a sync of
// an edit does) and "bump" only moves the content revision (no note
// changed: what is cached is read again in full); a query without links
// and one with them.
func BenchmarkHubLoad(b *testing.B) {
	root := testutil.Corpus(b, "obsidian-hub")
	ix := indexOf(b, root)
	ctx := context.Background()
	for _, c := range []struct{ name, q string }{
		{"nolinks", `LIST FROM #MOC SORT file.name`},
		{"links", `TABLE length(file.inlinks) AS "in" WHERE length(file.inlinks) > 5 SORT file.name DESC LIMIT 20`},
	} {
		for _, change := range []string{"edit", "bump"} {
			b.Run(c.name+"/"+change, func(b *testing.B) {
				if _, err := Eval(ctx, ix, c.q, query.Options{}); err != nil {
					b.Fatal(err)
				}
				reads := linkReads.Load()
				var cpu time.Duration
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					if change == "edit" {
						if _, err := ix.DB.ExecContext(ctx, `UPDATE notes SET hash = ? WHERE id = (SELECT min(id) FROM notes)`, fmt.Sprint("bench", i)); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := ix.DB.ExecContext(ctx, `UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'content_rev'`); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					before := cpuTime()
					if _, err := Eval(ctx, ix, c.q, query.Options{}); err != nil {
						b.Fatal(err)
					}
					cpu += cpuTime() - before
				}
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(linkReads.Load()-reads)/float64(b.N), "full-link-reads/op")
			})
		}
	}
}
