//go:build unix

package vault

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/testutil"
)

// outsideDir is a folder beside the vault whose contents must never change.
func outsideDir(t *testing.T, root string) string {
	t.Helper()
	out := filepath.Join(filepath.Dir(root), "outside-"+filepath.Base(root))
	if err := os.MkdirAll(filepath.Join(out, "Projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out, "victim"), []byte("do not touch\n"), 0o644)
	os.WriteFile(filepath.Join(out, "Home.md"), []byte("outside copy\n"), 0o644)
	return out
}

// TestWriterRefusesPlantedLinks plants a link at every file and folder the
// write pipeline touches and checks that the write is refused with
// path_denied naming the link, and that nothing outside the vault (nor the
// note) changes.
func TestWriterRefusesPlantedLinks(t *testing.T) {
	cases := []struct {
		name   string
		link   string // vault-relative
		target string // relative to the outside folder ("" = the folder)
		op     OpKind
		key    string // idempotency key to store
	}{
		{"trash folder (delete)", ".trash", "", OpTrash, ""},
		{"trash subfolder (delete)", ".trash/Projects", "Projects", OpTrash, ""},
		{"state folder", ".loci", "", OpPut, ""},
		{"journal folder", ".loci/journal", "", OpPut, ""},
		{"audit log", ".loci/audit.log", "victim", OpPut, ""},
		{"rotated audit log", ".loci/audit.log.1", "victim", OpPut, ""},
		{"write lock", ".loci/write.lock", "victim", OpPut, ""},
		{"idempotency store", ".loci/idempotency", "", OpPut, "k1"},
		{"note's folder", "Projects", "Projects", OpPut, ""},
		{"note itself", "Projects/Home.md", "Home.md", OpPut, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, root := newTestWriter(t, map[string]string{"Home.md": "home\n", "Projects/Home.md": "p\n"}, WriterOptions{})
			out := outsideDir(t, root)
			linkAbs := filepath.Join(root, filepath.FromSlash(c.link))
			os.MkdirAll(filepath.Dir(linkAbs), 0o755)
			os.RemoveAll(linkAbs)
			if err := os.Symlink(filepath.Join(out, c.target), linkAbs); err != nil {
				t.Fatal(err)
			}
			note := "Home.md"
			if strings.HasPrefix(c.link, "Projects") || strings.HasPrefix(c.link, ".trash/Projects") {
				note = "Projects/Home.md"
			}
			if c.link == "Projects" {
				note = "Projects/Home.md"
			}
			beforeOut := testutil.Tree(t, out)
			noteBefore, _ := os.ReadFile(filepath.Join(root, note))
			err := func() error {
				unlock, err := w.Lock(context.Background(), note)
				if err != nil {
					return err
				}
				defer unlock()
				op := FileOp{Kind: c.op, Path: note, Data: []byte("changed\n")}
				_, err = w.Commit(context.Background(), &Change{Operation: "t", Ops: []FileOp{op}, IdempotencyKey: c.key})
				if err == nil && c.key != "" {
					err = w.IdempotencyStore(&IdempotencyRecord{Key: c.key, Operation: "t"})
				}
				return err
			}()
			if errs.Code(err) != errs.CodePathDenied {
				t.Fatalf("got %v, want path_denied", err)
			}
			if !strings.Contains(err.Error(), c.link) {
				t.Errorf("error %q does not name the link %s", err, c.link)
			}
			if d := testutil.TreeDiff(beforeOut, testutil.Tree(t, out)); d != "" {
				t.Fatalf("outside changed: %s", d)
			}
			if c.link != "Projects" && c.link != "Projects/Home.md" {
				if b, _ := os.ReadFile(filepath.Join(root, note)); string(b) != string(noteBefore) {
					t.Fatalf("note changed: %q", b)
				}
			}
		})
	}
}

// TestUndoDoesNotTouchATrashThatBecameALink: a delete went to the real
// trash; then .trash is replaced by a link to an outside folder holding a
// file of the same name and bytes. Undoing the delete must not remove that
// outside file.
func TestRemoveTrashCopyThroughLink(t *testing.T) {
	w, root := newTestWriter(t, map[string]string{"Home.md": "home\n"}, WriterOptions{})
	out := outsideDir(t, root)
	os.WriteFile(filepath.Join(out, "Home.md"), []byte("home\n"), 0o644)
	if err := os.Symlink(out, filepath.Join(root, ".trash")); err != nil {
		t.Fatal(err)
	}
	if w.RemoveTrashCopy(".trash/Home.md", Etag([]byte("home\n"))) {
		t.Fatal("removed a file through the .trash link")
	}
	if b, err := os.ReadFile(filepath.Join(out, "Home.md")); err != nil || string(b) != "home\n" {
		t.Fatalf("outside file changed: %q %v", b, err)
	}
	if _, err := w.TrashTarget("Home.md"); errs.Code(err) != errs.CodePathDenied {
		t.Fatalf("TrashTarget through a link: %v", err)
	}
}

// TestReadFences: reads are for notes. Every surface reads through
// ReadNote and the index through the walk, so both must refuse the same
// things, for the requested path and for the real path a link leads to.
func TestReadFences(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"Home.md":                 "home",
		"Notes/a.md":              "a",
		".env":                    "SECRET=1",
		"notes.txt":               "text",
		".backups/old.md":         "backup",
		"Archive/x.md":            "archived",
		".loci/token":             "tok-secret-1234567890",
		".loci/secret.md":         "state as markdown",
		".obsidian/app.json":      "{}",
		".obsidian/snippet.md":    "obsidian internal",
		"graph/logseq/config.edn": "{}",
		"graph/pages/Zotero.md":   "- real page",
		"graph/logseq/bak/pages/Zotero/2024-01-01.md":     "- stale backup",
		"graph/logseq/version-files/base/pages/Zotero.md": "- old version",
		"graph/logseq/.recycle/pages/Zotero.md":           "- recycled",
		"Notes/.hidden.md":                                "hidden file",
	}
	for rel, body := range files {
		writeFile(t, root, rel, body)
	}
	links := map[string]string{
		"Notes/lci":      "../.loci",
		"Notes/obs":      "../.obsidian",
		"Notes/tok.md":   "../.loci/token",
		"Notes/sec.md":   "../.loci/secret.md",
		"Notes/arch":     "../Archive",
		"Notes/alias.md": "a.md", // a link to a note is a note
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	v, err := Open(root, []string{"Archive/**"})
	if err != nil {
		t.Fatal(err)
	}
	denied := []string{
		".env", "notes.txt", ".backups/old.md", "Archive/x.md", ".loci/token", ".obsidian/app.json",
		"Notes/lci/token", "Notes/lci/secret.md", "Notes/obs/app.json", "Notes/obs/snippet.md",
		"Notes/tok.md", "Notes/sec.md", "Notes/arch/x.md", "Notes/.hidden.md", "Notes/lci/missing.md",
		"graph/logseq/bak/pages/Zotero/2024-01-01.md", "graph/logseq/version-files/base/pages/Zotero.md",
		"graph/logseq/.recycle/pages/Zotero.md", "graph/logseq/config.edn",
	}
	for _, p := range denied {
		b, _, err := v.ReadNote(p)
		if errs.Code(err) != errs.CodePathDenied {
			t.Errorf("ReadNote(%q) = %q, %v; want path_denied", p, b, err)
		}
		if strings.Contains(string(b), "secret") || strings.Contains(string(b), "tok-") {
			t.Errorf("ReadNote(%q) returned a secret", p)
		}
	}
	for p, want := range map[string]string{"Home.md": "home", "Notes/a.md": "a", "Notes/alias.md": "a", "graph/pages/Zotero.md": "- real page"} {
		b, _, err := v.ReadNote(p)
		if err != nil || string(b) != want {
			t.Errorf("ReadNote(%q) = %q, %v", p, b, err)
		}
	}
	if _, _, err := v.ReadNote("Notes/none.md"); errs.Code(err) != errs.CodeNotFound {
		t.Errorf("missing note: %v", err)
	}
	var walked []string
	v.Walk(context.Background(), func(f File) error { walked = append(walked, f.Rel); return nil })
	got := strings.Join(walked, ",")
	if got != "Home.md,Notes/a.md,Notes/alias.md,graph/pages/Zotero.md" {
		t.Errorf("walk = %s", got)
	}
}

// TestReadFIFO: a FIFO named like a note is neither read (which would
// block forever) nor walked.
func TestReadFIFO(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a.md", "a")
	if err := mkfifo(filepath.Join(root, "pipe.md")); err != nil {
		t.Skip(err)
	}
	os.Symlink("pipe.md", filepath.Join(root, "pipelink.md"))
	v, _ := Open(root, nil)
	for _, p := range []string{"pipe.md", "pipelink.md"} {
		if _, _, err := v.ReadNote(p); errs.Code(err) != errs.CodePathDenied {
			t.Errorf("ReadNote(%s) = %v", p, err)
		}
	}
	var walked []string
	v.Walk(context.Background(), func(f File) error { walked = append(walked, f.Rel); return nil })
	if strings.Join(walked, ",") != "a.md" {
		t.Errorf("walk = %v", walked)
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }

// TestFailedRollbackKeepsTheJournalEntry: a change fails at its third file
// (its name was taken after the policy check); restoring the second fails
// too, because its folder was replaced by a link meanwhile. The journal
// entry, the only copy of that file's old bytes, must survive, and the
// error must name it.
func TestFailedRollbackKeepsTheJournalEntry(t *testing.T) {
	w, root := newTestWriter(t, map[string]string{"b.md": "B\n", "A/a.md": "A\n"}, WriterOptions{})
	out := outsideDir(t, root)
	w.afterApply = func(i int) {
		if i != 1 {
			return
		}
		writeFile(t, root, "c.md", "taken\n")
		if err := os.Rename(filepath.Join(root, "A"), filepath.Join(root, "A-moved")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(out, filepath.Join(root, "A")); err != nil {
			t.Fatal(err)
		}
	}
	beforeOut := testutil.Tree(t, out)
	_, err := w.Commit(context.Background(), &Change{Operation: "t", Ops: []FileOp{
		{Kind: OpPut, Path: "b.md", Data: []byte("B2\n")},
		{Kind: OpPut, Path: "A/a.md", Data: []byte("A2\n")},
		{Kind: OpCreate, Path: "c.md", Data: []byte("C\n")},
	}})
	if errs.Code(err) != errs.CodeInternal {
		t.Fatalf("got %v, want internal", err)
	}
	id, _ := errs.As(err).Details["undo_id"].(string)
	if id == "" || !strings.Contains(err.Error(), id) {
		t.Fatalf("the error does not name the journal entry it kept: %v (details %v)", err, errs.As(err).Details)
	}
	if nr, _ := errs.As(err).Details["not_restored"].([]string); strings.Join(nr, ",") != "A/a.md" {
		t.Errorf("not_restored = %v, want [A/a.md]", errs.As(err).Details["not_restored"])
	}
	e, jerr := w.JournalEntry(id)
	if jerr != nil {
		t.Fatalf("the journal entry named by the error is gone: %v", jerr)
	}
	if len(e.Files) != 2 {
		t.Fatalf("the kept entry lists %+v; want the two files applied (c.md never was)", e.Files)
	}
	if b, err := w.JournalBlob(id, e.Files[1].Blob); err != nil || string(b) != "A\n" {
		t.Errorf("the old bytes of A/a.md in the journal: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b.md")); string(b) != "B\n" {
		t.Errorf("b.md was not restored: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "A-moved", "a.md")); string(b) != "A2\n" {
		t.Errorf("A/a.md (moved away): %q", b)
	}
	if d := testutil.TreeDiff(beforeOut, testutil.Tree(t, out)); d != "" {
		t.Errorf("the rollback wrote through the link: %s", d)
	}

	// When every file is restored, the entry goes and the error says so.
	os.Remove(filepath.Join(root, "A"))
	os.Rename(filepath.Join(root, "A-moved"), filepath.Join(root, "A"))
	os.Remove(filepath.Join(root, "c.md"))
	w.afterApply = func(i int) { writeFile(t, root, "c.md", "taken\n") }
	_, err = w.Commit(context.Background(), &Change{Operation: "t", Ops: []FileOp{
		{Kind: OpPut, Path: "b.md", Data: []byte("B3\n")},
		{Kind: OpCreate, Path: "c.md", Data: []byte("C\n")},
	}})
	if errs.Code(err) != errs.CodeConflict || errs.As(err).Details["undo_id"] != nil {
		t.Fatalf("second change: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b.md")); string(b) != "B\n" {
		t.Errorf("b.md was not restored: %q", b)
	}
	if es, _ := w.Journal(); len(es) != 1 || es[0].ID != id {
		t.Errorf("journal after a fully restored change: %v", es)
	}
}
