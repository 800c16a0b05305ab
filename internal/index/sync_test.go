package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

func openTest(t *testing.T, root string) *Index {
	t.Helper()
	v, err := vault.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Open(context.Background(), v, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func mustSync(t *testing.T, ix *Index, opt SyncOptions) *SyncResult {
	t.Helper()
	res, err := ix.Sync(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func count(t *testing.T, ix *Index, q string, args ...any) int {
	t.Helper()
	var n int
	if err := ix.DB.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// bump sets a file's mtime forward so (size, mtime) differs even when the
// test rewrites it within the same clock tick.
func bump(t *testing.T, p string, d time.Duration) {
	t.Helper()
	now := time.Now().Add(d)
	if err := os.Chtimes(p, now, now); err != nil {
		t.Fatal(err)
	}
}

func TestSyncLifecycle(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"a.md":           "# A\n\nalpha text links to [[b]]\n",
		"folder/b.md":    "---\ntags: [x]\n---\n# B\n\nbravo text\n",
		"c.md":           "charlie links to [[d]] which does not exist yet\n",
		".obsidian/x.md": "ignored",
	})
	ix := openTest(t, root)
	res := mustSync(t, ix, SyncOptions{})
	if res.Indexed != 3 || res.Unchanged != 0 || res.Removed != 0 || res.Failed != 0 {
		t.Fatalf("first sync = %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM links WHERE dst_id IS NULL"); n != 1 {
		t.Fatalf("unresolved links = %d, want 1 ([[d]])", n)
	}

	// Nothing changed.
	res = mustSync(t, ix, SyncOptions{})
	if res.Indexed != 0 || res.Unchanged != 3 {
		t.Fatalf("no-op sync = %+v", res)
	}

	// Touched but identical content: unchanged via the hash, mtime refreshed.
	bump(t, filepath.Join(root, "a.md"), time.Hour)
	res = mustSync(t, ix, SyncOptions{})
	if res.Indexed != 0 || res.Unchanged != 3 {
		t.Fatalf("touch sync = %+v", res)
	}

	// Modify.
	testutil.WriteFiles(t, root, map[string]string{"a.md": "# A\n\nalpha changed, still links to [[b]]\n"})
	bump(t, filepath.Join(root, "a.md"), 2*time.Hour)
	res = mustSync(t, ix, SyncOptions{})
	if res.Indexed != 1 || res.Unchanged != 2 {
		t.Fatalf("modify sync = %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunks WHERE text LIKE '%changed%'"); n != 1 {
		t.Fatalf("modified text not indexed")
	}

	// Add the missing target: c's link resolves now.
	testutil.WriteFiles(t, root, map[string]string{"d.md": "delta"})
	res = mustSync(t, ix, SyncOptions{})
	if res.Indexed != 1 {
		t.Fatalf("add sync = %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM links WHERE dst_id IS NULL"); n != 0 {
		t.Fatalf("link to new note still unresolved")
	}

	// Rename b → folder/renamed.md: a's link [[b]] becomes unresolved.
	if err := os.Rename(filepath.Join(root, "folder/b.md"), filepath.Join(root, "folder/renamed.md")); err != nil {
		t.Fatal(err)
	}
	res = mustSync(t, ix, SyncOptions{})
	if res.Indexed != 1 || res.Removed != 1 {
		t.Fatalf("rename sync = %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM links WHERE dst_id IS NULL AND target='b'"); n != 1 {
		t.Fatalf("link to renamed note should be unresolved")
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM tags t JOIN notes n ON n.id=t.note_id WHERE n.path='folder/renamed.md'"); n != 1 {
		t.Fatalf("renamed note lost its tag")
	}

	// Delete.
	os.Remove(filepath.Join(root, "c.md"))
	res = mustSync(t, ix, SyncOptions{})
	if res.Removed != 1 {
		t.Fatalf("delete sync = %+v", res)
	}
	for _, tbl := range []string{"chunks", "links", "tags", "props"} {
		q := "SELECT COUNT(*) FROM " + tbl + " WHERE " + childKey(tbl) + " NOT IN (SELECT id FROM notes)"
		if n := count(t, ix, q); n != 0 {
			t.Fatalf("%d orphan rows in %s", n, tbl)
		}
	}
	// The contentless FTS table has exactly one row per chunk.
	if a, b := count(t, ix, "SELECT COUNT(*) FROM chunks"), count(t, ix, "SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'alpha OR bravo OR delta'"); a < b {
		t.Fatalf("fts has more rows (%d) than chunks (%d)", b, a)
	}

	// Reset rebuilds everything.
	res = mustSync(t, ix, SyncOptions{Reset: true})
	if res.Indexed != 3 || res.Unchanged != 0 {
		t.Fatalf("reset sync = %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM notes"); n != 3 {
		t.Fatalf("notes after reset = %d", n)
	}
}

func TestSyncPaths(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "alpha", "b.md": "bravo"})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	testutil.WriteFiles(t, root, map[string]string{"a.md": "alpha two", "b.md": "bravo two", "new.md": "new"})
	bump(t, filepath.Join(root, "a.md"), time.Hour)
	bump(t, filepath.Join(root, "b.md"), time.Hour)
	res := mustSync(t, ix, SyncOptions{Paths: []string{"a.md", "new.md"}})
	if res.Indexed != 2 || res.Removed != 0 {
		t.Fatalf("paths sync = %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunks WHERE text='bravo'"); n != 1 {
		t.Fatalf("b.md should not have been re-indexed")
	}
	os.Remove(filepath.Join(root, "a.md"))
	res = mustSync(t, ix, SyncOptions{Paths: []string{"a.md"}})
	if res.Removed != 1 {
		t.Fatalf("paths delete = %+v", res)
	}
	if _, err := ix.Sync(context.Background(), SyncOptions{Paths: []string{"../escape.md"}}); errs.Code(err) != errs.CodePathDenied {
		t.Fatalf("traversal in --paths: %v", err)
	}
}

func TestSyncFileVanishesMidScan(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"keep.md": "keep", "gone.md": "gone", "old.md": "old"})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	testutil.WriteFiles(t, root, map[string]string{"old.md": "old but changed", "fresh.md": "fresh"})
	bump(t, filepath.Join(root, "old.md"), time.Hour)
	ix.afterWalk = func() {
		// Both a known changed file and a brand-new file disappear after the walk saw them.
		os.Remove(filepath.Join(root, "old.md"))
		os.Remove(filepath.Join(root, "fresh.md"))
	}
	res := mustSync(t, ix, SyncOptions{})
	if res.Failed != 0 || res.Removed != 1 || res.Indexed != 0 {
		t.Fatalf("vanish sync = %+v", res)
	}
	var paths []string
	rows, _ := ix.DB.Query("SELECT path FROM notes")
	for rows.Next() {
		var p string
		rows.Scan(&p)
		paths = append(paths, p)
	}
	rows.Close()
	sort.Strings(paths)
	if len(paths) != 2 || paths[0] != "gone.md" || paths[1] != "keep.md" {
		t.Fatalf("notes = %v", paths)
	}
}

func TestSyncRecordsUnreadableFiles(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can read unreadable files")
	}
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"ok.md": "ok", "locked.md": "secret"})
	os.Chmod(filepath.Join(root, "locked.md"), 0)
	ix := openTest(t, root)
	res := mustSync(t, ix, SyncOptions{})
	if res.Failed != 1 || res.Indexed != 1 {
		t.Fatalf("sync = %+v", res)
	}
	st, err := ix.Status(context.Background())
	if err != nil || len(st.Failures) != 1 || st.Failures[0].Path != "locked.md" {
		t.Fatalf("status failures = %+v, %v", st, err)
	}
}

func TestSingleWriter(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "alpha"})
	ix := openTest(t, root)
	lock, err := acquireWriter(ix.Loc, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ix.Sync(context.Background(), SyncOptions{})
	if errs.Code(err) != errs.CodeIndexBusy {
		t.Fatalf("second writer: %v, want index_busy", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ix.Sync(context.Background(), SyncOptions{Wait: true})
		done <- err
	}()
	lock.release()
	if err := <-done; err != nil {
		t.Fatalf("waiting writer: %v", err)
	}
}

func TestReadersNotBlockedByWriter(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "alpha"})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	ctx := context.Background()
	conn, err := ix.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("UPDATE notes SET title='writing'"); err != nil {
		t.Fatal(err)
	}
	// A second connection reads the committed state while the write is open.
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var title string
	if err := ix.DB.QueryRowContext(rctx, "SELECT title FROM notes").Scan(&title); err != nil || title != "a" {
		t.Fatalf("reader got %q, %v", title, err)
	}
}

func TestSchemaTooNew(t *testing.T) {
	root := t.TempDir()
	ix := openTest(t, root)
	if _, err := ix.DB.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	v, _ := vault.Open(root, nil)
	_, err := Open(context.Background(), v, Options{})
	if errs.Code(err) != errs.CodeIndexSchema {
		t.Fatalf("newer schema: %v", err)
	}
}

func TestInvalidFrontmatterIndexedAndReported(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"bad.md": "---\ntitle: [unclosed\n---\n# Bad\n\nbody words here\n"})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	st, err := ix.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.FrontmatterIssue) != 1 || st.FrontmatterIssue[0].Path != "bad.md" || st.FrontmatterIssue[0].Error == "" {
		t.Fatalf("frontmatter issues = %+v", st.FrontmatterIssue)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunks WHERE text LIKE '%body words%'"); n != 1 {
		t.Fatal("body of a note with bad frontmatter not indexed")
	}
}

// TestSyncCancelledMidBuildHeals cancels a build from empty (Ctrl-C) after
// some of its transactions committed: the notes are there without their
// links. The next sync must notice the marker and rebuild every link,
// including for a --paths sync, which is widened to the whole vault.
func TestSyncCancelledMidBuildHeals(t *testing.T) {
	defer func(n int) { txRows = n }(txRows)
	txRows = 20 // commit every few notes
	root := t.TempDir()
	files := map[string]string{}
	for i := 0; i < 60; i++ {
		files[fmt.Sprintf("n%02d.md", i)] = fmt.Sprintf("# N%d\n\nlinks to [[n%02d]] and [[n%02d]] #t%d\n", i, (i+1)%60, (i+7)%60, i%5)
	}
	testutil.WriteFiles(t, root, files)
	ix := openTest(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := ix.Sync(ctx, SyncOptions{NoEmbed: true, Workers: 1, Progress: func(done, total int) {
		if done == 40 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("cancelled sync succeeded")
	}
	// The committed notes' links are stored with them, not yet resolved
	// (that happens at the end of the run).
	notes := count(t, ix, "SELECT COUNT(*) FROM notes")
	links := count(t, ix, "SELECT COUNT(*) FROM links")
	resolved := count(t, ix, "SELECT COUNT(*) FROM links WHERE dst_id IS NOT NULL")
	if notes == 0 || notes == 60 || links != 2*notes || resolved != 0 {
		t.Fatalf("want some notes committed with their links unresolved, got %d notes, %d links, %d resolved", notes, links, resolved)
	}
	if ix.Meta(context.Background(), metaIncomplete) == "" {
		t.Fatal("an interrupted build left no sync_incomplete marker")
	}

	res := mustSync(t, ix, SyncOptions{NoEmbed: true, Paths: []string{"n00.md"}})
	if !res.Recovered || res.Indexed != 60-notes {
		t.Fatalf("healing sync = %+v, want recovered with %d notes indexed", res, 60-notes)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM links WHERE dst_id IS NOT NULL"); n != 120 {
		t.Fatalf("resolved links after healing = %d, want 120", n)
	}
	if ix.Meta(context.Background(), metaIncomplete) != "" {
		t.Fatal("marker still set after a complete sync")
	}
	if res := mustSync(t, ix, SyncOptions{NoEmbed: true}); res.Recovered || res.Unchanged != 60 {
		t.Fatalf("next sync = %+v, want a no-op", res)
	}
}

// TestSyncPathsWithRefusedLinks: a --paths batch (the watcher's) holding a
// link out of the vault and a link to a hidden file still syncs its other
// paths; a refused path that was indexed leaves the index, one that was
// not is skipped.
func TestSyncPathsWithRefusedLinks(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	testutil.WriteFiles(t, outside, map[string]string{"secret.md": "outside secret"})
	testutil.WriteFiles(t, root, map[string]string{"a.md": "alpha", "b.md": "bravo", ".hidden/h.md": "hidden words", "was.md": "will become a link"})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	testutil.WriteFiles(t, root, map[string]string{"a.md": "alpha two", "new.md": "fresh"})
	bump(t, filepath.Join(root, "a.md"), time.Hour)
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "out.md")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	os.Symlink(filepath.Join(root, ".hidden", "h.md"), filepath.Join(root, "hid.md"))
	os.Remove(filepath.Join(root, "was.md"))
	os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "was.md"))

	res, err := ix.Sync(context.Background(), SyncOptions{Paths: []string{"out.md", "a.md", "hid.md", "new.md", "was.md"}})
	if err != nil {
		t.Fatalf("a link out of the vault failed the whole batch: %v", err)
	}
	if res.Indexed != 2 || res.Removed != 1 {
		t.Errorf("sync = %+v, want a.md and new.md indexed, was.md removed", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunks WHERE text IN ('alpha two', 'fresh')"); n != 2 {
		t.Errorf("the good paths were not indexed (%d of 2)", n)
	}
	for _, p := range []string{"out.md", "hid.md", "was.md"} {
		if n := count(t, ix, "SELECT COUNT(*) FROM notes WHERE path=?", p); n != 0 {
			t.Errorf("%s is indexed", p)
		}
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunks WHERE text LIKE '%secret%' OR text LIKE '%hidden%'"); n != 0 {
		t.Errorf("what a refused link leads to was indexed")
	}
}

// TestSyncIndexesNFDNames: a note whose name on disk is NFD (synced from a
// Mac) is indexed under its NFC name, and a --paths sync of that name
// finds it too.
func TestSyncIndexesNFDNames(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"Cafe\u0301.md": "espresso"})
	ix := openTest(t, root)
	if res := mustSync(t, ix, SyncOptions{}); res.Indexed != 1 || res.Failed != 0 {
		t.Fatalf("sync = %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM notes WHERE path=?", "Café.md"); n != 1 {
		t.Fatalf("Café.md is not indexed under its NFC name")
	}
	testutil.WriteFiles(t, root, map[string]string{"Cafe\u0301.md": "ristretto"})
	bump(t, filepath.Join(root, "Cafe\u0301.md"), time.Hour)
	if res := mustSync(t, ix, SyncOptions{Paths: []string{"Café.md"}}); res.Indexed != 1 || res.Removed != 0 {
		t.Fatalf("paths sync = %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunks WHERE text='ristretto'"); n != 1 {
		t.Fatalf("the change was not indexed")
	}
}

func TestContentRevChangesWithEveryWrite(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n"), 0o644)
	ix := openTest(t, dir)
	ctx := context.Background()
	if _, err := ix.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	r1 := ix.ContentRev(ctx)
	if r1 == "" {
		t.Fatal("no content revision after the first sync")
	}
	if _, err := ix.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := ix.ContentRev(ctx); r != r1 {
		t.Fatalf("a no-op sync changed the revision: %s → %s", r1, r)
	}
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\nmore\n"), 0o644)
	if _, err := ix.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := ix.ContentRev(ctx); r == r1 {
		t.Fatal("an edit left the revision unchanged")
	}
}

// TestBulkBuildBoundsWAL: a bulk build (automatic checkpoints off) keeps
// its write-ahead log near bulkWALLimit instead of letting it hold the
// whole index until the end. The WAL's largest size is sampled between
// notes through the progress callback, in the same build with and
// without the bound.
func TestBulkBuildBoundsWAL(t *testing.T) {
	defer func(n int, l int64) { txRows, bulkWALLimit = n, l }(txRows, bulkWALLimit)
	txRows = 200 // several transactions in a small vault
	build := func(limit int64) int64 {
		bulkWALLimit = limit
		dir := t.TempDir()
		files := map[string]string{}
		for i := range 1200 {
			files[fmt.Sprintf("n/%04d.md", i)] = fmt.Sprintf("# Note %d\n\n%s\n", i, strings.Repeat(fmt.Sprintf("word%d filler text about topic %d. ", i, i%37), 40))
		}
		testutil.WriteFiles(t, dir, files)
		ix := openTest(t, dir)
		var most int64
		wal := filepath.Join(dir, ".loci", DBName+"-wal")
		if _, err := ix.Sync(context.Background(), SyncOptions{Progress: func(done, total int) {
			if fi, err := os.Stat(wal); err == nil && fi.Size() > most {
				most = fi.Size()
			}
		}}); err != nil {
			t.Fatal(err)
		}
		return most
	}
	unbounded := build(1 << 40)
	bounded := build(256 << 10)
	t.Logf("largest WAL during the build: %d bytes unbounded, %d bytes with a 256 KiB bound", unbounded, bounded)
	if unbounded < 4<<20 {
		t.Fatalf("the unbounded build's WAL stayed at %d bytes: the vault is too small to show the bound", unbounded)
	}
	if bounded > unbounded/2 {
		t.Errorf("with the bound the WAL still grew to %d bytes (unbounded: %d)", bounded, unbounded)
	}
}
