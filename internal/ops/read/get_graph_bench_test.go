package read_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// BenchmarkGetGraph measures get_graph through the dispatch pipeline on a
// copy of obsidian-hub (skipped when absent): the whole graph at the web
// page's default limit (200) and at the maximum (2000), and a local graph
// of two hops, each alternated with list_tags (a whole-vault read of the
// same kind) as the baseline, reporting p50 and p99 of both.
//
//	go test ./internal/ops/read -run XXX -bench GetGraph -benchtime 100x
func BenchmarkGetGraph(b *testing.B) {
	env := opstest.CorpusEnv(b, "obsidian-hub")
	vh := env.Vaults[0]
	call := func(b *testing.B, name, js string) time.Duration {
		t0 := time.Now()
		res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "bench"}, name, json.RawMessage(js))
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		return time.Since(t0)
	}
	pct := func(ds []time.Duration, p int) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[min(len(s)-1, len(s)*p/100)]) / 1e6
	}
	// The edge list (cached per state of the notes, so this is the cache
	// hit and the fingerprint query), alternated with the query as it was
	// first written (DISTINCT and ORDER BY in SQL, no cache).
	b.Run("LinkEdges", func(b *testing.B) {
		var now, before []time.Duration
		for b.Loop() {
			t0 := time.Now()
			e, err := vh.Index.LinkEdges(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			now = append(now, time.Since(t0))
			t0 = time.Now()
			rows, err := vh.Index.DB.Query(`SELECT DISTINCT src_id, dst_id FROM links WHERE dst_id IS NOT NULL AND dst_id <> src_id ORDER BY src_id, dst_id`)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var s, d int64
				rows.Scan(&s, &d)
				n++
			}
			rows.Close()
			before = append(before, time.Since(t0))
			if n != len(e) {
				b.Fatalf("%d edges, the SQL DISTINCT has %d", len(e), n)
			}
		}
		b.ReportMetric(pct(now, 50), "p50-ms")
		b.ReportMetric(pct(now, 99), "p99-ms")
		b.ReportMetric(pct(before, 50), "sql-distinct-p50-ms")
		b.ReportMetric(pct(before, 99), "sql-distinct-p99-ms")
	})
	for _, js := range []string{`{}`, `{"limit": 2000}`, `{"path": "00 - Start here.md", "depth": 2}`} {
		b.Run(js, func(b *testing.B) {
			var g, base []time.Duration
			for b.Loop() {
				g = append(g, call(b, "get_graph", js))
				base = append(base, call(b, "list_tags", `{}`))
			}
			b.ReportMetric(pct(g, 50), "p50-ms")
			b.ReportMetric(pct(g, 99), "p99-ms")
			b.ReportMetric(pct(base, 50), "list_tags-p50-ms")
			b.ReportMetric(pct(base, 99), "list_tags-p99-ms")
		})
	}
}
