// Command indexbench measures loci's indexing and lexical query speed on a
// real vault and prints every figure next to a baseline measured in the same
// run, because absolute timings on shared machines are noise:
//
//   - full index: notes/s, and the ratio to a bare loop that inserts the very
//     same FTS rows into the same FTS5 table in one transaction;
//   - a second `index` with nothing changed, as a share of the full index;
//   - 200 queries in-process: p50/p99, and the ratio to the raw FTS5 MATCH
//     (bm25 order, LIMIT 10) of the same expressions;
//   - peak RSS of the index run (measured in a child process).
//
// Usage: go run ./bench/indexbench [-vault DIR] [-synthetic N] [-queries 200]
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/loci-dev/loci/bench/internal/benchstat"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/textseg"
	"github.com/loci-dev/loci/internal/vault"
)

func main() {
	vaultDir := flag.String("vault", "", "vault to measure (default ../shared/corpora/obsidian-hub)")
	synthetic := flag.Int("synthetic", 0, "also build a synthetic vault of N notes by copying the corpora under new names, and measure it")
	queries := flag.Int("queries", 200, "number of queries")
	child := flag.String("child-index", "", "internal: index this vault into -child-dir and exit")
	withEmbed = flag.Bool("embed", false, "also embed (built-in embedder) while indexing")
	childDir := flag.String("child-dir", "", "internal")
	flag.Parse()
	ctx := context.Background()
	if *child != "" {
		ix := open(ctx, *child, *childDir)
		if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
			benchstat.Fail(err)
		}
		return
	}
	shared := filepath.Join("..", "shared")
	if *vaultDir == "" {
		*vaultDir = filepath.Join(shared, "corpora", "obsidian-hub")
	}
	if _, err := os.Stat(*vaultDir); err != nil {
		fmt.Printf("skip: vault %s not found (needs ../shared beside the repo)\n", *vaultDir)
		return
	}
	fmt.Printf("machine: %d CPUs, GOMAXPROCS %d, %s\n\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	measure(ctx, *vaultDir, *queries)
	if *synthetic > 0 {
		tmp, err := os.MkdirTemp("", "loci-synth-")
		if err != nil {
			benchstat.Fail(err)
		}
		defer os.RemoveAll(tmp)
		n := buildSynthetic(filepath.Join(shared, "corpora"), tmp, *synthetic)
		fmt.Printf("\nsynthetic vault: %d notes copied from ../shared/corpora\n", n)
		measure(ctx, tmp, *queries)
	}
}

var withEmbed *bool

func open(ctx context.Context, root, dir string) *index.Index {
	v, err := vault.Open(root, nil)
	if err != nil {
		benchstat.Fail(err)
	}
	// Lexical indexing only: bench/embedbench measures the embedding pass.
	ix, err := index.Open(ctx, v, index.Options{Dir: dir, NoEmbed: !*withEmbed})
	if err != nil {
		benchstat.Fail(err)
	}
	return ix
}

func measure(ctx context.Context, root string, nq int) {
	tmp, err := os.MkdirTemp("", "loci-bench-")
	if err != nil {
		benchstat.Fail(err)
	}
	defer os.RemoveAll(tmp)

	// Peak RSS of a full index, in a child process of its own.
	rss := childRSS(root, filepath.Join(tmp, "rss"))

	// Full index.
	ix := open(ctx, root, filepath.Join(tmp, "idx"))
	defer ix.Close()
	t0 := time.Now()
	res, err := ix.Sync(ctx, index.SyncOptions{})
	if err != nil {
		benchstat.Fail(err)
	}
	full := time.Since(t0)
	var chunks int
	ix.DB.QueryRow("SELECT COUNT(*) FROM chunks").Scan(&chunks)

	// Nothing changed.
	t0 = time.Now()
	if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
		benchstat.Fail(err)
	}
	noop := time.Since(t0)

	// Bare loop: the same FTS rows into the same FTS5 table, one transaction.
	rows := ftsRows(ctx, ix.Vault)
	bare := bareInsert(filepath.Join(tmp, "bare.db"), rows)

	fmt.Printf("vault %s: %d notes, %d chunks\n", root, res.Indexed, chunks)
	fmt.Printf("  full index        %8.0f ms   %6.0f notes/s   %.2fx the bare FTS5 insert loop (%.0f ms)\n",
		benchstat.MS(full), float64(res.Indexed)/full.Seconds(), float64(full)/float64(bare), benchstat.MS(bare))
	fmt.Printf("  no-op re-index    %8.1f ms   %5.1f%% of the full index\n", benchstat.MS(noop), 100*float64(noop)/float64(full))
	if rss > 0 {
		fmt.Printf("  peak RSS (index)  %8.0f MB\n", float64(rss)/1024)
	}

	// Queries.
	qs := makeQueries(ctx, ix.DB, nq)
	s := &search.Searcher{DB: ix.DB}
	var ours, raw []time.Duration
	for round := 0; round < 2; round++ { // round 0 warms the cache
		ours, raw = ours[:0], raw[:0]
		for _, q := range qs {
			t := time.Now()
			if _, err := s.Search(ctx, search.Query{Text: q, Limit: 10}); err != nil {
				benchstat.Fail(fmt.Errorf("query %q: %w", q, err))
			}
			ours = append(ours, time.Since(t))
			t = time.Now()
			rawQuery(ctx, ix.DB, q)
			raw = append(raw, time.Since(t))
		}
	}
	p50, p99 := benchstat.Pct(ours, 50), benchstat.Pct(ours, 99)
	r50, r99 := benchstat.Pct(raw, 50), benchstat.Pct(raw, 99)
	fmt.Printf("  %d queries       p50 %.2f ms  p99 %.2f ms   (raw FTS5 MATCH p50 %.2f ms p99 %.2f ms; ratio p50 %.2fx)\n",
		len(qs), benchstat.MS(p50), benchstat.MS(p99), benchstat.MS(r50), benchstat.MS(r99), float64(p50)/float64(max(r50, 1)))
}

func childRSS(root, dir string) int64 {
	exe, err := os.Executable()
	if err != nil {
		return 0
	}
	cmd := exec.Command(exe, "-child-index", root, "-child-dir", dir, fmt.Sprintf("-embed=%v", *withEmbed))
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		benchstat.Fail(err)
	}
	return benchstat.PeakRSSKB(cmd.ProcessState)
}

func ftsRows(ctx context.Context, v *vault.Vault) [][4]string {
	var out [][4]string
	v.Walk(ctx, func(f vault.File) error {
		b, err := os.ReadFile(filepath.Join(v.Root, filepath.FromSlash(f.Rel)))
		if err != nil {
			return nil
		}
		outline, journal := v.LogseqFile(f.Rel)
		_, rows := index.FTSRows(markdown.Parse(b, markdown.Options{Path: f.Rel, Logseq: outline, Journal: journal}))
		out = append(out, rows...)
		return nil
	})
	return out
}

func bareInsert(path string, rows [][4]string) time.Duration {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		benchstat.Fail(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE VIRTUAL TABLE chunks_fts USING " + index.FTSTableArgs); err != nil {
		benchstat.Fail(err)
	}
	t0 := time.Now()
	tx, err := db.Begin()
	if err != nil {
		benchstat.Fail(err)
	}
	st, err := tx.Prepare("INSERT INTO chunks_fts(rowid,title,headings,body,tags) VALUES(?,?,?,?,?)")
	if err != nil {
		benchstat.Fail(err)
	}
	for i, r := range rows {
		if _, err := st.Exec(i+1, r[0], r[1], r[2], r[3]); err != nil {
			benchstat.Fail(err)
		}
	}
	st.Close()
	if err := tx.Commit(); err != nil {
		benchstat.Fail(err)
	}
	return time.Since(t0)
}

// makeQueries draws deterministic queries from the vault's own titles and
// text: single words, two-word queries, phrases and prefixes.
func makeQueries(ctx context.Context, db *sql.DB, n int) []string {
	rows, err := db.QueryContext(ctx, "SELECT title FROM notes ORDER BY path")
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
	if len(words) == 0 {
		words = []string{"note"}
	}
	rng := rand.New(rand.NewSource(1))
	pick := func() string { return words[rng.Intn(len(words))] }
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			out = append(out, pick())
		case 1:
			out = append(out, pick()+" "+pick())
		case 2:
			out = append(out, `"`+pick()+" "+pick()+`"`)
		default:
			w := pick()
			out = append(out, w[:3]+"*")
		}
	}
	return out
}

// rawQuery is the baseline: the FTS5 MATCH for the same (strict) expression,
// bm25-ordered, first 10 rows, no grouping or snippets.
func rawQuery(ctx context.Context, db *sql.DB, q string) {
	expr := search.MatchExpr(q)
	if expr == "" {
		return
	}
	rows, err := db.QueryContext(ctx, "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 10", expr)
	if err != nil {
		benchstat.Fail(err)
	}
	for rows.Next() {
	}
	rows.Close()
}

func buildSynthetic(corpora, dst string, n int) int {
	var files []string
	for _, c := range []string{"obsidian-hub", "obsidian-help", "logseq-docs"} {
		root := filepath.Join(corpora, c)
		filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return nil
			}
			if info.IsDir() && strings.HasPrefix(info.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			if !info.IsDir() && strings.HasSuffix(strings.ToLower(p), ".md") {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) == 0 {
		benchstat.Fail(fmt.Errorf("no corpus files under %s", corpora))
	}
	count := 0
	for copyN := 0; count < n; copyN++ {
		for i, src := range files {
			if count >= n {
				break
			}
			b, err := os.ReadFile(src)
			if err != nil {
				continue
			}
			p := filepath.Join(dst, fmt.Sprintf("copy%02d", copyN), fmt.Sprintf("d%03d", i/500), fmt.Sprintf("n%05d %s", i, filepath.Base(src)))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				benchstat.Fail(err)
			}
			count++
		}
	}
	return count
}
