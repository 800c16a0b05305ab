// Command embedbench measures semantic retrieval's costs on a real vault:
//
//   - the built-in embedder's throughput (chunks/s) on the vault's own
//     chunks, and the one-off load of its word vectors;
//   - a full index with built-in embeddings as a ratio to a lexical-only
//     full index of the same vault (median of -runs each);
//   - query latency in-process (p50/p99) for lexical, semantic and hybrid
//     over the same queries;
//   - memory of the in-memory vectors per 10,000 chunks (float32 and int8).
//
// Usage: go run ./bench/embedbench [-vault DIR] [-queries 200] [-runs 3]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/bench/internal/benchstat"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/textseg"
	"github.com/loci-dev/loci/internal/vault"
)

func main() {
	vaultDir := flag.String("vault", "", "vault to measure (default ../shared/corpora/obsidian-hub)")
	nq := flag.Int("queries", 200, "number of queries")
	runs := flag.Int("runs", 3, "full-index runs per variant (the median is reported)")
	flag.Parse()
	ctx := context.Background()
	if *vaultDir == "" {
		*vaultDir = filepath.Join("..", "shared", "corpora", "obsidian-hub")
	}
	if _, err := os.Stat(*vaultDir); err != nil {
		fmt.Printf("skip: vault %s not found (needs ../shared beside the repo)\n", *vaultDir)
		return
	}
	fmt.Printf("machine: %d CPUs, GOMAXPROCS %d, %s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	tmp, err := os.MkdirTemp("", "loci-embedbench-")
	if err != nil {
		benchstat.Fail(err)
	}
	defer os.RemoveAll(tmp)
	v, err := vault.Open(*vaultDir, nil)
	if err != nil {
		benchstat.Fail(err)
	}

	// The built-in model's one-off load (decompress + parse the embedded data).
	t0 := time.Now()
	id := embed.Builtin().Identity()
	load := time.Since(t0)
	fmt.Printf("built-in embedder %s: loaded in %.0f ms\n\n", id, benchstat.MS(load))

	// Full index: lexical only vs with built-in embeddings.
	var lexT, embT, passT []time.Duration
	var notes, chunks int
	for r := 0; r < *runs; r++ {
		for _, withEmbed := range []bool{false, true} {
			dir := filepath.Join(tmp, fmt.Sprintf("idx-%d-%v", r, withEmbed))
			ix, err := index.Open(ctx, v, index.Options{Dir: dir, NoEmbed: !withEmbed})
			if err != nil {
				benchstat.Fail(err)
			}
			t := time.Now()
			res, err := ix.Sync(ctx, index.SyncOptions{})
			if err != nil {
				benchstat.Fail(err)
			}
			d := time.Since(t)
			notes = res.Indexed
			ix.DB.QueryRow("SELECT COUNT(*) FROM chunks").Scan(&chunks)
			if withEmbed {
				embT = append(embT, d)
				passT = append(passT, time.Duration(res.Embed.Millis)*time.Millisecond)
			} else {
				lexT = append(lexT, d)
			}
			ix.Close()
			os.RemoveAll(dir)
		}
	}
	lex, emb := median(lexT), median(embT)
	fmt.Printf("vault %s: %d notes, %d chunks\n", *vaultDir, notes, chunks)
	fmt.Printf("  full index, lexical only      %7.0f ms\n", benchstat.MS(lex))
	fmt.Printf("  full index, built-in vectors  %7.0f ms   %.2fx the lexical-only index (embedding pass %.0f ms; the model was loaded above)\n", benchstat.MS(emb), float64(emb)/float64(lex), benchstat.MS(median(passT)))

	// Throughput of the embedder alone on the vault's chunk texts.
	ix, err := index.Open(ctx, v, index.Options{Dir: filepath.Join(tmp, "idx")})
	if err != nil {
		benchstat.Fail(err)
	}
	defer ix.Close()
	if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
		benchstat.Fail(err)
	}
	rows, err := ix.DB.QueryContext(ctx, "SELECT heading_path, text FROM chunks")
	if err != nil {
		benchstat.Fail(err)
	}
	var texts []string
	var bytes int
	for rows.Next() {
		var hp, text string
		rows.Scan(&hp, &text)
		texts = append(texts, index.ChunkEmbedText(hp, text))
		bytes += len(texts[len(texts)-1])
	}
	rows.Close()
	best := time.Duration(1 << 62)
	for r := 0; r < 3; r++ {
		t := time.Now()
		if _, err := embed.Builtin().Embed(ctx, texts); err != nil {
			benchstat.Fail(err)
		}
		best = min(best, time.Since(t))
	}
	fmt.Printf("  built-in embedding            %7.0f ms   %8.0f chunks/s (%.1f MB/s, %d workers)\n", benchstat.MS(best), float64(len(texts))/best.Seconds(), float64(bytes)/1e6/best.Seconds(), runtime.GOMAXPROCS(0))
	// Batches under 64 texts run on the calling goroutine: one worker.
	t := time.Now()
	for i := 0; i < len(texts); i += 63 {
		embed.Builtin().Embed(ctx, texts[i:min(i+63, len(texts))])
	}
	fmt.Printf("  built-in embedding, 1 worker  %7.0f ms   %8.0f chunks/s\n", benchstat.MS(time.Since(t)), float64(len(texts))/time.Since(t).Seconds())

	// Memory of the vectors in memory.
	m, err := ix.VectorMatrix(ctx)
	if err != nil {
		benchstat.Fail(err)
	}
	per10k := func(b int64) float64 { return float64(b) / float64(m.Rows) * 10000 / (1 << 20) }
	fmt.Printf("  vectors in memory             %7.2f MB for %d chunks = %.2f MB per 10,000 chunks (float32, %d dims)\n", float64(m.Bytes())/(1<<20), m.Rows, per10k(m.Bytes()), m.Dims)
	b8 := embed.NewMatrixBuilder(m.Dims, true, m.Rows)
	for r := 0; r < m.Rows; r++ {
		b8.Add(int64(r), int64(r), m.Row(r))
	}
	m8 := b8.Matrix()
	fmt.Printf("                                %7.2f MB int8 = %.2f MB per 10,000 chunks; a 1536-dim remote model: %.1f MB (float32) / %.1f MB (int8) per 10,000\n",
		float64(m8.Bytes())/(1<<20), per10k(m8.Bytes()), 10000*float64(1536*4+12)/(1<<20), 10000*float64(1536+16)/(1<<20))

	// Queries.
	qs := makeQueries(ctx, ix, *nq)
	srch := &search.Searcher{DB: ix.DB, Vectors: ix}
	for _, mode := range []string{search.ModeLexical, search.ModeSemantic, search.ModeHybrid} {
		var ds []time.Duration
		for round := 0; round < 2; round++ { // round 0 warms caches
			ds = ds[:0]
			for _, q := range qs {
				t := time.Now()
				if _, err := srch.Search(ctx, search.Query{Text: q, Limit: 10, Mode: mode}); err != nil {
					benchstat.Fail(fmt.Errorf("%s %q: %w", mode, q, err))
				}
				ds = append(ds, time.Since(t))
			}
		}
		fmt.Printf("  %d queries %-8s        p50 %6.2f ms  p99 %6.2f ms\n", len(qs), mode, benchstat.MS(benchstat.Pct(ds, 50)), benchstat.MS(benchstat.Pct(ds, 99)))
	}
	// Query embedding alone (cache bypassed: distinct texts).
	t = time.Now()
	for i, q := range qs {
		embed.Builtin().Embed(ctx, []string{fmt.Sprint(q, " ", i)})
	}
	fmt.Printf("  query embedding (built-in)    %6.3f ms each\n", benchstat.MS(time.Since(t))/float64(len(qs)))
}

func makeQueries(ctx context.Context, ix *index.Index, n int) []string {
	rows, err := ix.DB.QueryContext(ctx, "SELECT title FROM notes ORDER BY path")
	if err != nil {
		benchstat.Fail(err)
	}
	var words []string
	for rows.Next() {
		var t string
		rows.Scan(&t)
		for _, w := range textseg.Words(t) {
			if len(w.Text) >= 4 && !w.Segmented {
				words = append(words, strings.ToLower(w.Text))
			}
		}
	}
	rows.Close()
	rng := rand.New(rand.NewSource(1))
	pick := func() string { return words[rng.Intn(len(words))] }
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 0:
			out = append(out, pick())
		case 1:
			out = append(out, pick()+" "+pick())
		default:
			out = append(out, "how do I "+pick()+" my "+pick()+" notes")
		}
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
