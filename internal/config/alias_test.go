package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
)

// aliasBomb is a small file whose aliases expand to n×n values: n
// providers entries, each an alias of one entry with n headers (about
// 60 KB for n = 3000, nine million values once expanded).
func aliasBomb(n int) []byte {
	var b strings.Builder
	b.WriteString("providers:\n  p0: &p\n    headers:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "      h%d: x\n", i)
	}
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  p%d: *p\n", i)
	}
	return []byte(b.String())
}

// TestAliasBombRefused: aliases of aliases that expand a small planted
// file into millions of values are config_invalid, for a vault's file and
// the user's, without walking them all (the walk counts every value it
// visits, aliases expanded, and stops at a bound).
func TestAliasBombRefused(t *testing.T) {
	data := aliasBomb(3000)
	for _, source := range []string{SourceVault, SourceUser} {
		_, err := Parse(data, "config.yaml", source)
		if errs.Code(err) != errs.CodeConfigInvalid {
			t.Fatalf("%s: %v", source, err)
		}
		probs := Problems(err)
		if len(probs) != 1 || !strings.Contains(probs[0].Message, fmt.Sprintf("more than %d values once its YAML aliases are expanded", maxVisits)) {
			t.Errorf("%s: %+v", source, probs)
		}
	}
	// A file that uses an alias or two is fine.
	ok := "providers:\n  a: &p {base_url: 'http://localhost:1/v1', headers: {X-A: b}}\n  b: *p\n"
	if f, err := Parse([]byte(ok), "config.yaml", SourceVault); err != nil || f.Providers["b"].Headers["X-A"] != "b" {
		t.Errorf("a few aliases: %v %+v", err, f)
	}
}
