// Package indextest opens real indexes for tests of the packages built on
// the index (queries, search): one helper instead of a copy per package.
package indextest

import (
	"context"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/vault"
)

// Open indexes the vault at root (no vectors) into a temporary folder and
// syncs it once; the index is closed when the test ends.
func Open(tb testing.TB, root string) *index.Index {
	tb.Helper()
	v, err := vault.Open(root, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ix, err := index.Open(context.Background(), v, index.Options{Dir: tb.TempDir(), NoEmbed: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ix.Close() })
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); err != nil {
		tb.Fatal(err)
	}
	return ix
}
