package ops_test

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
)

// TestCaptureIDsAreUnique: two captures in the same second (the clock is
// pinned) get different ids, and so does a capture whose second is taken
// by a note already in the vault; frontmatter_validate reports notes that
// share an id.
func TestCaptureIDsAreUnique(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		// A note already holds the id the pinned clock would give.
		"Old.md": "---\nid: 20261120101530\n---\n# Old\n",
	})
	var ids []string
	for _, title := range []string{"First", "Second", "Third"} {
		res := opstest.Call[ops.WriteResult](t, env, "capture_note", opstest.JS(map[string]any{"title": title, "apply": true}))
		text := opstest.ReadFile(t, env, res.Path)
		id, _, _ := strings.Cut(strings.TrimPrefix(text, "---\nid: "), "\n")
		ids = append(ids, id)
	}
	seen := map[string]bool{"20261120101530": true}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("ids %v repeat (or reuse Old.md's)", ids)
		}
		seen[id] = true
	}
	if ids[0] != "20261120101531" || ids[1] != "20261120101532" {
		t.Errorf("ids = %v, want consecutive seconds after the taken one", ids)
	}
	// A preview does not use up its id: preview then apply show the same.
	prev := opstest.Call[ops.WriteResult](t, env, "capture_note", opstest.JS(map[string]any{"title": "Fourth"}))
	app := opstest.Call[ops.WriteResult](t, env, "capture_note", opstest.JS(map[string]any{"title": "Fourth", "apply": true}))
	if prev.Changes[0].Diff == "" || !strings.Contains(prev.Changes[0].Diff, "id: 20261120101534") || !strings.Contains(opstest.ReadFile(t, env, app.Path), "id: 20261120101534") {
		t.Errorf("preview and apply disagree:\n%s\n%s", prev.Changes[0].Diff, opstest.ReadFile(t, env, app.Path))
	}

	// Two notes with one id are both reported.
	os.WriteFile(filepath.Join(opstest.Root(env), "Copy.md"), []byte("---\nid: 20261120101530\n---\n# Copy\n"), 0o644)
	env.Sync(context.Background(), env.Vaults[0], index.SyncOptions{})
	out := opstest.Call[ops.ValidateOut](t, env, "frontmatter_validate", `{}`)
	if out.Counts["duplicate_id"] != 2 {
		t.Fatalf("duplicate_id count = %d, issues %+v", out.Counts["duplicate_id"], out.Issues)
	}
	var dup []string
	for _, is := range out.Issues {
		if is.Rule == "duplicate_id" {
			dup = append(dup, is.Path+": "+is.Message)
		}
	}
	if strings.Join(dup, "|") != "Copy.md: id 20261120101530 is also the id of Old.md|Old.md: id 20261120101530 is also the id of Copy.md" {
		t.Errorf("duplicate_id issues: %v", dup)
	}
}

// TestNewNamesMustBePortable: a folder named like a note, a Windows device
// name or a name of spaces is refused before anything is created, by
// capture_note's folder and by every path a write creates. Existing
// folders with such names stay writable.
func TestNewNamesMustBePortable(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"Home.md": "# Home\n", "Legacy./Old.md": "# Old\n"})
	for _, folder := range []string{"Home.md", "Inbox/notes.MD", "CON", "aux", "lpt1.txt", "   ", "Inbox/ ", "Trailing."} {
		code, details := opstest.CallErr(t, env, "capture_note", opstest.JS(map[string]any{"title": "X", "folder": folder, "apply": true}))
		if code != errs.CodeInvalidInput || details["field"] != "folder" {
			t.Errorf("capture folder %q: %s %v, want validation_failed naming folder", folder, code, details)
		}
	}
	for _, p := range []string{"Home.md/x.md", "CON.md", "nul/x.md", "A /x.md", "x./y.md"} {
		code, _ := opstest.CallErr(t, env, "write_note", opstest.JS(map[string]any{"path": p, "content": "x", "apply": true}))
		if code != errs.CodePathDenied {
			t.Errorf("write_note %q: %s, want path_denied", p, code)
		}
	}
	entries, _ := os.ReadDir(opstest.Root(env))
	for _, e := range entries {
		if e.IsDir() && e.Name() != "Legacy." && !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a folder was created: %s", e.Name())
		}
	}
	// What exists already can still be edited.
	opstest.Call[ops.WriteResult](t, env, "write_note", opstest.JS(map[string]any{"path": "Legacy./Old.md", "content": "# Old\nmore\n", "if_match": opstest.EtagOf(t, env, "Legacy./Old.md"), "apply": true}))

	// A folder named like a note (made by hand) is a folder, not a 500.
	os.MkdirAll(filepath.Join(opstest.Root(env), "Dir.md"), 0o755)
	code, _ := opstest.CallErr(t, env, "read_note", `{"path":"Dir.md"}`)
	if code != errs.CodeNotFound {
		t.Errorf("read_note of a folder: %s, want note_not_found", code)
	}
}

// TestGuardErrorsNameTheFieldPassed: a bad expected_sha256 is reported as
// expected_sha256 with the value sent, not as an empty if_match.
func TestGuardErrorsNameTheFieldPassed(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"A.md": "a\n"})
	res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, "write_note", json.RawMessage(`{"path":"A.md","content":"b","expected_sha256":"deadbeef","apply":true}`))
	if res.Err == nil || res.Err.Code != errs.CodeInvalidInput {
		t.Fatalf("got %v", res.Err)
	}
	if !strings.Contains(res.Err.Message, `expected_sha256 "deadbeef"`) || res.Err.Details["expected_sha256"] != "deadbeef" || res.Err.Details["field"] != "expected_sha256" {
		t.Errorf("message %q details %v", res.Err.Message, res.Err.Details)
	}
	res = opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, "write_note", json.RawMessage(`{"path":"A.md","if_match":"xyz","content":"c"}`))
	if res.Err == nil || !strings.Contains(res.Err.Message, `if_match "xyz"`) {
		t.Errorf("if_match: %v", res.Err)
	}
}

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
		out := opstest.Call[ops.SearchNotesOut](t, env, "search_notes", opstest.JS(map[string]any{"query": q, "mode": "lexical"}))
		for _, r := range out.Results {
			if r.Path != "Home.md" && r.Path != "graph/pages/Zotero.md" {
				t.Errorf("search %q found %s", q, r.Path)
			}
		}
	}
	rn := opstest.Call[ops.ReadNoteOut](t, env, "read_note", `{"note":"Zotero"}`)
	if rn.Path != "graph/pages/Zotero.md" || strings.Contains(rn.Content, "stale") {
		t.Errorf("read_note Zotero = %s %q", rn.Path, rn.Content)
	}
	st := opstest.Call[ops.IndexStatusOut](t, env, "index_status", `{}`)
	if st.Notes != 2 {
		t.Errorf("indexed %d notes, want Home.md and the Zotero page", st.Notes)
	}
	_ = time.Now
}
