package datalog

import (
	"context"
	"os"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunMain(m)) }

// indexOf indexes the vault at root (no vectors) into a temporary folder;
// the index is closed when the test ends.
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
