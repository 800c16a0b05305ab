package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

// TestSeedAliasFlags: the seed documents' parameter names work as hidden
// flags of the op commands, and an alias disagreeing with its field fails.
func TestSeedAliasFlags(t *testing.T) {
	v := filepath.Join(t.TempDir(), "graph")
	testutil.WriteFiles(t, v, map[string]string{
		"logseq/config.edn": "{:meta/version 1}\n",
		"pages/Loci.md":     "- Top\n  id:: 11111111-0000-4000-8000-000000000001\n\t- Child\n",
	})
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Fatalf("index: %d %s", code, errOut)
	}
	out, errOut, code := run(t, "page", "--page-name", "loci", "--include-blocks=false", "--vault", v, "--format", "json")
	if code != 0 || !strings.Contains(out, `"path": "pages/Loci.md"`) || strings.Contains(out, "Child") {
		t.Errorf("page --page-name --include-blocks=false: %d %s %s", code, out, errOut)
	}
	out, errOut, code = run(t, "block", "--block-uuid", "11111111-0000-4000-8000-000000000001", "--vault", v, "--format", "json")
	if code != 0 || !strings.Contains(out, "Child") {
		t.Errorf("block --block-uuid: %d %s %s", code, out, errOut)
	}
	_, errOut, code = run(t, "page", "Other", "--page-name", "loci", "--vault", v)
	if code == 0 || !strings.Contains(errOut, "page_name (an alias of name) and name disagree") {
		t.Errorf("conflict: %d %s", code, errOut)
	}
	out, _, _ = run(t, "page", "--help")
	if strings.Contains(out, "page-name") {
		t.Errorf("alias flags are hidden: %s", out)
	}
}
