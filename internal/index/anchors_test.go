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

	"github.com/loci-dev/loci/internal/testutil"
)

// anchored returns the paths of the notes whose anchor text matches expr.
func anchored(t *testing.T, ix *Index, expr string) []string {
	t.Helper()
	rows, err := ix.DB.Query("SELECT n.path FROM anchors_fts a JOIN notes n ON n.id = a.rowid WHERE anchors_fts MATCH ?", expr)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func wantAnchored(t *testing.T, ix *Index, expr string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := anchored(t, ix, expr); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("anchor %q: %v, want %v", expr, got, want)
	}
}

// rewrite replaces a file's content and moves its mtime so the sync sees it.
func rewrite(t *testing.T, p, content string, d time.Duration) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	bump(t, p, d)
}

func TestAnchorTextFollowsLinks(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"b.md": "# B\n\nplain body\n",
		"a.md": "# A\n\n## Tools\n\nIntro. Use the [[b|frobnicator]] to sort things. Unrelated sentence.\n\nSee [[#Tools]] and [[a]] itself: selfish.\n",
	})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	// Display text and sentence go to the target (the heading path is not
	// indexed: docs/search.md).
	wantAnchored(t, ix, "frobnicator", "b.md")
	wantAnchored(t, ix, "sort", "b.md")
	wantAnchored(t, ix, "tools")
	var text string
	if err := ix.DB.QueryRow("SELECT anchor FROM anchors_fts WHERE rowid = (SELECT id FROM notes WHERE path='b.md')").Scan(&text); err != nil || text != "Use the frobnicator to sort things." {
		t.Errorf("b's anchor text %q (%v)", text, err)
	}
	// Not the other sentences of the paragraph, and not links to oneself.
	wantAnchored(t, ix, "unrelated")
	wantAnchored(t, ix, "selfish")

	// Editing the linking note replaces what it says about b; b itself is
	// not re-indexed for it.
	rewrite(t, filepath.Join(root, "a.md"), "# A\n\nThe [[b|gizmo]] helps.\n", time.Second)
	res := mustSync(t, ix, SyncOptions{})
	if res.Indexed != 1 {
		t.Errorf("indexed %d, want 1 (the linking note)", res.Indexed)
	}
	wantAnchored(t, ix, "frobnicator")
	wantAnchored(t, ix, "gizmo", "b.md")
	// A new linking note adds to it.
	testutil.WriteFiles(t, root, map[string]string{"w.md": "A [[b|widget]].\n"})
	mustSync(t, ix, SyncOptions{})
	wantAnchored(t, ix, "widget", "b.md")
	wantAnchored(t, ix, "gizmo", "b.md")
	os.Remove(filepath.Join(root, "w.md"))
	mustSync(t, ix, SyncOptions{})
	wantAnchored(t, ix, "widget")

	// The target moves: the link resolves to it by name, and its anchor
	// text follows.
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	if err := os.Rename(filepath.Join(root, "b.md"), filepath.Join(root, "sub", "b.md")); err != nil {
		t.Fatal(err)
	}
	mustSync(t, ix, SyncOptions{})
	wantAnchored(t, ix, "gizmo", "sub/b.md")

	// Renamed away: the link no longer resolves, and nobody has the text;
	// a new note of the name gets it without the linking note changing.
	if err := os.Rename(filepath.Join(root, "sub", "b.md"), filepath.Join(root, "sub", "c.md")); err != nil {
		t.Fatal(err)
	}
	mustSync(t, ix, SyncOptions{})
	wantAnchored(t, ix, "gizmo")
	testutil.WriteFiles(t, root, map[string]string{"b.md": "# B again\n"})
	res = mustSync(t, ix, SyncOptions{})
	if res.Indexed != 1 {
		t.Errorf("indexed %d, want 1 (the new note)", res.Indexed)
	}
	wantAnchored(t, ix, "gizmo", "b.md")

	// The linking note is deleted: the text goes.
	os.Remove(filepath.Join(root, "a.md"))
	mustSync(t, ix, SyncOptions{})
	wantAnchored(t, ix, "gizmo")
	if n := count(t, ix, "SELECT COUNT(*) FROM anchors_fts WHERE anchors_fts MATCH 'helps'"); n != 0 {
		t.Errorf("%d rows left", n)
	}

	// A reset rebuilds the same.
	testutil.WriteFiles(t, root, map[string]string{"a.md": "The [[b|gizmo]] helps.\n"})
	mustSync(t, ix, SyncOptions{Reset: true})
	wantAnchored(t, ix, "gizmo", "b.md")
}

// TestAnchorTextCapped: a hub's anchor text holds at most maxAnchorTexts
// distinct texts (the first, by linking note), so its row stays bounded.
func TestAnchorTextCapped(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{"hub.md": "# Hub\n"}
	n := maxAnchorTexts + 20
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("n%03d.md", i)] = fmt.Sprintf("Word w%03d points at [[hub]].\n", i)
	}
	testutil.WriteFiles(t, root, files)
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	wantAnchored(t, ix, "w000", "hub.md")
	wantAnchored(t, ix, fmt.Sprintf("w%03d", maxAnchorTexts-1), "hub.md")
	wantAnchored(t, ix, fmt.Sprintf("w%03d", maxAnchorTexts))
	wantAnchored(t, ix, fmt.Sprintf("w%03d", n-1))
	// The incremental path caps the same way.
	rewrite(t, filepath.Join(root, "n000.md"), "Word zzz points at [[hub]].\n", time.Second)
	mustSync(t, ix, SyncOptions{})
	wantAnchored(t, ix, "zzz", "hub.md")
	wantAnchored(t, ix, fmt.Sprintf("w%03d", maxAnchorTexts))
}

func TestJoinAnchors(t *testing.T) {
	if got := joinAnchors([]string{"A b", "a B", "c"}); got != "A b\nc" {
		t.Errorf("de-dupe: %q", got)
	}
	long := strings.Repeat("x", maxAnchorBytes/3)
	got := joinAnchors([]string{long + "1", long + "2", long + "3", "short"})
	if len(got) > maxAnchorBytes || strings.Count(got, "\n") != 1 {
		t.Errorf("byte cap: %d bytes, %d texts", len(got), strings.Count(got, "\n")+1)
	}
}

// TestMigrateV2Anchors: an index written by schema v2 (no anchor text) is
// migrated in place, and the next sync fills every note's anchor text
// without re-indexing the notes.
func TestMigrateV2Anchors(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "The [[b|gizmo]] helps.\n", "b.md": "# B\n"})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	// Back to what v2 wrote.
	for _, q := range append(taskFieldsDown, "DROP TABLE descriptions_fts", "DROP TABLE anchors_fts", "ALTER TABLE links DROP COLUMN context", "PRAGMA user_version = 2") {
		if _, err := ix.DB.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	ix.Close()
	ix = openTest(t, root)
	if v := count(t, ix, "PRAGMA user_version"); v != SchemaVersion {
		t.Fatalf("version %d", v)
	}
	res := mustSync(t, ix, SyncOptions{})
	if res.Indexed != 0 || !res.Recovered {
		t.Errorf("sync after migration: %+v", res)
	}
	wantAnchored(t, ix, "gizmo", "b.md")
	if _, err := ix.DB.ExecContext(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
}
