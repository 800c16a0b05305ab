package ops_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/testutil"
)

// BenchmarkSearchNotesObserve times in-process search_notes through
// Registry.Call on the demo vault with observation off and on (calls log
// and metrics; tracing off), alternating in one loop so that both see the
// same machine, and reports the median of each and their ratio
// (x-on/off; medians, because a shared machine's preemptions swamp sums):
//
//	go test ./internal/ops -run '^$' -bench SearchNotesObserve -benchtime 3000x
func BenchmarkSearchNotesObserve(b *testing.B) {
	env := benchEnv(b)
	obs := ops.NewObserver(env, ops.ObserveOptions{CallsLog: true, Metrics: true})
	defer obs.Close()
	caller := ops.Caller{Surface: "mcp", Session: "bench", Principal: &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken}}
	in := json.RawMessage(`{"query":"spaced repetition","limit":10}`)
	ctx := context.Background()
	run := func(o *ops.Observer) time.Duration {
		env.Obs = o
		t0 := time.Now()
		res := opstest.Reg.Call(ctx, env, caller, "search_notes", in)
		d := time.Since(t0)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		return d
	}
	for range 50 { // warm the page cache and the statement cache
		run(nil)
		run(obs)
	}
	off := make([]time.Duration, 0, b.N)
	on := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 { // alternate which goes first
			off = append(off, run(nil))
			on = append(on, run(obs))
		} else {
			on = append(on, run(obs))
			off = append(off, run(nil))
		}
	}
	b.StopTimer()
	obs.Calls.Flush()
	mOff, mOn := median(off), median(on)
	b.ReportMetric(float64(mOff.Nanoseconds()), "ns-off-median")
	b.ReportMetric(float64(mOn.Nanoseconds()), "ns-on-median")
	b.ReportMetric(float64(mOn)/float64(mOff), "x-on/off")
	b.ReportMetric(float64(obs.Calls.Dropped()), "dropped")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkObserveAllocs counts what observation adds per call: the same
// call with observation off and on, as separate benchmarks (allocs/op).
func BenchmarkObserveAllocs(b *testing.B) {
	env := benchEnv(b)
	in := json.RawMessage(`{"path":"Ideas/Zettelkasten.md"}`)
	caller := ops.Caller{Surface: "mcp", Principal: &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken}}
	obs := ops.NewObserver(env, ops.ObserveOptions{CallsLog: true, Metrics: true})
	defer obs.Close()
	for _, c := range []struct {
		name string
		o    *ops.Observer
	}{{"off", nil}, {"on", obs}} {
		b.Run(c.name, func(b *testing.B) {
			env.Obs = c.o
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if res := opstest.Reg.Call(context.Background(), env, caller, "read_note", in); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
			// Keep the writer's queue from overflowing between rounds.
			obs.Calls.Flush()
		})
	}
}

func benchEnv(b *testing.B) *ops.Env {
	root := filepath.Join(b.TempDir(), "demo")
	testutil.CopyTree(b, testutil.DemoVault(), root)
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, root, b.TempDir(), nil, false)
	if err != nil {
		b.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	b.Cleanup(env.Close)
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		b.Fatal(err)
	}
	return env
}
