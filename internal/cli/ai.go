package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/ops"
)

// aiRuntime builds the AI runtime of a vault from its resolved
// configuration (off when no layer names a provider; docs/ai.md):
// its provider, allow/deny globs, cache and cost ledger (in the vault's
// index folder, reached without following links). It never calls the
// provider.
func aiRuntime(cfg *config.Config, vh *ops.VaultHandle) *ai.Runtime {
	return ai.NewAt(ai.FromConfig(cfg), vh.Index.Loc)
}

// ndjsonStream writes streaming AI events as NDJSON lines (--stream).
func ndjsonStream(w io.Writer) func(event string, data any) {
	var mu sync.Mutex
	return func(event string, data any) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(struct {
			Type string `json:"type"`
			Data any    `json:"data"`
		}{event, data})
		fmt.Fprintln(w, string(b))
	}
}
