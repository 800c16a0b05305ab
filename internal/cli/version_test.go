package cli

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

// TestVersion: a binary built from this checkout reports the module, the
// revision go build stamped and the toolchain; --version agrees.
func TestVersion(t *testing.T) {
	bin := testutil.LociBinary(t)
	out, err := exec.Command(bin, "version", "--format", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var b BuildInfo
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if b.Module != "github.com/loci-dev/loci" || b.Version == "" || !strings.HasPrefix(b.Go, "go1.") || b.OS == "" {
		t.Errorf("version: %+v", b)
	}
	if rev, err := exec.Command("git", "-C", testutil.RepoRoot(), "rev-parse", "HEAD").Output(); err == nil && b.Revision != "" && b.Revision != strings.TrimSpace(string(rev)) {
		t.Errorf("revision %s, want HEAD %s", b.Revision, rev)
	}
	text, _ := exec.Command(bin, "version").Output()
	flag, _ := exec.Command(bin, "--version").Output()
	if !strings.HasPrefix(string(text), "loci "+b.Version+"\n") || !strings.Contains(string(flag), b.Version) {
		t.Errorf("text %q, --version %q, json version %q", text, flag, b.Version)
	}
}
