package dataview

import (
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/index/indextest"
)

// indexOf indexes the vault at root (indextest.Open).
func indexOf(tb testing.TB, root string) *index.Index { return indextest.Open(tb, root) }
