package cli

import (
	"os"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

// TestMain keeps the tests away from the user's own config files: the user
// config folder is an empty one of the test process (tests that need a
// user file set LOCI_CONFIG_DIR or LOCI_CONFIG themselves).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loci-test-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("LOCI_CONFIG_DIR", dir)
	code := testutil.RunMain(m)
	os.RemoveAll(dir)
	os.Exit(code)
}
