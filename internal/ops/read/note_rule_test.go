package read_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
)

// TestReadSurfacesShareTheNoteRule drives the read operations over a vault
// with links into hidden folders, non-notes, excluded notes and a Logseq
// graph with backups: nothing but notes comes back, no secret leaks, and a
// backup never shadows its page.
func TestReadSurfacesShareTheNoteRule(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	dir := filepath.Join(t.TempDir(), "vault")
	files := map[string]string{
		"Home.md":                 "# Home\nsee [[Zotero]]\n",
		".env":                    "API_KEY=zz-secret-zz",
		"notes.txt":               "plain text zz-secret-zz",
		".backups/Home.md":        "# Old home zz-secret-zz\n",
		"Private/diary.md":        "# Diary zz-secret-zz\n",
		".obsidian/app.json":      `{"zz-secret-zz":1}`,
		"graph/logseq/config.edn": "{}",
		"graph/pages/Zotero.md":   "- the real Zotero page\n",
		"graph/logseq/bak/pages/Zotero/2024-01-01T00_00_00.md": "- a stale copy zz-secret-zz\n",
		"graph/logseq/version-files/base/pages/Zotero.md":      "- an old version zz-secret-zz\n",
	}
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, ".loci"), 0o755)
	os.WriteFile(filepath.Join(dir, ".loci", "token"), []byte("zz-secret-zz-token-000000000000\n"), 0o600)
	for l, target := range map[string]string{"Notes/lci": "../.loci", "Notes/obs": "../.obsidian", "Notes/t.md": "../.loci/token", "Notes/d.md": "../Private/diary.md"} {
		os.MkdirAll(filepath.Join(dir, "Notes"), 0o755)
		if err := os.Symlink(target, filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, dir, t.TempDir(), []string{"Private/**"}, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	t.Cleanup(env.Close)
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"Notes/lci/token", "Notes/obs/app.json", "Notes/t.md", "Notes/d.md", ".env", "notes.txt", ".backups/Home.md", "Private/diary.md",
		"graph/logseq/bak/pages/Zotero/2024-01-01T00_00_00.md", "graph/logseq/version-files/base/pages/Zotero.md"} {
		res := opstest.Reg.Call(ctx, env, ops.Caller{Surface: "test"}, "read_note", json.RawMessage(opstest.JS(map[string]any{"path": p})))
		if res.Err == nil || res.Err.Code != errs.CodePathDenied {
			b, _ := json.Marshal(res.Output)
			t.Errorf("read_note %s: %v %s", p, res.Err, b)
		}
	}
	// Searching and resolving see only the real notes.
	for _, q := range []string{"zz-secret-zz", "secret", "stale copy", "Zotero"} {
		out := opstest.Call[read.SearchNotesOut](t, env, "search_notes", opstest.JS(map[string]any{"query": q, "mode": "lexical"}))
		for _, r := range out.Results {
			if r.Path != "Home.md" && r.Path != "graph/pages/Zotero.md" {
				t.Errorf("search %q found %s", q, r.Path)
			}
		}
	}
	rn := opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"note":"Zotero"}`)
	if rn.Path != "graph/pages/Zotero.md" || strings.Contains(rn.Content, "stale") {
		t.Errorf("read_note Zotero = %s %q", rn.Path, rn.Content)
	}
	st := opstest.Call[read.IndexStatusOut](t, env, "index_status", `{}`)
	if st.Notes != 2 {
		t.Errorf("indexed %d notes, want Home.md and the Zotero page", st.Notes)
	}
	_ = time.Now
}
