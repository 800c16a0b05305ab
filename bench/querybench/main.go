// Command querybench measures loci's structured queries in-process on
// real vaults: typical Logseq simple queries over the Logseq docs graph,
// Dataview queries over the Obsidian hub, and Logseq advanced (Datalog)
// queries once that language is registered. Each vault is copied to a
// temporary folder and indexed there (the corpora are never written).
//
// For every query it prints the first run after an edit (one note's
// content changed and synced, as a watcher does after an agent's edit),
// the first (cold) run after the content revision moved with no note
// changed (what a language caches is read again in full), and the
// p50/p99 of the next -n runs; per language, p50/p99 over all warm runs; and the one-time
// costs: the index build and the Logseq graph load (graph.Load uncached,
// p50 of -n loads).
//
// Queries go through query.Run with no language, as the query operation
// sends them; the languages are those the query operation registers
// (internal/ops/read), so a new language is measured once its queries
// are added to the lists.
//
// Usage: go run ./bench/querybench [-corpus DIR] [-n 30] [-cpuprofile FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/loci-dev/loci/bench/internal/benchstat"

	"github.com/loci-dev/loci/internal/index"
	_ "github.com/loci-dev/loci/internal/ops/read" // registers every language the query operation offers
	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/query/graph"
	"github.com/loci-dev/loci/internal/vault"
)

// logseqSimple are typical simple queries over logseq-docs (most from the
// docs themselves).
var logseqSimple = []string{
	`{{query [[tag1]]}}`,
	`{{query (and [[tag2]] (not [[tag1]]))}}`,
	`{{query (property type book)}}`,
	`{{query (and (task TODO DOING LATER NOW) (not (priority a)))}}`,
	`{{query (between [[Dec 5th, 2020]] [[Dec 7th, 2020]])}}`,
	`{{query (page-tags embed)}}`,
	`{{query (namespace [[term]])}}`,
	`{{query "logseq"}}`,
	`{{query (and [[query]] (sort-by type))}}`,
	`{{query (or [[tag1]] [[tag2]] ((634fb9a8-cab9-441e-b476-41fa828010ea)))}}`,
}

// dataview are typical Dataview queries over obsidian-hub (as in
// docs/query.md and the hub corpus test).
var dataview = []string{
	`LIST FROM #seedling AND -#MOC LIMIT 20`,
	`TABLE file.name, file.tags FROM "01 - Community" SORT file.name LIMIT 50`,
	`LIST FROM [[dataview]] or outgoing([[dataview]])`,
	`TABLE length(file.inlinks) AS "in" WHERE length(file.inlinks) > 5 SORT file.name DESC LIMIT 20`,
	`TASK WHERE !completed LIMIT 20`,
	`LIST WHERE contains(file.name, "Obsidian") AND file.mtime > date(2000-01-01)`,
	`TABLE publish, aliases FROM "02 - Community Expansions" WHERE publish SORT file.mtime DESC LIMIT 20`,
	`LIST FROM #MOC SORT file.name`,
}

// datalog are typical Logseq advanced queries over logseq-docs (the
// shapes of the docs' own "Advanced Queries" examples).
var datalog = []string{
	`{:title "All tasks" :query [:find (pull ?b [*]) :where [?b :block/marker _]]}`,
	`{:title "TODO tasks" :query [:find (pull ?b [*]) :where (task ?b #{"TODO"})]}`,
	`{:query [:find (pull ?b [*]) :where [?p :block/name "project"] [?b :block/refs ?p]]}`,
	`{:query [:find (pull ?b [*]) :in $ ?start ?today :where (task ?b #{"NOW" "LATER" "TODO" "DOING"}) (between ?b ?start ?today)] :inputs [:-56d :today]}`,
	`{:query [:find (pull ?b [*]) :where (property ?b :type "programming_lang")]}`,
	`[:find (count ?b) :where [?p :block/name "advanced queries"] [?b :block/page ?p]]`,
	`[:find ?name (count ?b) :where [?b :block/path-refs ?p] [?p :block/original-name ?name]]`,
	`[:find (pull ?b [*]) :where [?b :block/content ?c] [(clojure.string/includes? ?c "query")] (not [?b :block/marker _])]`,
	`[:find (pull ?p [:block/original-name :block/properties]) :where [?p :block/properties ?props] [(get ?props :alias) ?a]]`,
}

type suite struct {
	lang    string
	corpus  string
	queries []string
}

func main() {
	corpus := flag.String("corpus", filepath.Join("..", "shared", "corpora"), "folder holding logseq-docs and obsidian-hub")
	n := flag.Int("n", 30, "warm runs per query")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	ctx := context.Background()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			benchstat.Fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			benchstat.Fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("machine: %d CPUs, GOMAXPROCS %d, %s; languages registered: %v\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), query.Languages())
	suites := []suite{
		{query.LogseqSimple, "logseq-docs", logseqSimple},
		{query.LogseqAdvanced, "logseq-docs", datalog},
		{query.Dataview, "obsidian-hub", dataview},
	}
	indexes := map[string]*index.Index{}
	defer func() {
		for _, d := range tmpDirs {
			os.RemoveAll(d)
		}
	}()
	for _, s := range suites {
		fmt.Printf("\n== %s on %s\n", s.lang, s.corpus)
		if !slices.Contains(query.Languages(), s.lang) {
			fmt.Printf("skip: %s is not registered\n", s.lang)
			continue
		}
		if len(s.queries) == 0 {
			fmt.Printf("skip: no queries listed\n")
			continue
		}
		ix := indexes[s.corpus]
		if ix == nil {
			src := filepath.Join(*corpus, s.corpus)
			if _, err := os.Stat(src); err != nil {
				fmt.Printf("skip: %s not found\n", src)
				continue
			}
			ix = build(ctx, src)
			vaultDirs[ix] = filepath.Join(tmpDirs[len(tmpDirs)-1], "vault")
			defer ix.Close() // before the temp folders go (LIFO)
			indexes[s.corpus] = ix
			if s.corpus == "logseq-docs" {
				graphLoad(ctx, ix, *n)
			}
		}
		run(ctx, ix, s, *n)
	}
}

var (
	tmpDirs   []string
	vaultDirs = map[*index.Index]string{}
)

// edit appends a line to one note of ix's vault copy (the first in path
// order) and syncs: the change an agent's edit under a watcher makes.
func edit(ctx context.Context, ix *index.Index, i int) {
	notes, err := ix.ListNotes(ctx, false)
	if err != nil || len(notes) == 0 {
		benchstat.Fail(fmt.Errorf("no notes: %v", err))
	}
	f, err := os.OpenFile(filepath.Join(vaultDirs[ix], filepath.FromSlash(notes[0].Path)), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		benchstat.Fail(err)
	}
	fmt.Fprintf(f, "\nquerybench edit %d\n", i)
	if err := f.Close(); err != nil {
		benchstat.Fail(err)
	}
	if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
		benchstat.Fail(err)
	}
}

// build copies src to a temporary folder and indexes it there.
func build(ctx context.Context, src string) *index.Index {
	tmp, err := os.MkdirTemp("", "loci-querybench-")
	if err != nil {
		benchstat.Fail(err)
	}
	tmpDirs = append(tmpDirs, tmp)
	dir := filepath.Join(tmp, "vault")
	if err := benchstat.CopyVault(src, dir, false); err != nil {
		benchstat.Fail(err)
	}
	v, err := vault.Open(dir, nil)
	if err != nil {
		benchstat.Fail(err)
	}
	ix, err := index.Open(ctx, v, index.Options{Dir: filepath.Join(tmp, "index"), NoEmbed: true})
	if err != nil {
		benchstat.Fail(err)
	}
	start := time.Now()
	st, err := ix.Sync(ctx, index.SyncOptions{})
	if err != nil {
		benchstat.Fail(err)
	}
	fmt.Printf("index: %d notes in %v\n", st.Indexed, time.Since(start).Round(time.Millisecond))
	return ix
}

// graphLoad times the uncached graph load and the cached accessor.
func graphLoad(ctx context.Context, ix *index.Index, n int) {
	var loads, hits []time.Duration
	var g *graph.Graph
	for range max(n/5, 3) {
		start := time.Now()
		var err error
		if g, err = graph.Load(ctx, ix.DB); err != nil {
			benchstat.Fail(err)
		}
		loads = append(loads, time.Since(start))
	}
	start := time.Now()
	if _, err := graph.For(ctx, ix); err != nil {
		benchstat.Fail(err)
	}
	first := time.Since(start)
	for range n {
		start := time.Now()
		if _, err := graph.For(ctx, ix); err != nil {
			benchstat.Fail(err)
		}
		hits = append(hits, time.Since(start))
	}
	fmt.Printf("graph: %d pages, %d blocks; graph.Load (uncached) p50 %v p99 %v; graph.For first %v, then (cached) p50 %v p99 %v\n",
		len(g.Pages), len(g.Blocks), pct(loads, 50), pct(loads, 99), first.Round(time.Microsecond), pct(hits, 50), pct(hits, 99))
}

func run(ctx context.Context, ix *index.Index, s suite, n int) {
	var all, colds, edits []time.Duration
	for i, q := range s.queries {
		// Cold after an edit: one note's content changed and synced (not
		// timed), then the query.
		edit(ctx, ix, i)
		start := time.Now()
		if _, err := query.Run(ctx, ix, "", q, query.Options{Limit: 100}); err != nil {
			fmt.Printf("%-70.70s error: %v\n", q, err)
			continue
		}
		edited := time.Since(start)
		edits = append(edits, edited)
		// Cold: the first run after the index's content revision moved
		// with no note changed (what is cached is read again in full).
		if _, err := ix.DB.ExecContext(ctx, `UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'content_rev'`); err != nil {
			benchstat.Fail(err)
		}
		start = time.Now()
		res, err := query.Run(ctx, ix, "", q, query.Options{Limit: 100})
		cold := time.Since(start)
		if err != nil {
			fmt.Printf("%-70.70s error: %v\n", q, err)
			continue
		}
		var times []time.Duration
		for range n {
			start := time.Now()
			if _, err := query.Run(ctx, ix, "", q, query.Options{Limit: 100}); err != nil {
				benchstat.Fail(err)
			}
			times = append(times, time.Since(start))
		}
		all = append(all, times...)
		colds = append(colds, cold)
		more := ""
		if res.Truncated {
			more = "+"
		}
		fmt.Printf("%-70.70s %4d%-1s rows  edit %8v  cold %8v  p50 %8v  p99 %8v\n", q, len(res.Rows), more, edited.Round(time.Microsecond), cold.Round(time.Microsecond), pct(times, 50), pct(times, 99))
	}
	if len(all) > 0 {
		fmt.Printf("%s: %d warm runs: p50 %v, p99 %v; %d cold runs (first after an index change): p50 %v, max %v; %d after an edit: p50 %v, max %v\n",
			s.lang, len(all), pct(all, 50), pct(all, 99), len(colds), pct(colds, 50), pct(colds, 100), len(edits), pct(edits, 50), pct(edits, 100))
	}
}

// pct is benchstat.Pct rounded to the microsecond, for printing.
func pct(ds []time.Duration, p int) time.Duration {
	return benchstat.Pct(ds, p).Round(time.Microsecond)
}
