package index

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/testutil"
)

// described returns the paths of the notes whose description matches expr.
func described(t *testing.T, ix *Index, expr string) string {
	t.Helper()
	rows, err := ix.DB.Query("SELECT n.path FROM descriptions_fts d JOIN notes n ON n.id = d.rowid WHERE descriptions_fts MATCH ?", expr)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func wantDescribed(t *testing.T, ix *Index, expr, want string) {
	t.Helper()
	if got := described(t, ix, expr); got != want {
		t.Errorf("description %q: %q, want %q", expr, got, want)
	}
}

var describedVault = map[string]string{
	"a.md":              "---\ndescription: Learn how to fold sections away\ntags: [x]\n---\n# A\n\nbody words\n",
	"b.md":              "---\nSummary: keeps snapshots of your work\nother: unrelated words\n---\n# B\n",
	"c.md":              "---\ndescription: [first line, second thought]\nsummary: third point\n---\n",
	"pages/Page.md":     "description:: a logseq page about gardening\ntype:: [[Feature]]\n\n- block text\n",
	"logseq/config.edn": "{}\n",
	"plain.md":          "# Plain\n\nno frontmatter, description: not a key here\n",
}

func TestDescriptionsIndexed(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, describedVault)
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	wantDescribed(t, ix, "fold", "a.md")
	wantDescribed(t, ix, "snapshots", "b.md") // summary, any case of the key
	wantDescribed(t, ix, "unrelated", "")     // other keys are not descriptions
	wantDescribed(t, ix, "second AND third", "c.md")
	wantDescribed(t, ix, "body", "")
	wantDescribed(t, ix, "key", "")

	// Editing the description replaces it at the next sync.
	rewrite(t, filepath.Join(root, "a.md"), "---\ndescription: collapse headings\n---\n# A\n", time.Second)
	mustSync(t, ix, SyncOptions{})
	wantDescribed(t, ix, "fold", "")
	wantDescribed(t, ix, "collapse", "a.md")
	// Removing it removes the row; deleting the note too.
	rewrite(t, filepath.Join(root, "a.md"), "# A\n", 2*time.Second)
	mustSync(t, ix, SyncOptions{})
	wantDescribed(t, ix, "collapse", "")
	if err := os.Remove(filepath.Join(root, "b.md")); err != nil {
		t.Fatal(err)
	}
	mustSync(t, ix, SyncOptions{})
	wantDescribed(t, ix, "snapshots", "")
	if n := count(t, ix, "SELECT COUNT(*) FROM descriptions_fts"); n != 2 {
		t.Errorf("%d rows, want 2 (c.md, pages/Page.md)", n)
	}
	mustSync(t, ix, SyncOptions{Reset: true})
	wantDescribed(t, ix, "second", "c.md")
	if n := count(t, ix, "SELECT COUNT(*) FROM descriptions_fts"); n != 2 {
		t.Errorf("after reset: %d rows, want 2", n)
	}
}

// TestMigrateV3Descriptions: an index written by schema v3 opens as v4
// with every note's description filled from the props table, and no note
// is re-indexed.
func TestMigrateV3Descriptions(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, describedVault)
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	var want []string
	rows, err := ix.DB.Query("SELECT rowid, description FROM descriptions_fts ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var d string
		rows.Scan(&id, &d)
		want = append(want, fmt.Sprint(id, d))
	}
	rows.Close()
	for _, q := range append(taskFieldsDown, "DROP TABLE descriptions_fts", "PRAGMA user_version = 3") {
		if _, err := ix.DB.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	ix.Close()
	ix = openTest(t, root)
	if v := count(t, ix, "PRAGMA user_version"); v != SchemaVersion {
		t.Fatalf("version %d", v)
	}
	var got []string
	rows, err = ix.DB.Query("SELECT rowid, description FROM descriptions_fts ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var d string
		rows.Scan(&id, &d)
		got = append(got, fmt.Sprint(id, d))
	}
	rows.Close()
	if len(want) != 4 || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("migrated descriptions %q, want what a sync writes %q", got, want)
	}
	if res := mustSync(t, ix, SyncOptions{}); res.Indexed != 0 {
		t.Errorf("sync after migration re-indexed %d notes", res.Indexed)
	}
	wantDescribed(t, ix, "gardening", "pages/Page.md")
}

// TestDescriptionBounded: a huge description is cut to maxDescriptionBytes
// at a word boundary, whatever its size.
func TestDescriptionBounded(t *testing.T) {
	root := t.TempDir()
	huge := strings.Repeat("lorem ", 200_000) + "tailword"
	testutil.WriteFiles(t, root, map[string]string{"h.md": "---\ndescription: headword " + huge + "\n---\n"})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	var d string
	if err := ix.DB.QueryRow("SELECT description FROM descriptions_fts").Scan(&d); err != nil {
		t.Fatal(err)
	}
	if len(d) > maxDescriptionBytes || len(d) < maxDescriptionBytes-10 || !strings.HasPrefix(d, "headword lorem") || !strings.HasSuffix(d, "lorem") {
		t.Errorf("description of %d bytes, ends %q", len(d), d[max(0, len(d)-12):])
	}
	wantDescribed(t, ix, "tailword", "")
}

func TestJoinDescription(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"  ", ""}, ""},
		{[]string{" a ", "b"}, "a\nb"},
		{[]string{strings.Repeat("é", maxDescriptionBytes)}, strings.Repeat("é", maxDescriptionBytes/2)},
		{[]string{strings.Repeat("x", maxDescriptionBytes), "next"}, strings.Repeat("x", maxDescriptionBytes)},
	} {
		if got := joinDescription(c.in); got != c.want {
			t.Errorf("joinDescription(%.20q): %.20q (%d bytes), want %.20q (%d)", c.in, got, len(got), c.want, len(c.want))
		}
	}
}

// TestTagsColumn: frontmatter tags, inline #tags and Logseq tags:: all
// reach the tags column of chunks_fts (weight 4 in search), on every chunk.
func TestTagsColumn(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"logseq/config.edn": "{}\n",
		"a.md":              "---\ntags: [alphatag]\n---\n# A\n\ntext #betatag here\n\n## Second\n\nmore text\n",
		"pages/P.md":        "tags:: gammatag\n\n- block text\n",
	})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	for _, c := range []struct {
		tag  string
		want int
	}{{"alphatag", 2}, {"betatag", 2}, {"gammatag", 1}} {
		if n := count(t, ix, "SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", "tags : "+c.tag); n != c.want {
			t.Errorf("tag %s: in the tags column of %d chunks, want %d", c.tag, n, c.want)
		}
	}
}
