//go:build unix

package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// TestTokenReadIsTheFileChecked: the mode is checked on the file that is
// read. A token file swapped between the check and the read (here: for one
// readable by everyone, holding another token) must not be what loci uses.
func TestTokenReadIsTheFileChecked(t *testing.T) {
	t.Setenv(EnvToken, "")
	vaultRoot := t.TempDir()
	dirPath := filepath.Join(vaultRoot, ".loci")
	dir := safefs.At(dirPath, vaultRoot)
	tok, err := RotateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	planted := strings.Repeat("p", 43)
	tokenChecked = func() {
		tmp := filepath.Join(dirPath, "planted")
		if err := os.WriteFile(tmp, []byte(planted+"\n"), 0o644); err != nil {
			t.Error(err)
		}
		os.Chmod(tmp, 0o644)
		if err := os.Rename(tmp, filepath.Join(dirPath, TokenFile)); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { tokenChecked = nil })
	got, _, err := LoadOrCreateToken(dir)
	if err != nil || got != tok {
		t.Errorf("token swapped after its check: got %q %v, want the checked file's %q (planted %q)", got, err, tok, planted)
	}
	// The next read sees the planted file, and refuses it: others may read it.
	tokenChecked = nil
	if got, _, err := LoadOrCreateToken(dir); err == nil || !strings.Contains(err.Error(), "--rotate") {
		t.Errorf("the planted 0644 token: %q %v", got, err)
	}
	// A folder at the token path is refused.
	os.Remove(filepath.Join(dirPath, TokenFile))
	os.Mkdir(filepath.Join(dirPath, TokenFile), 0o700)
	if got, _, err := LoadOrCreateToken(dir); errs.Code(err) != errs.CodeForbidden {
		t.Errorf("a folder at the token path: %q %v", got, err)
	}
}

// TestTokenFIFO: a FIFO at the token path is refused, and opening it to
// check it never blocks (there is no writer).
func TestTokenFIFO(t *testing.T) {
	t.Setenv(EnvToken, "")
	vaultRoot := t.TempDir()
	dirPath := filepath.Join(vaultRoot, ".loci")
	if err := os.Mkdir(dirPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dirPath, TokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _, err := LoadOrCreateToken(safefs.At(dirPath, vaultRoot))
	if errs.Code(err) != errs.CodeForbidden || !strings.Contains(err.Error(), "--rotate") {
		t.Errorf("a FIFO at the token path: %q %v", got, err)
	}
}

// TestRotateRefusesALinkAtTheTokenPath: rotating never writes through, nor
// replaces, a link planted at the token path, and leaves no temporary file.
// (That the rotation is durable, the folder fsynced after the rename, is
// safefs.Root.WriteFileAtomic's; a crash is not simulated here.)
func TestRotateRefusesALinkAtTheTokenPath(t *testing.T) {
	t.Setenv(EnvToken, "")
	vaultRoot := t.TempDir()
	dirPath := filepath.Join(vaultRoot, ".loci")
	dir := safefs.At(dirPath, vaultRoot)
	if _, err := RotateToken(dir); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(outside, []byte("outside\n"), 0o600)
	link := filepath.Join(dirPath, TokenFile)
	os.Remove(link)
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if tok, err := RotateToken(dir); errs.Code(err) != errs.CodePathDenied {
		t.Errorf("rotate over a link: %q %v, want path_denied", tok, err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside\n" {
		t.Errorf("the link's target changed: %q", b)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st, err)
	}
	entries, _ := os.ReadDir(dirPath)
	for _, e := range entries {
		if e.Name() != TokenFile {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
