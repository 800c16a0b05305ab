package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

// TestIndexDirTrust: index_dir from a vault's own config cannot send the
// index out of the vault; the user's own settings can.
func TestIndexDirTrust(t *testing.T) {
	t.Setenv("LOCI_CONFIG", "")
	t.Setenv("LOCI_INDEX_DIR", "")
	outside := t.TempDir()
	mk := func(cfg string) string {
		v := filepath.Join(t.TempDir(), "vault")
		testutil.WriteFiles(t, v, map[string]string{"n.md": "# N\n", ".loci/config.yaml": cfg})
		return v
	}
	for _, dir := range []string{outside, "../stolen", "notes/../../stolen"} {
		v := mk("index_dir: " + dir + "\n")
		if _, errOut, code := run(t, "index", v, "-q"); code != 2 || !strings.Contains(errOut, "[config_invalid]") || !strings.Contains(errOut, "index_dir") {
			t.Errorf("index_dir %s: %d %s", dir, code, errOut)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Fatalf("%s: something was written outside the vault: %v", dir, ents)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(v), "stolen")); !os.IsNotExist(err) {
			t.Fatalf("%s: the index went next to the vault", dir)
		}
	}
	// A relative index_dir is inside the vault, never the working directory.
	v := mk("index_dir: .cache/idx\n")
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Fatalf("relative index_dir: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(v, ".cache", "idx", "index.db")); err != nil {
		t.Errorf("index not in the vault: %v", err)
	}
	if _, err := os.Stat(".cache"); !os.IsNotExist(err) {
		t.Error("the index went to the working directory")
	}
	// ...nor through a symbolic link planted in the vault.
	v = mk("index_dir: cache/idx\n")
	if err := os.Symlink(outside, filepath.Join(v, "cache")); err != nil {
		t.Skip("no symlinks:", err)
	}
	if _, errOut, code := run(t, "index", v, "-q"); code != 2 || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("symlinked index_dir: %d %s", code, errOut)
	}
	// A .loci planted as a link out of the vault is refused, flag or not.
	v2 := filepath.Join(t.TempDir(), "v2")
	testutil.WriteFiles(t, v2, map[string]string{"n.md": "# N\n"})
	os.Symlink(outside, filepath.Join(v2, ".loci"))
	for _, args := range [][]string{{"index", v2, "-q"}, {"index", v2, "-q", "--index-dir", t.TempDir()}, {"token", v2}} {
		if _, errOut, code := run(t, args...); code != 4 || !strings.Contains(errOut, "[path_denied]") {
			t.Errorf("%v: %d %s", args, code, errOut)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("something was written outside the vault: %v", ents)
	}

	// The user's own settings may put the index anywhere (an absolute
	// index_dir in the vault's file stays invalid whatever the flags say,
	// unless the user's file says to ignore the vault's files).
	v = mk("")
	own := filepath.Join(t.TempDir(), "flag")
	if _, errOut, code := run(t, "index", v, "-q", "--index-dir", own); code != 0 {
		t.Errorf("--index-dir: %d %s", code, errOut)
	}
	envDir := filepath.Join(t.TempDir(), "env")
	t.Setenv("LOCI_INDEX_DIR", envDir)
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Errorf("LOCI_INDEX_DIR: %d %s", code, errOut)
	}
	t.Setenv("LOCI_INDEX_DIR", "")
	user := filepath.Join(t.TempDir(), "loci.yaml")
	userDir := filepath.Join(t.TempDir(), "user")
	os.WriteFile(user, []byte("index_dir: "+userDir+"\n"), 0o600)
	os.WriteFile(filepath.Join(v, ".loci", "config.yaml"), []byte("index_dir: "+outside+"\n"), 0o644)
	t.Setenv("LOCI_CONFIG", user)
	if _, errOut, code := run(t, "index", v, "-q"); code != 2 || !strings.Contains(errOut, "index_dir") {
		t.Errorf("LOCI_CONFIG over a vault file with an absolute index_dir: %d %s", code, errOut)
	}
	os.WriteFile(user, []byte("ignore_vault_config: true\nindex_dir: "+userDir+"\n"), 0o600)
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Errorf("LOCI_CONFIG index_dir: %d %s", code, errOut)
	}
	for _, d := range []string{own, envDir, userDir} {
		if _, err := os.Stat(filepath.Join(d, "index.db")); err != nil {
			t.Errorf("no index in %s: %v", d, err)
		}
	}
	// Several vaults never share one index folder.
	t.Setenv("LOCI_CONFIG", "")
	a, b := mk(""), filepath.Join(t.TempDir(), "other")
	testutil.WriteFiles(t, b, map[string]string{"m.md": "# M\n"})
	if _, errOut, code := run(t, "serve", a, b, "--index-dir", t.TempDir(), "--addr", "127.0.0.1:0"); code != 2 || !strings.Contains(errOut, "would share the index folder") {
		t.Errorf("serve two vaults, one --index-dir: %d %s", code, errOut)
	}
}
