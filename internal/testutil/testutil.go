// Package testutil holds helpers shared by tests: locating the shared
// corpora (skipping cleanly when they are absent) and building vaults.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedDir returns ../shared beside the repository, or "" if absent.
// LOCI_SHARED overrides it.
func SharedDir() string {
	if d := os.Getenv("LOCI_SHARED"); d != "" {
		return d
	}
	d := filepath.Join(RepoRoot(), "..", "shared")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// Corpus returns the path of a corpus under shared/corpora (or shared/eval
// when name starts with "eval/"), skipping the test when it is absent.
func Corpus(tb testing.TB, name string) string {
	tb.Helper()
	s := SharedDir()
	if s == "" {
		tb.Skipf("shared corpora not found beside the repo (../shared); skipping %s", name)
	}
	p := filepath.Join(s, "corpora", name)
	if len(name) > 5 && name[:5] == "eval/" {
		p = filepath.Join(s, name)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("corpus %s not found at %s; skipping", name, p)
	}
	return p
}

// DemoVault returns the bundled demo vault.
func DemoVault() string { return filepath.Join(RepoRoot(), "demo", "vault") }

// WriteFiles creates files (vault-relative path → content) under root.
func WriteFiles(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	for rel, body := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// CopyTree copies a folder (regular files only) to dst.
func CopyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			if info.Name() == ".loci" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}
