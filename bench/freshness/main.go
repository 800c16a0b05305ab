// Command freshness measures edit→searchable latency under the file watcher:
// it copies a vault to a temporary folder, indexes it, starts the watcher
// (default 300 ms debounce, as `loci serve` runs it), then makes N edits,
// each appending a unique word to a random note on disk, and times how long
// until search_notes finds that word. It prints p50/p90/p99/max, and the
// steps of each edit: write → the watcher's last event of the batch, → the
// sync starts (the debounce), → the sync has committed the lexical index
// (searchable from then on), → the probe finds the word.
//
// The vault gets a background embedder, as `loci serve` gives it (the
// built-in embedder runs inline: a sync returns once the edit's vectors
// are in too).
//
// Usage: go run ./bench/freshness [-vault DIR] [-edits 200] [-debounce 100ms] [-gap 50ms] [-mode lexical|hybrid]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/bench/internal/benchstat"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
	"github.com/loci-dev/loci/internal/watch"
)

func main() {
	vaultDir := flag.String("vault", "", "vault to copy and edit (default ../shared/corpora/obsidian-hub, else demo/vault)")
	edits := flag.Int("edits", 200, "number of edits")
	debounce := flag.Duration("debounce", watch.DefaultDebounce, "watcher debounce")
	gap := flag.Duration("gap", 50*time.Millisecond, "pause between one edit becoming searchable and the next edit")
	mode := flag.String("mode", "lexical", "search mode of the probe query: lexical, semantic or hybrid (hybrid also pays for reloading the vector matrix after each change)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the edit phase here")
	flag.Parse()
	ctx := context.Background()
	src := *vaultDir
	if src == "" {
		src = filepath.Join(testutil.SharedDir(), "corpora", "obsidian-hub")
		if _, err := os.Stat(src); err != nil {
			src = testutil.DemoVault()
		}
	}
	tmp, err := os.MkdirTemp("", "loci-freshness-")
	benchstat.Check(err)
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "vault")
	benchstat.Check(benchstat.CopyVault(src, root, true))
	vh, err := ops.OpenVault(ctx, root, filepath.Join(tmp, "index"), nil, false)
	benchstat.Check(err)
	vh.Index.AllowStaleMatrix() // as loci serve and loci mcp do
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	defer env.Close()
	// Fully indexed, vectors too, as a served vault is: a watcher sync
	// then embeds only what the edit changed. (Before, this sync skipped
	// the embeddings, and every watcher sync embedded part of the whole
	// vault's backlog: the "sync" figures were mostly that.)
	res, err := env.Sync(ctx, vh, index.SyncOptions{})
	env.BackgroundEmbed(vh) // as loci serve does
	benchstat.Check(err)
	var notes []string
	benchstat.Check(vh.Vault.Walk(ctx, func(f vault.File) error { notes = append(notes, f.Rel); return nil }))
	fmt.Printf("vault %s: %d notes indexed (%s)\n", src, res.Indexed+res.Unchanged, res.Duration.Round(time.Millisecond))

	var (
		mu      sync.Mutex
		syncMs  []int64
		started time.Time // of the current edit's first sync
		event   time.Time // the watcher's last event before that sync
	)
	env.SubscribeEvents(func(ev ops.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Kind {
		case ops.EventSyncStarted:
			if started.IsZero() {
				started, event = time.Now(), vh.WatchState().LastEventAt
			}
		case ops.EventSyncFinished:
			syncMs = append(syncMs, ev.Data["duration_ms"].(int64))
		}
	})
	wctx, stop := context.WithCancel(ctx)
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		benchstat.Check(watch.Run(wctx, env, vh, watch.Options{Debounce: *debounce, NoInitialSync: true, Reconcile: -1, Ready: ready}))
	}()
	<-ready
	reg := catalog.All()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		benchstat.Check(err)
		benchstat.Check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	rng := rand.New(rand.NewSource(1))
	lat := make([]time.Duration, 0, *edits)
	var toEvent, toSync, toVisible []time.Duration
	for i := range *edits {
		rel := notes[rng.Intn(len(notes))]
		word := fmt.Sprintf("zqfresh%dx%d", i, rng.Intn(1e6))
		p := filepath.Join(root, filepath.FromSlash(rel))
		b, err := os.ReadFile(p)
		benchstat.Check(err)
		mu.Lock()
		started, event = time.Time{}, time.Time{}
		mu.Unlock()
		start := time.Now()
		benchstat.Check(os.WriteFile(p, append(b, []byte("\n\n"+word+"\n")...), 0o644))
		in, _ := json.Marshal(map[string]any{"query": word, "limit": 1, "mode": *mode})
		deadline := start.Add(30 * time.Second)
		for {
			r := reg.Call(ctx, env, ops.Caller{Surface: "bench"}, "search_notes", in)
			if r.Err == nil {
				out, _ := json.Marshal(r.Output)
				if strings.Contains(string(out), word) || strings.Contains(string(out), jsonPath(rel)) {
					break
				}
			}
			if time.Now().After(deadline) {
				benchstat.Check(fmt.Errorf("edit %d of %s not searchable after 30 s", i, rel))
			}
			time.Sleep(2 * time.Millisecond)
		}
		found := time.Now()
		lat = append(lat, found.Sub(start))
		mu.Lock()
		if !started.IsZero() && !event.IsZero() {
			toEvent = append(toEvent, event.Sub(start))
			toSync = append(toSync, started.Sub(event))
			toVisible = append(toVisible, found.Sub(started))
		}
		mu.Unlock()
		time.Sleep(*gap)
	}
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(syncMs, func(i, j int) bool { return syncMs[i] < syncMs[j] })
	if len(syncMs) > 0 {
		fmt.Printf("%d watcher syncs: p50 %d ms  p99 %d ms  max %d ms\n", len(syncMs), syncMs[len(syncMs)/2], syncMs[min(len(syncMs)-1, len(syncMs)*99/100)], syncMs[len(syncMs)-1])
	}
	step := func(name string, ds []time.Duration) {
		if len(ds) == 0 {
			return
		}
		fmt.Printf("  step %-34s p50 %6.1f ms  p99 %6.1f ms\n", name, benchstat.MS(benchstat.Pct(ds, 50)), benchstat.MS(benchstat.Pct(ds, 99)))
	}
	step("write → watcher's last event", toEvent)
	step("last event → sync starts", toSync)
	step("sync starts → probe finds the word", toVisible)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration {
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(time.Millisecond)
	}
	over := 0
	for _, d := range lat {
		if d > time.Second {
			over++
		}
	}
	fmt.Printf("%d edits, debounce %s, %s probe: edit→searchable p50 %s  p90 %s  p99 %s  max %s  (over 1 s: %d)\n",
		len(lat), *debounce, *mode, q(0.50), q(0.90), q(0.99), lat[len(lat)-1].Round(time.Millisecond), over)
}

func jsonPath(rel string) string { b, _ := json.Marshal(rel); return string(b) }
