package ops_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// BenchmarkPipelineChecks is the cost of every check "Many agents, one
// vault" added, on in-process search_notes over the demo vault: the same
// call as the owner on a server with nothing configured ("bare": no
// principal, so no scope or vault check, no limits, no fence, no
// observation) against a principal on a server with all of it on
// ("governed": scope, vault and toolset checks, server toolsets, a rate
// limit and a concurrency cap, the vault's deny_read_paths narrowed by the
// principal's read_paths and deny_read_paths, the calls log and metrics;
// tracing off). The fences hide no note of the demo vault, so both calls
// rank the same candidates and the difference is the checks alone (a
// fence that hides notes makes search cheaper, not dearer). The two
// alternate in one loop, so both see the same machine, and the medians and
// their ratio are reported (x-governed/bare):
//
//	go test ./internal/ops -run '^$' -bench PipelineChecks -benchtime 2000x -count 3
func BenchmarkPipelineChecks(b *testing.B) {
	env := benchEnv(b)
	vh := env.Vaults[0]
	obs := ops.NewObserver(env, ops.ObserveOptions{CallsLog: true, Metrics: true})
	defer obs.Close()
	lim := ops.NewLimiter(ops.LimitSettings{Read: ops.Rate{PerMinute: 1e9, Burst: 1 << 30}, Concurrency: 64}, nil)
	agent := &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead}, Vaults: []string{vh.Name},
		Toolsets: []string{"read"}, ReadPaths: []string{"**"}, DenyReadPaths: []string{"Private/**"}, Via: auth.ViaToken}
	in := json.RawMessage(`{"query":"spaced repetition","limit":10}`)
	ctx := context.Background()
	run := func(governed bool) time.Duration {
		c := ops.Caller{Surface: "mcp", Session: "bench"}
		if governed {
			env.Obs, env.Limits, env.Toolsets = obs, lim, []string{"read", "write", "logseq"}
			vh.Read = ops.ReadRules{DenyReadPaths: []string{"HR/**", "*.secret.md"}}
			c.Principal = agent
		} else {
			env.Obs, env.Limits, env.Toolsets = nil, nil, nil
			vh.Read = ops.ReadRules{}
		}
		t0 := time.Now()
		res := opstest.Reg.Call(ctx, env, c, "search_notes", in)
		d := time.Since(t0)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		return d
	}
	for range 50 { // warm the caches (statements, the fence's hidden set)
		run(false)
		run(true)
	}
	bare := make([]time.Duration, 0, b.N)
	gov := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			bare = append(bare, run(false))
			gov = append(gov, run(true))
		} else {
			gov = append(gov, run(true))
			bare = append(bare, run(false))
		}
	}
	b.StopTimer()
	mb, mg := median(bare), median(gov)
	b.ReportMetric(float64(mb.Nanoseconds()), "ns-bare-median")
	b.ReportMetric(float64(mg.Nanoseconds()), "ns-governed-median")
	b.ReportMetric(float64(mg)/float64(mb), "x-governed/bare")
}
