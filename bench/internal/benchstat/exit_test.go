package benchstat

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestGoBuild(t *testing.T) {
	dir := t.TempDir()
	src := "package main\n\nfunc main() { println(\"built\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "hello.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello.exe")
	if err := GoBuild(dir, out, "hello.go"); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command(out).CombinedOutput()
	if err != nil || strings.TrimSpace(string(got)) != "built" {
		t.Fatalf("built binary printed %q, %v", got, err)
	}

	err = GoBuild(dir, filepath.Join(dir, "none"), "missing.go")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(err.Error(), "missing.go") {
		t.Fatalf("building a missing file: %v, want go's exit error naming it", err)
	}
}
