package datalog

import (
	"os"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/index/indextest"
	"github.com/loci-dev/loci/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunMain(m)) }

// indexOf indexes the vault at root (indextest.Open).
func indexOf(tb testing.TB, root string) *index.Index { return indextest.Open(tb, root) }
