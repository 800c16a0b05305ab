package write

import (
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/vault"
)

// TestSafeFileName: a title never becomes a reserved, hidden or empty name,
// nor one the writer refuses for a new note (device names with an
// extension or a superscript digit included).
func TestSafeFileName(t *testing.T) {
	for _, title := range []string{"CON", "..", "   ", "CON.txt", "aux.notes", "COM¹", "lpt³.md.bak", "nul.", "Prn . x"} {
		n := safeFileName(title)
		if n == "CON" || strings.HasPrefix(n, ".") || strings.TrimSpace(n) == "" {
			t.Errorf("safeFileName(%q) = %q", title, n)
		}
		if why := vault.NameProblem(n+".md", false); why != "" {
			t.Errorf("safeFileName(%q) = %q, which the writer refuses: %s", title, n, why)
		}
	}
	for title, want := range map[string]string{"CON.txt": "CON_.txt", "aux.notes": "aux_.notes", "COM¹": "COM¹_", "Meeting: Q3?": "Meeting Q3", "console": "console"} {
		if n := safeFileName(title); n != want {
			t.Errorf("safeFileName(%q) = %q, want %q", title, n, want)
		}
	}
}
