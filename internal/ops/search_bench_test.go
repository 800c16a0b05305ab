package ops_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/testutil"
)

// benchQueries are the first n queries of the obsidian-help golden sets
// (testdata/golden): keyword, paraphrase, syntax, non-English, anchor,
// description and typo queries, as people and agents type them.
func benchQueries(b *testing.B, n int) []string {
	var out []string
	for _, f := range []string{"obsidian-help-en.json", "obsidian-help-en-anchor.json", "obsidian-help-en-fields.json", "obsidian-help-en-typos.json"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", f))
		if err != nil {
			b.Fatal(err)
		}
		var set []struct{ Query string }
		if err := json.Unmarshal(raw, &set); err != nil {
			b.Fatal(err)
		}
		for _, q := range set {
			if len(out) < n {
				out = append(out, q.Query)
			}
		}
	}
	return out
}

func pct(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, int(p*float64(len(s))))
	return float64(s[i].Microseconds()) / 1000
}

// BenchmarkSearchNotesInProcess runs 50 golden-set queries through
// search_notes in-process (the registry's dispatch, as an MCP session
// does) on an obsidian-hub index, in lexical and hybrid mode, and reports
// the p50 and p99 latency in ms of each variant, measured in one loop:
//
//   - nocache: the result cache off (every call ranks);
//   - distinct: cache on, each query asked once after the cache was
//     cleared (every call a miss: what the cache costs);
//   - repeat: the same query again (every call a hit).
//
// The variants of one query run back to back (the machine's load changes
// slowly), and the p50 and p99 are over every call of the variant.
//
// Run:
//
//	go test ./internal/ops -run '^$' -bench SearchNotesInProcess -benchtime 5x
func BenchmarkSearchNotesInProcess(b *testing.B) {
	hub := testutil.Corpus(b, "obsidian-hub")
	ctx := context.Background()
	env := opstest.IndexedEnv(b, hub, index.SyncOptions{})
	vh := env.Vaults[0]
	queries := benchQueries(b, 50)
	for _, mode := range []string{"lexical", "hybrid"} {
		ins := make([]json.RawMessage, len(queries))
		for i, q := range queries {
			ins[i], _ = json.Marshal(map[string]any{"query": q, "mode": mode, "limit": 10})
		}
		b.Run(mode, func(b *testing.B) {
			call := func(in json.RawMessage) time.Duration {
				t0 := time.Now()
				res := opstest.Reg.Call(ctx, env, ops.Caller{Surface: "mcp", Session: "bench"}, "search_notes", in)
				d := time.Since(t0)
				if res.Err != nil {
					b.Fatal(res.Err)
				}
				return d
			}
			for _, in := range ins { // warm up: matrix, statements
				call(in)
			}
			var nocache, distinct, repeat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// The three variants of one query run back to back, so
				// they see the same load of a shared machine.
				for _, in := range ins {
					restore := ops.SetSearchCache(vh, false)
					nocache = append(nocache, call(in))
					restore()
					ops.ResetSearchCache(vh)
					distinct = append(distinct, call(in))
					repeat = append(repeat, call(in))
				}
			}
			b.StopTimer()
			for _, v := range []struct {
				name string
				ds   []time.Duration
			}{{"nocache", nocache}, {"distinct", distinct}, {"repeat", repeat}} {
				b.ReportMetric(pct(v.ds, 0.5), v.name+"-p50-ms")
				b.ReportMetric(pct(v.ds, 0.99), v.name+"-p99-ms")
			}
		})
	}
}
