package vault

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// TestWriteAtomicOverSpecialFile: something other than a regular file at
// the target (a folder named like a note, swapped in after the policy
// check) is path_denied naming it, not an internal error.
func TestWriteAtomicOverSpecialFile(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "d.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeFileAtomic(safefs.Root(root), "d.md", []byte("x"), false)
	if errs.Code(err) != errs.CodePathDenied || errs.As(err).Details["path"] != "d.md" {
		t.Fatalf("got %v (code %s), want path_denied naming d.md", err, errs.Code(err))
	}
	if st, err := os.Stat(filepath.Join(root, "d.md")); err != nil || !st.IsDir() {
		t.Fatalf("the folder changed: %v %v", st, err)
	}
}
