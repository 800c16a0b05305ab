package search_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

// hostileQueries are what a client could send to make a search expensive.
// Those past the limits (docs/search.md, "Limits") are refused with
// invalid_input; the rest must cost about as much as a normal query.
func hostileQueries() []struct{ name, q string } {
	common := strings.Fields("obsidian plugin note notes file community theme link graph daily template markdown vault folder page text search tag editor view settings mobile sync publish canvas code css image list table task date")
	var distinct, negs, phrases []string
	for i := 0; i < 2000; i++ {
		distinct = append(distinct, fmt.Sprintf("%s%d", common[i%len(common)], i))
	}
	for _, w := range common[:31] {
		negs = append(negs, "-"+w)
	}
	for i := 0; i+1 < len(common); i++ {
		phrases = append(phrases, `"`+common[i]+" "+common[i+1]+`"`)
	}
	return []struct{ name, q string }{
		{"a x1000", strings.Repeat("a ", 1000)},
		{"a x2000", strings.Repeat("a ", 2000)},
		{"plugin x500", strings.Repeat("plugin ", 500)},
		{"phrase x500", strings.Repeat(`"plugin theme" `, 250)},
		{"exclusion x500", "plugin " + strings.Repeat("-theme ", 500)},
		{"32 common words", strings.Join(common, " ")},
		{"31 phrases", strings.Join(phrases, " ")},
		{"31 exclusions", "plugin " + strings.Join(negs, " ")},
		{"64-word phrase", `"` + strings.Repeat("the ", 64) + `"`},
		{"4 one-letter prefixes", "s* c* p* t*"},
		{"2000 distinct words", strings.Join(distinct, " ")},
		{"CJK run of 100k", strings.Repeat("知识管理笔记方法", 12500)},
		{"long word", strings.Repeat("x", 100000)},
	}
}

// BenchmarkHostileQuery times, on obsidian-hub, each hostile query and a
// normal one ("plugin theme") in the same loop and reports both and their
// ratio (x-normal):
//
//	go test ./internal/search -run '^$' -bench HostileQuery -benchtime 10x
func BenchmarkHostileQuery(b *testing.B) {
	ctx := context.Background()
	ix := hubIndex(b, false)
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	for _, mode := range []string{search.ModeLexical, search.ModeHybrid} {
		for _, h := range hostileQueries() {
			b.Run(mode+"/"+h.name, func(b *testing.B) {
				var normal, hostile time.Duration
				refused := false
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if _, err := s.Search(ctx, search.Query{Text: "plugin theme", Mode: mode}); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					_, err := s.Search(ctx, search.Query{Text: h.q, Mode: mode})
					hostile += time.Since(t1)
					normal += t1.Sub(t0)
					if err != nil && errs.Code(err) != errs.CodeInvalidInput {
						b.Fatal(err)
					}
					refused = err != nil
				}
				n := float64(b.N)
				b.ReportMetric(float64(normal.Microseconds())/1000/n, "normal-ms")
				b.ReportMetric(float64(hostile.Microseconds())/1000/n, "hostile-ms")
				b.ReportMetric(float64(hostile)/float64(normal), "x-normal")
				if refused {
					b.ReportMetric(1, "refused")
				}
			})
		}
	}
}

// hubIndex opens and syncs an index of obsidian-hub (skipped when the
// corpus is absent), closed when the benchmark ends. LOCI_BENCH_INDEX names
// a directory that keeps the index between runs (so two binaries can
// alternate on one index); else it is built in a temporary folder.
func hubIndex(b *testing.B, noEmbed bool) *index.Index {
	b.Helper()
	v, err := vault.Open(testutil.Corpus(b, "obsidian-hub"), nil)
	if err != nil {
		b.Fatal(err)
	}
	dir := os.Getenv("LOCI_BENCH_INDEX")
	if dir == "" {
		dir = b.TempDir()
	}
	ix, err := index.Open(context.Background(), v, index.Options{Dir: dir, NoEmbed: noEmbed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); err != nil {
		b.Fatal(err)
	}
	return ix
}

// goldenQueries returns every query of the obsidian-help golden sets
// (testdata/golden): keyword, paraphrase, anchor, description and typo
// queries, as people and agents type them.
func goldenQueries(b *testing.B) []string {
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
			out = append(out, q.Query)
		}
	}
	return out
}

func pctMS(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(p*float64(len(s))))]) / 1e6
}

// BenchmarkSearchDistinct times search.Searcher.Search (no result cache:
// every call ranks, the case of a new query) on obsidian-hub over every
// golden-set query, in lexical and hybrid mode, three ways alternated
// query by query (so all three see the same load of a shared machine):
//
//   - plain: a Searcher without a Shared (statements prepared per call,
//     titles read every time, every pass ranked by FTS5);
//   - cold: with a Shared that forgot its titles and terms before the
//     call (statements kept): a query whose words nothing asked before;
//   - new: with a Shared kept across the round, forgotten at its start:
//     each query is asked once, and finds kept only the titles and terms
//     of the round's earlier, different queries.
//
// It reports each way's p50 and p99 latency and mean CPU time (the
// process's, per call: the steadier figure on a loaded machine) in ms.
// LOCI_BENCH_INDEX names a directory that keeps the index between runs
// (so two binaries can alternate on one index); LOCI_BENCH_CPUPROFILE, a
// file that gets the CPU profile of the timed loops only, each call
// labelled with its way (go tool pprof -tagfocus variant=new):
//
//	go test ./internal/search -run '^$' -bench SearchDistinct -benchtime 3x
func BenchmarkSearchDistinct(b *testing.B) {
	ctx := context.Background()
	ix := hubIndex(b, false)
	queries := goldenQueries(b)
	if f := os.Getenv("LOCI_BENCH_CPUPROFILE"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			b.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); out.Close() }()
	}
	cold, kept := search.NewShared(ix.DB), search.NewShared(ix.DB)
	defer cold.Close()
	defer kept.Close()
	ways := []struct {
		name string
		sh   *search.Shared
	}{{"plain", nil}, {"cold", cold}, {"new", kept}}
	for _, mode := range []string{search.ModeLexical, search.ModeHybrid} {
		b.Run(mode, func(b *testing.B) {
			// call returns the wall and CPU time of one search.
			call := func(q, way string, sh *search.Shared) (time.Duration, time.Duration) {
				s := &search.Searcher{DB: ix.DB, Vectors: ix, Shared: sh} // as ops does, one per call
				var err error
				c0, t0 := processCPU(), time.Now()
				pprof.Do(ctx, pprof.Labels("variant", way), func(ctx context.Context) {
					_, err = s.Search(ctx, search.Query{Text: q, Mode: mode})
				})
				w, c := time.Since(t0), processCPU()-c0
				if err != nil {
					b.Fatal(err)
				}
				return w, c
			}
			for _, q := range queries { // warm up: matrix, statements, page cache
				for _, w := range ways {
					call(q, w.name, w.sh)
				}
			}
			wall := make([][]time.Duration, len(ways))
			cpu := make([][]time.Duration, len(ways))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				kept.Forget()
				for _, q := range queries {
					for k, w := range ways {
						if w.sh == cold {
							cold.Forget()
						}
						d, c := call(q, w.name, w.sh)
						wall[k], cpu[k] = append(wall[k], d), append(cpu[k], c)
					}
				}
			}
			b.StopTimer()
			for k, w := range ways {
				b.ReportMetric(pctMS(wall[k], 0.5), w.name+"-p50-ms")
				b.ReportMetric(pctMS(wall[k], 0.99), w.name+"-p99-ms")
				b.ReportMetric(meanMS(cpu[k]), w.name+"-cpu-ms")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

func meanMS(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum) / float64(max(1, len(ds))) / 1e6
}

// BenchmarkFTSLimitParam compares, on obsidian-hub, one prepared FTS5
// statement with a bare `LIMIT ?` against the same with `LIMIT ?+0` (what
// the searcher writes; see Searcher.query), alternated call by call, and
// reports the CPU per call of each in µs: SQLite prepares the first again
// on every call.
//
//	go test ./internal/search -run '^$' -bench FTSLimitParam -benchtime 2000x
func BenchmarkFTSLimitParam(b *testing.B) {
	ctx := context.Background()
	ix := hubIndex(b, true)
	words := []string{`"zettelkasten"`, `"Zettelkasten"`, `"ZETTELKASTEN"`} // one term, three texts
	var stmts [2]*sql.Stmt
	var err error
	for i, lim := range []string{"?", "?+0"} {
		if stmts[i], err = ix.DB.PrepareContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT "+lim+")"); err != nil {
			b.Fatal(err)
		}
		defer stmts[i].Close()
	}
	var cpu [2]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, st := range stmts {
			var n int
			c0 := processCPU()
			if err := st.QueryRowContext(ctx, words[i%len(words)], 1001).Scan(&n); err != nil {
				b.Fatal(err)
			}
			cpu[k] += processCPU() - c0
		}
	}
	b.ReportMetric(float64(cpu[0].Microseconds())/float64(b.N), "limit-param-cpu-us")
	b.ReportMetric(float64(cpu[1].Microseconds())/float64(b.N), "limit-plus0-cpu-us")
}
