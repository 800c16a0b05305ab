package chat

import (
	"os"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunMain(m)) }
