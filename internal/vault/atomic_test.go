package vault

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

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

// TestTempNameOfLongNonASCIIName: the temporary name beside a note whose
// name is long and not ASCII stays valid UTF-8 (cutting it at byte 100
// split a character, and APFS refuses such a name), and a write of that
// note sweeps a temporary file a killed writer left.
func TestTempNameOfLongNonASCIIName(t *testing.T) {
	name := "a" + strings.Repeat("é", 70) + ".md" // byte 100 is inside an é
	if tmp := tempName(name); !utf8.ValidString(tmp) || !strings.HasPrefix(tmp, "."+name[:99]) {
		t.Fatalf("temporary name %q is not valid UTF-8 or not the name's start", tmp)
	}
	root := t.TempDir()
	stale := filepath.Join(root, tempName(name))
	if err := os.WriteFile(stale, []byte("left by a killed writer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(safefs.Root(root), name, []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 1 || ents[0].Name() != name {
		t.Fatalf("entries after the write: %v", ents)
	}
}
