// Command startbench measures what a fresh loci process costs: `loci
// --version`, and one `loci search` per process in lexical and in hybrid
// mode, on a copy of a real vault indexed with the built-in embeddings.
// Every figure is printed next to a baseline measured in the same run, a
// trivial Go hello-world built by this program with the same toolchain, so
// the ratio to the bare cost of spawning a Go process is what is compared.
// A second baseline, bench/startbench/initfloor, links every package the
// CLI links and has an empty main: the floor of any loci process (the Go
// runtime's start and every package's init, most of them dependencies').
//
// With -before REF a second loci is built from that git ref (git archive,
// no change to the work tree) and measured in the same rounds, so a change
// is judged against the code before it in one run. Each binary gets its own
// index folder (the index formats may differ).
//
// The runs of every command alternate round by round (baseline, each binary's
// --version, lexical, hybrid), after warm-up runs that are not counted, so
// the load of a shared machine falls on all of them alike. The same
// searches are then run in this process through cli.Main (warm: inits
// done, tables loaded), so the share of a one-shot call that is the fresh
// process shows.
//
// Usage: go run ./bench/startbench [-vault DIR] [-n 100] [-before REF] [-at REF]
package main

import (
	"bytes"
	"context"
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

	"github.com/loci-dev/loci/internal/cli"
)

const hello = `package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
`

func main() {
	vaultDir := flag.String("vault", "", "vault to copy and measure (default ../shared/corpora/obsidian-hub)")
	n := flag.Int("n", 100, "measured runs of each command")
	warm := flag.Int("warm", 5, "warm-up runs of each command, not counted")
	before := flag.String("before", "", "also build loci at this git ref and measure it in the same rounds")
	at := flag.String("at", "", "build the measured loci at this git ref instead of from the work tree")
	keep := flag.Bool("keep", false, "keep the temporary folder (binaries, vault copy, indexes) and print its path")
	flag.Parse()
	if *vaultDir == "" {
		*vaultDir = filepath.Join("..", "shared", "corpora", "obsidian-hub")
	}
	if _, err := os.Stat(*vaultDir); err != nil {
		fmt.Printf("skip: vault %s not found (needs ../shared beside the repo)\n", *vaultDir)
		return
	}
	tmp, err := os.MkdirTemp("", "loci-startbench-")
	benchstat.Check(err)
	if *keep {
		fmt.Println("temporary folder:", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	fmt.Printf("machine: %d CPUs, GOMAXPROCS %d, %s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())

	// Binaries.
	base := filepath.Join(tmp, "hello")
	benchstat.Check(os.WriteFile(filepath.Join(tmp, "hello.go"), []byte(hello), 0o644))
	benchstat.Check(benchstat.GoBuild(tmp, base, "hello.go"))
	floor := filepath.Join(tmp, "initfloor")
	benchstat.Check(benchstat.GoBuild(".", floor, "./bench/startbench/initfloor"))
	bins := []binary{{name: "loci", path: filepath.Join(tmp, "loci")}}
	if *at != "" {
		src := filepath.Join(tmp, "at-src")
		benchstat.Check(os.MkdirAll(src, 0o755))
		archive(*at, src)
		benchstat.Check(benchstat.GoBuild(src, bins[0].path, "./cmd/loci"))
	} else {
		benchstat.Check(benchstat.GoBuild(".", bins[0].path, "./cmd/loci"))
	}
	if *before != "" {
		src := filepath.Join(tmp, "before-src")
		benchstat.Check(os.MkdirAll(src, 0o755))
		archive(*before, src)
		b := binary{name: "before", path: filepath.Join(tmp, "loci-before")}
		benchstat.Check(benchstat.GoBuild(src, b.path, "./cmd/loci"))
		bins = append([]binary{b}, bins...)
	}

	// The vault, copied (the corpora are never written), indexed by each
	// binary into its own folder with the built-in embeddings, and one
	// hybrid search each to write the vector cache.
	vault := filepath.Join(tmp, "vault")
	benchstat.Check(benchstat.CopyVault(*vaultDir, vault, false))
	for i := range bins {
		bins[i].index = filepath.Join(tmp, "index-"+bins[i].name)
		t0 := time.Now()
		run(bins[i].path, "index", "-q", "--vault", vault, "--index-dir", bins[i].index)
		fmt.Printf("%s: indexed %s in %.1f s\n", bins[i].name, *vaultDir, time.Since(t0).Seconds())
		run(bins[i].path, "search", "warm", "--vault", vault, "--index-dir", bins[i].index, "--mode", "hybrid")
	}

	// The commands, in the order each round runs them.
	type command struct {
		label string
		bin   string
		args  func(round int) []string
	}
	cmds := []command{
		{label: "baseline: Go hello-world", bin: base, args: func(int) []string { return nil }},
		{label: "floor: loci's packages linked, empty main (runtime + inits)", bin: floor, args: func(int) []string { return nil }},
	}
	for _, b := range bins {
		b := b
		search := func(mode string) func(int) []string {
			return func(round int) []string {
				return []string{"search", benchstat.Queries[round%len(benchstat.Queries)], "--vault", vault, "--index-dir", b.index, "--mode", mode}
			}
		}
		cmds = append(cmds,
			command{label: b.name + " --version", bin: b.path, args: func(int) []string { return []string{"--version"} }},
			command{label: b.name + " search (lexical)", bin: b.path, args: search("lexical")},
			command{label: b.name + " search (hybrid)", bin: b.path, args: search("hybrid")},
		)
	}
	times := make([][]time.Duration, len(cmds))
	cpus := make([][]time.Duration, len(cmds))
	for round := -*warm; round < *n; round++ {
		for i, c := range cmds {
			d, cpu := timed(c.bin, c.args(round+*warm))
			if round >= 0 {
				times[i] = append(times[i], d)
				cpus[i] = append(cpus[i], cpu)
			}
		}
	}

	// The same searches in this process through cli.Main, after warm-up:
	// inits done, tables loaded, pages cached; each call still opens the
	// vault and the index. One-shot minus this is what a fresh process adds.
	var inproc [2][]time.Duration
	for round := -*warm; round < *n; round++ {
		for k, mode := range []string{"lexical", "hybrid"} {
			args := []string{"search", benchstat.Queries[(round+*warm)%len(benchstat.Queries)], "--vault", vault, "--index-dir", bins[len(bins)-1].index, "--mode", mode}
			t0 := time.Now()
			if code := cli.Main(context.Background(), args, io.Discard, io.Discard); code != 0 {
				benchstat.Fail(fmt.Errorf("in-process %s: exit code %d", strings.Join(args, " "), code))
			}
			if round >= 0 {
				inproc[k] = append(inproc[k], time.Since(t0))
			}
		}
	}

	// The table.
	b50 := benchstat.Pct(times[0], 50)
	fmt.Printf("\n%d runs each (after %d warm-up runs), one process per run, wall time from exec to exit;\n"+
		"CPU is the process's user + system time (wait4's rusage), which a loaded machine inflates far less:\n\n", *n, *warm)
	fmt.Println("| command | p50 | p99 | p50 ÷ baseline p50 | CPU p50 |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for i, c := range cmds {
		p50, p99 := benchstat.Pct(times[i], 50), benchstat.Pct(times[i], 99)
		fmt.Printf("| %s | %.1f ms | %.1f ms | %.1fx | %.1f ms |\n", c.label, benchstat.MS(p50), benchstat.MS(p99), float64(p50)/float64(b50), benchstat.MS(benchstat.Pct(cpus[i], 50)))
	}
	for k, mode := range []string{"lexical", "hybrid"} {
		p50, p99 := benchstat.Pct(inproc[k], 50), benchstat.Pct(inproc[k], 99)
		fmt.Printf("| in-process cli.Main search (%s), this tree | %.1f ms | %.1f ms | %.1fx | |\n", mode, benchstat.MS(p50), benchstat.MS(p99), float64(p50)/float64(b50))
	}
	if *before != "" {
		fmt.Printf("\nloci ÷ before (%s), p50: ", *before)
		for k := 0; k < 3; k++ {
			bi, li := 2+k, 5+k
			fmt.Printf("%s %.2fx  ", strings.TrimPrefix(cmds[li].label, "loci "), float64(benchstat.Pct(times[li], 50))/float64(benchstat.Pct(times[bi], 50)))
		}
		fmt.Printf("\nloci ÷ before (%s), CPU p50: ", *before)
		for k := 0; k < 3; k++ {
			bi, li := 2+k, 5+k
			fmt.Printf("%s %.2fx  ", strings.TrimPrefix(cmds[li].label, "loci "), float64(benchstat.Pct(cpus[li], 50))/float64(benchstat.Pct(cpus[bi], 50)))
		}
		fmt.Println()
	}
}

type binary struct {
	name, path, index string
}

// timed runs one process to its end and returns the wall time from the
// start of exec to its exit, and its CPU time (user + system); its output
// is read and dropped.
func timed(bin string, args []string) (time.Duration, time.Duration) {
	cmd := exec.Command(bin, args...)
	var errb bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		benchstat.Fail(fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errb.String()))
	}
	return d, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func run(bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		benchstat.Fail(fmt.Errorf("%s %s: %v", bin, strings.Join(args, " "), err))
	}
}

// archive extracts the tree of a git ref into dir.
func archive(ref, dir string) {
	cmd := exec.Command("sh", "-c", `git archive --format=tar "$1" | tar -x -C "$2"`, "sh", ref, dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		benchstat.Fail(fmt.Errorf("git archive %s: %v", ref, err))
	}
}
