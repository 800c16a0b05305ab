package dataview

import (
	"context"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/vault"
)

// indexOf opens and syncs an index of the vault at root (kept in a temp dir).
func indexOf(tb testing.TB, root string) *index.Index {
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
