// Command scalebench writes a synthetic vault of any size and measures loci
// on it (issue 19, "a million notes on one machine").
//
// Generate (deterministic for a given -seed and -n):
//
//	go run ./bench/scalebench -gen -n 1000000 -out DIR
//
// Notes have frontmatter (tags, status, created, aliases, rating) on 80%,
// headings, paragraphs drawn from a Zipf-distributed vocabulary (an English
// head and a 30,000-word made-up tail), 5% German, 5% Chinese, 5% Japanese,
// wikilinks with a power-law in-degree, inline tags, tasks with due dates,
// and folders 1–4 deep (area/topic/year/month).
//
// Measure an existing vault:
//
//	go run ./bench/scalebench -measure DIR [-embed] [-queries 30] [-index-dir D]
//
// prints the full index time (notes/s) and its peak RSS (a child process),
// the no-op re-index, the index size on disk, lexical (and with -embed
// hybrid) search p50/p99 in-process.
//
//	go run ./bench/scalebench -scan 10000,100000,1000000
//
// times one exact vector scan (TopNotesStats, as hybrid search runs it)
// over random unit vectors of the built-in model's dimension, float32 and
// int8, at each number of chunks.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/bench/internal/benchstat"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/vault"
)

func main() {
	doGen := flag.Bool("gen", false, "generate a vault of -n notes into -out")
	n := flag.Int("n", 10000, "notes to generate")
	out := flag.String("out", "", "folder to generate into (must not exist)")
	seed := flag.Int64("seed", 1, "generator seed")
	measureDir := flag.String("measure", "", "vault to measure")
	indexDir := flag.String("index-dir", "", "where to build the index (default: a temporary folder, removed)")
	withEmbed := flag.Bool("embed", false, "index with the built-in embeddings and measure hybrid search")
	nq := flag.Int("queries", 30, "number of queries")
	scan := flag.String("scan", "", "comma-separated chunk counts for the exact vector scan timing")
	progress := flag.String("progress", "", "print the number of notes committed so far in this index folder (a build under way)")
	memprof := flag.String("memprofile", "", "with -child-index: write the heap profile taken at the Go heap's peak here, and print Go heap vs RSS")
	child := flag.Bool("child-index", false, "internal: index -measure into -index-dir and print the time")
	flag.Parse()
	ctx := context.Background()
	switch {
	case *doGen:
		if *out == "" {
			benchstat.Fail(fmt.Errorf("-gen needs -out"))
		}
		if _, err := os.Stat(*out); err == nil {
			benchstat.Fail(fmt.Errorf("%s exists", *out))
		}
		t := time.Now()
		bytes, err := generate(*out, *n, *seed)
		if err != nil {
			benchstat.Fail(err)
		}
		fmt.Printf("generated %d notes (%.0f MB of Markdown) in %s in %.1f s\n", *n, float64(bytes)/1e6, *out, time.Since(t).Seconds())
	case *progress != "":
		db, err := sql.Open("sqlite", "file:"+filepath.Join(*progress, "index.db")+"?mode=ro")
		if err != nil {
			benchstat.Fail(err)
		}
		var c int
		if err := db.QueryRow("SELECT COUNT(*) FROM notes").Scan(&c); err != nil {
			benchstat.Fail(err)
		}
		fmt.Println(c)
	case *child:
		ix := open(ctx, *measureDir, *indexDir, *withEmbed)
		stop := func() {}
		if *memprof != "" {
			stop = watchHeap(*memprof)
		}
		t := time.Now()
		res, err := ix.Sync(ctx, index.SyncOptions{})
		stop()
		if err != nil {
			benchstat.Fail(err)
		}
		d := time.Since(t)
		ix.Close()
		fmt.Printf("%d %d\n", res.Indexed, d.Nanoseconds())
	case *measureDir != "":
		measure(ctx, *measureDir, *indexDir, *withEmbed, *nq)
	case *scan != "":
		scanBench(*scan)
	default:
		flag.Usage()
		os.Exit(2)
	}
}

func open(ctx context.Context, root, dir string, withEmbed bool) *index.Index {
	v, err := vault.Open(root, nil)
	if err != nil {
		benchstat.Fail(err)
	}
	ix, err := index.Open(ctx, v, index.Options{Dir: dir, NoEmbed: !withEmbed})
	if err != nil {
		benchstat.Fail(err)
	}
	return ix
}

func measure(ctx context.Context, root, dir string, withEmbed bool, nq int) {
	fmt.Printf("machine: %d CPUs, GOMAXPROCS %d, %s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	if dir == "" {
		tmp, err := os.MkdirTemp("", "loci-scale-")
		if err != nil {
			benchstat.Fail(err)
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "idx")
	}
	// Full index in a child process: its peak RSS is the child's alone.
	exe, err := os.Executable()
	if err != nil {
		benchstat.Fail(err)
	}
	cmd := exec.Command(exe, "-child-index", "-measure", root, "-index-dir", dir, fmt.Sprintf("-embed=%v", withEmbed))
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		benchstat.Fail(err)
	}
	var notes int
	var ns int64
	fmt.Sscan(string(outb), &notes, &ns)
	full := time.Duration(ns)
	rss := benchstat.PeakRSSKB(cmd.ProcessState)
	// CPU time (user+sys) of the child: on a shared machine it moves much
	// less than the wall time, so notes per CPU-second compare runs.
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	fmt.Printf("vault %s: %d notes (embeddings: %v)\n", root, notes, withEmbed)
	fmt.Printf("  full index        %9.1f s   %7.0f notes/s   CPU %.1f s (%.0f notes per CPU-second)   peak RSS %.0f MB\n",
		full.Seconds(), float64(notes)/full.Seconds(), cpu.Seconds(), float64(notes)/cpu.Seconds(), float64(rss)/1024)

	ix := open(ctx, root, dir, withEmbed)
	defer ix.Close()
	t := time.Now()
	res, err := ix.Sync(ctx, index.SyncOptions{})
	if err != nil {
		benchstat.Fail(err)
	}
	noop := time.Since(t)
	fmt.Printf("  no-op re-index    %9.2f s   %5.1f%% of the full index (indexed %d)\n", noop.Seconds(), 100*float64(noop)/float64(full), res.Indexed)
	var chunks, links int
	ix.DB.QueryRow("SELECT COUNT(*) FROM chunks").Scan(&chunks)
	ix.DB.QueryRow("SELECT COUNT(*) FROM links").Scan(&links)
	fmt.Printf("  index size        %9.0f MB   %d chunks, %d links\n", float64(dirSize(dir))/1e6, chunks, links)

	qs := queries(nq)
	modes := []string{search.ModeLexical}
	srch := &search.Searcher{DB: ix.DB}
	if withEmbed {
		srch.Vectors = ix
		t := time.Now()
		if _, err := ix.VectorMatrix(ctx); err != nil {
			benchstat.Fail(err)
		}
		fmt.Printf("  vector matrix load %8.2f s\n", time.Since(t).Seconds())
		modes = append(modes, search.ModeHybrid)
	}
	for _, mode := range modes {
		var ds []time.Duration
		for round := 0; round < 2; round++ { // round 0 warms the caches
			ds = ds[:0]
			for _, q := range qs {
				t := time.Now()
				if _, err := srch.Search(ctx, search.Query{Text: q, Limit: 10, Mode: mode}); err != nil {
					benchstat.Fail(fmt.Errorf("%s %q: %w", mode, q, err))
				}
				ds = append(ds, time.Since(t))
			}
		}
		fmt.Printf("  %d queries %-8s p50 %7.2f ms   p99 %7.2f ms   slowest: %s\n", len(qs), mode, benchstat.MS(benchstat.Pct(ds, 50)), benchstat.MS(benchstat.Pct(ds, 99)), slowest(qs, ds, 3))
	}
}

// queries are fixed: frequent and rare English words, pairs, a phrase, a
// prefix, German, Chinese and Japanese terms.
func queries(n int) []string {
	base := []string{
		"project", "meeting notes", "database query", "sleep habit", "\"daily review\"", "invest*",
		"roadmap milestone deadline", "python", "garden plant weather", "architecture pattern",
		vocab[len(english)+10], vocab[len(english)+500], vocab[len(english)+5000], vocab[len(english)+20000],
		vocab[len(english)+100] + " " + vocab[len(english)+2000], "feedback retrospective",
		"Besprechung", "Straßenbahn", "Übersetzung Projekt", "会议", "数据库", "プロジェクト", "検索",
		"how do I plan my week", "performance memory cache", "theory experiment result",
		"tax insurance", "music film", "kafe*", "thesis chapter draft",
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, base[i%len(base)])
	}
	return out
}

// watchHeap samples the Go heap every 500 ms and writes a heap profile
// each time it reaches a new peak; stop prints the peak next to the RSS.
func watchHeap(path string) (stop func()) {
	done := make(chan struct{})
	var peak uint64
	var peakRSS string
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak+peak/10 {
				peak = ms.HeapInuse
				if f, err := os.Create(path); err == nil {
					pprof.WriteHeapProfile(f)
					f.Close()
				}
				peakRSS = rssNow()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		fmt.Fprintf(os.Stderr, "Go heap in use at its peak %.0f MB (process then: %s); at the end: %s\n", float64(peak)/1e6, peakRSS, rssNow())
	}
}

// rssNow is this process's VmRSS/RssAnon/RssFile line from /proc.
func rssNow() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	var parts []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS") || strings.HasPrefix(l, "RssAnon") || strings.HasPrefix(l, "RssFile") || strings.HasPrefix(l, "VmHWM") {
			parts = append(parts, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(parts, ", ")
}

// slowest names the k slowest queries with their times.
func slowest(qs []string, ds []time.Duration, k int) string {
	idx := make([]int, len(qs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ds[idx[a]] > ds[idx[b]] })
	var parts []string
	for _, i := range idx[:min(k, len(idx))] {
		parts = append(parts, fmt.Sprintf("%q %.0f ms", qs[i], benchstat.MS(ds[i])))
	}
	return strings.Join(parts, ", ")
}

func dirSize(dir string) int64 {
	var s int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			s += info.Size()
		}
		return nil
	})
	return s
}

// scanBench times exact scans of random unit vectors.
func scanBench(spec string) {
	dims := embed.Builtin().Identity().Dims
	fmt.Printf("machine: %d CPUs, GOMAXPROCS %d, %s; %d dims (built-in model)\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), dims)
	r := rand.New(rand.NewPCG(1, 2))
	unit := func(v []float32) []float32 {
		var s float64
		for i := range v {
			v[i] = float32(r.NormFloat64())
			s += float64(v[i]) * float64(v[i])
		}
		for i := range v {
			v[i] /= float32(math.Sqrt(s))
		}
		return v
	}
	for _, f := range strings.Split(spec, ",") {
		rows, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || rows <= 0 {
			benchstat.Fail(fmt.Errorf("bad -scan count %q", f))
		}
		for _, q8 := range []bool{false, true} {
			b := embed.NewMatrixBuilder(dims, q8, rows)
			v := make([]float32, dims)
			for i := 0; i < rows; i++ {
				b.Add(int64(i/3+1), int64(i+1), unit(v)) // ~3 chunks a note
			}
			m := b.Matrix()
			q := make([]float32, dims)
			var ds []time.Duration
			for k := 0; k < 32; k++ {
				unit(q)
				t := time.Now()
				m.TopNotesStats(q, 60, nil)
				ds = append(ds, time.Since(t))
			}
			ds = ds[2:] // warm-up
			kind := "float32"
			if q8 {
				kind = "int8"
			}
			// The minimum is the scan on an idle core; p50 is what a query
			// got on this (shared) machine.
			fmt.Printf("  %9d chunks %-7s  %7.0f MB   scan min %8.2f ms  p50 %8.2f ms  (min %.1f ns/chunk)\n", rows, kind, float64(m.Bytes())/1e6, benchstat.MS(benchstat.Pct(ds, 0)), benchstat.MS(benchstat.Pct(ds, 50)), float64(benchstat.Pct(ds, 0).Nanoseconds())/float64(rows))
			m = nil
			runtime.GC()
		}
	}
}
