package cli

import (
	"encoding/json"
	"os/exec"
	"runtime"
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
	if !strings.HasPrefix(string(text), "loci "+b.Version+"\n") || string(flag) != string(text) {
		t.Errorf("text %q, --version %q, json version %q", text, flag, b.Version)
	}
}

// TestVersionFlagIsTheCommand: `loci --version`, `-v` and `loci version`
// print the same lines, in process too.
func TestVersionFlagIsTheCommand(t *testing.T) {
	cmd, _, code := run(t, "version")
	flag, _, code2 := run(t, "--version")
	short, _, code3 := run(t, "-v")
	if code != 0 || code2 != 0 || code3 != 0 || cmd != flag || cmd != short || !strings.HasPrefix(cmd, "loci "+Version+"\n") ||
		!strings.Contains(cmd, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n") {
		t.Errorf("version %q (%d), --version %q (%d), -v %q (%d)", cmd, code, flag, code2, short, code3)
	}
}
