package read_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/testutil"
)

// BenchmarkSearchFence measures in-process search_notes through the
// dispatch pipeline over 2,000 notes: without read rules (the fast path:
// a nil fence), with the vault's deny_read_paths, and with a principal
// narrowed by read_paths as well.
//
//	go test ./internal/ops/read -run XXX -bench SearchFence -benchtime 200x
func BenchmarkSearchFence(b *testing.B) {
	files := map[string]string{}
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"}
	for i := 0; i < 2000; i++ {
		dir := []string{"Public", "HR", "Team", "Archive"}[i%4]
		files[fmt.Sprintf("%s/n%04d.md", dir, i)] = fmt.Sprintf("# Note %d\n\n%s %s report about %s and %s.\n", i, words[i%8], words[(i/8)%8], words[(i/3)%8], words[(i/5)%8])
	}
	root := b.TempDir() + "/vault"
	testutil.WriteFiles(b, root, files)
	vh, err := ops.OpenVault(context.Background(), root, b.TempDir(), nil, false)
	if err != nil {
		b.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	defer env.Close()
	if _, err := env.Sync(context.Background(), vh, index.SyncOptions{}); err != nil {
		b.Fatal(err)
	}
	in := json.RawMessage(`{"query": "alpha report", "mode": "lexical", "limit": 10}`)
	p := &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead}, ReadPaths: []string{"Public/**", "Team/**"}, Via: auth.ViaToken}
	run := func(b *testing.B, who *auth.Principal) {
		for b.Loop() {
			res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "bench", Principal: who}, "search_notes", in)
			if res.Err != nil {
				b.Fatal(res.Err)
			}
		}
	}
	b.Run("no-rules", func(b *testing.B) { vh.Read = ops.ReadRules{}; run(b, nil) })
	b.Run("no-rules-principal", func(b *testing.B) {
		vh.Read = ops.ReadRules{}
		run(b, &auth.Principal{Name: "x", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken})
	})
	b.Run("vault-deny", func(b *testing.B) { vh.Read = ops.ReadRules{DenyReadPaths: []string{"HR/**"}}; run(b, nil) })
	b.Run("vault-deny+principal", func(b *testing.B) { vh.Read = ops.ReadRules{DenyReadPaths: []string{"HR/**"}}; run(b, p) })
}
