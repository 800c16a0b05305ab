package write

import (
	"strings"
	"testing"
)

// TestSafeFileName: a title never becomes a reserved, hidden or empty name.
func TestSafeFileName(t *testing.T) {
	for _, title := range []string{"CON", "..", "   "} {
		if n := safeFileName(title); n == "CON" || strings.HasPrefix(n, ".") || strings.TrimSpace(n) == "" {
			t.Errorf("safeFileName(%q) = %q", title, n)
		}
	}
}
