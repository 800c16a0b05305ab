// Command annbench measures the approximate vector index (IVF-flat,
// internal/embed/matrix_ivf.go) against the exact scan on the same rows:
// recall@10 of the note ranking (TopNotes, what hybrid search runs) and of
// the section ranking (TopChunks), query time p50/p99 of both, build time
// and memory, for each number of lists probed.
//
//	go run ./bench/annbench -n 300000,1000000 [-queries 1000] [-probe 16,32,48,64]
//	go run ./bench/annbench -vault DIR [-max 400000] ...
//
// Without -vault the rows are synthetic, clustered like text embeddings
// (deterministic): n/100 topics in 20 areas, each row its topic's
// direction plus noise (cosine ≈ 0.7 with its topic), ~3 rows a note;
// queries are drawn the same way and are not rows. With -vault the rows
// are the built-in embedder's vectors of the vault's paragraphs (Markdown
// files split at blank lines; e.g. a bench/scalebench vault) and the
// queries are 3–6 words of held-out paragraphs.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/bench/internal/benchstat"
	"github.com/loci-dev/loci/internal/embed"
)

func main() {
	ns := flag.String("n", "300000", "comma-separated row counts (synthetic)")
	vault := flag.String("vault", "", "embed these vaults' paragraphs (comma-separated folders) instead of synthetic rows")
	maxRows := flag.Int("max", 400000, "with -vault: at most this many rows")
	nq := flag.Int("queries", 1000, "queries")
	probes := flag.String("probe", "8,16,32,48,64,96", "comma-separated lists probed")
	lf := flag.Float64("lists", 2, "lists per √rows")
	flag.Parse()
	embed.SetANNListsPerSqrt(*lf)
	dims := embed.Builtin().Identity().Dims
	fmt.Printf("machine: %d CPUs, GOMAXPROCS %d, %s; %d dims\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), dims)
	if *vault != "" {
		rows, notes, queries := vaultRows(*vault, *maxRows, *nq)
		run(fmt.Sprintf("vault %s", filepath.Base(*vault)), rows, notes, queries, dims, *probes)
		return
	}
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "bad -n", f)
			os.Exit(2)
		}
		rows, notes, queries := synthetic(n, *nq, dims)
		run(fmt.Sprintf("synthetic %d", n), rows, notes, queries, dims, *probes)
	}
}

// synthetic draws n clustered unit rows and nq queries from the same mixture.
func synthetic(n, nq, dims int) ([][]float32, []int64, [][]float32) {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	gauss := func(scale float32, base []float32) []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = scale * float32(r.NormFloat64())
			if base != nil {
				v[i] += base[i]
			}
		}
		return embed.Normalize(v)
	}
	areas := make([][]float32, 20)
	for i := range areas {
		areas[i] = gauss(1, nil)
	}
	topics := make([][]float32, max(10, n/100))
	for i := range topics {
		topics[i] = gauss(0.12, areas[r.IntN(len(areas))])
	}
	draw := func() []float32 { return gauss(0.1, topics[r.IntN(len(topics))]) }
	rows := make([][]float32, n)
	notes := make([]int64, n)
	for i := range rows {
		rows[i] = draw()
		notes[i] = int64(i/3 + 1)
	}
	qs := make([][]float32, nq)
	for i := range qs {
		qs[i] = draw()
	}
	return rows, notes, qs
}

// vaultRows embeds the vault's paragraphs (one note per file) and makes
// queries of 3–6 words of other paragraphs.
func vaultRows(roots string, maxRows, nq int) ([][]float32, []int64, [][]float32) {
	var texts []string
	var notes []int64
	var held []string
	var note int64
	seen := map[string]bool{} // identical paragraphs (translations' code blocks, boilerplate) once: ties make recall meaningless
	r := rand.New(rand.NewPCG(3, 4))
	for _, root := range strings.Split(roots, ",") {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") || len(texts) >= maxRows {
				if d != nil && d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != root {
					return filepath.SkipDir
				}
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			note++
			for _, para := range strings.Split(string(b), "\n\n") {
				para = strings.TrimSpace(para)
				if len(para) < 40 || strings.HasPrefix(para, "---") || seen[para] {
					continue
				}
				seen[para] = true
				if r.IntN(50) == 0 && len(held) < nq {
					held = append(held, para)
					continue
				}
				texts = append(texts, para)
				notes = append(notes, note)
			}
			return nil
		})
	}
	t := time.Now()
	rows := embedAll(texts)
	fmt.Printf("embedded %d paragraphs of %d notes in %.1f s\n", len(rows), note, time.Since(t).Seconds())
	var qtexts []string
	for _, h := range held {
		w := strings.Fields(h)
		k := min(len(w), 3+r.IntN(4))
		s := r.IntN(len(w) - k + 1)
		qtexts = append(qtexts, strings.Join(w[s:s+k], " "))
	}
	return rows, notes, embedAll(qtexts)
}

func embedAll(texts []string) [][]float32 {
	p := embed.Builtin()
	var out [][]float32
	for i := 0; i < len(texts); i += 256 {
		vs, err := p.Embed(context.Background(), texts[i:min(len(texts), i+256)])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out = append(out, vs...)
	}
	return out
}

func build(rows [][]float32, notes []int64, dims, annMin int, quant bool) (*embed.Matrix, time.Duration) {
	b := embed.NewMatrixBuilder(dims, quant, len(rows))
	b.ApproxFrom(annMin)
	for i, v := range rows {
		b.Add(notes[i], int64(i+1), v)
	}
	t := time.Now()
	m := b.Matrix()
	return m, time.Since(t)
}

func run(name string, rows [][]float32, notes []int64, queries [][]float32, dims int, probes string) {
	fmt.Printf("\n== %s: %d rows, %d queries\n", name, len(rows), len(queries))
	exact, te := build(rows, notes, dims, 0, false)
	exact8, _ := build(rows, notes, dims, 0, true)
	approx, ta := build(rows, notes, dims, 1, true)
	fmt.Printf("build: exact (float32) %.1f s, %d MB; approximate (int8 + IVF) %.1f s, %d MB\n", te.Seconds(), exact.Bytes()>>20, ta.Seconds(), approx.Bytes()>>20)
	const k = 10
	type truth struct{ notes, chunks map[int64]bool }
	want := make([]truth, len(queries))
	var de []time.Duration
	for i, q := range queries {
		t := time.Now()
		hn, _ := exact.TopNotesStats(q, 60, nil)
		de = append(de, time.Since(t))
		hc := exact.TopChunks(q, k, nil)
		want[i] = truth{map[int64]bool{}, map[int64]bool{}}
		for _, h := range hn[:min(k, len(hn))] {
			want[i].notes[h.Note] = true
		}
		for _, h := range hc {
			want[i].chunks[h.Chunk] = true
		}
	}
	fmt.Printf("exact TopNotesStats: p50 %.2f ms, p99 %.2f ms\n", benchstat.MS(benchstat.Pct(de, 50)), benchstat.MS(benchstat.Pct(de, 99)))
	// What int8 alone costs: the exact scan of the int8 rows.
	var r8, t8 int
	for i, q := range queries {
		for _, h := range exact8.TopNotes(q, k, nil) {
			if want[i].notes[h.Note] {
				r8++
			}
		}
		t8 += k
	}
	fmt.Printf("exact int8 (every row): recall@10 notes %.4f\n", float64(r8)/float64(t8))
	for _, f := range strings.Split(probes, ",") {
		p, _ := strconv.Atoi(strings.TrimSpace(f))
		if p <= 0 {
			continue
		}
		embed.ANNProbe = p
		var da []time.Duration
		var rn, rc, tot int
		for i, q := range queries {
			t := time.Now()
			hn, _ := approx.TopNotesStats(q, 60, nil)
			da = append(da, time.Since(t))
			hc := approx.TopChunks(q, k, nil)
			for _, h := range hn[:min(k, len(hn))] {
				if want[i].notes[h.Note] {
					rn++
				}
			}
			for _, h := range hc {
				if want[i].chunks[h.Chunk] {
					rc++
				}
			}
			tot += k
		}
		fmt.Printf("probe %3d: recall@10 notes %.4f, sections %.4f; TopNotesStats p50 %.2f ms, p99 %.2f ms (%.1fx faster p50)\n", p,
			float64(rn)/float64(tot), float64(rc)/float64(tot), benchstat.MS(benchstat.Pct(da, 50)), benchstat.MS(benchstat.Pct(da, 99)),
			float64(benchstat.Pct(de, 50))/math.Max(1, float64(benchstat.Pct(da, 50))))
	}
}
