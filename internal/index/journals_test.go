package index

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/testutil"
)

// A journal named by a non-default :journal/file-name-format is titled by
// its date in the graph's :journal/page-title-format, so links to that
// title reach it; a changed format re-titles the journals at the next
// sync although their files did not change.
func TestJournalTitleFormats(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"logseq/config.edn":      "{:journal/file-name-format \"yyyyMMdd\"\n :journal/page-title-format \"MMM do, yyyy\"}\n",
		"journals/20261120.md":   "- met Alice\n",
		"journals/2026_11_21.md": "- old name still reads\n",
		"journals/notes.md":      "- not a date\n",
		"pages/Alice.md":         "- see [[Nov 20th, 2026]] and [[2026-11-20]]\n",
	})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	titles := func() map[string]string {
		out := map[string]string{}
		rows, err := ix.DB.Query(`SELECT path, title FROM notes WHERE kind='journal'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var p, ti string
			if err := rows.Scan(&p, &ti); err != nil {
				t.Fatal(err)
			}
			out[p] = ti
		}
		return out
	}
	want := map[string]string{"journals/20261120.md": "Nov 20th, 2026", "journals/2026_11_21.md": "Nov 21st, 2026", "journals/notes.md": "notes"}
	if got := titles(); !equalMaps(got, want) {
		t.Errorf("titles %v, want %v", got, want)
	}
	// [[Nov 20th, 2026]] resolves to the journal; [[2026-11-20]] does not
	// (no page has that title in this format).
	if n := count(t, ix, `SELECT COUNT(*) FROM links l JOIN notes n ON n.id = l.dst_id WHERE l.target = 'Nov 20th, 2026' AND n.path = 'journals/20261120.md'`); n != 1 {
		t.Errorf("link to the title resolved %d times", n)
	}
	if n := count(t, ix, `SELECT COUNT(*) FROM links WHERE target = '2026-11-20' AND dst_id IS NOT NULL`); n != 0 {
		t.Errorf("link to 2026-11-20 resolved %d times", n)
	}
	if got := ix.JournalFormats().Key; got == "" {
		t.Errorf("no formats key")
	}

	// Another title format: the same files get new titles, and the links
	// follow them.
	cfg := filepath.Join(root, "logseq", "config.edn")
	if err := os.WriteFile(cfg, []byte("{:journal/file-name-format \"yyyyMMdd\"\n :journal/page-title-format \"yyyy-MM-dd\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := mustSync(t, ix, SyncOptions{})
	if res.Indexed != 3 {
		t.Errorf("indexed %d, want the 3 journals", res.Indexed)
	}
	want = map[string]string{"journals/20261120.md": "2026-11-20", "journals/2026_11_21.md": "2026-11-21", "journals/notes.md": "notes"}
	if got := titles(); !equalMaps(got, want) {
		t.Errorf("titles %v, want %v", got, want)
	}
	if n := count(t, ix, `SELECT COUNT(*) FROM links l JOIN notes n ON n.id = l.dst_id WHERE l.target = '2026-11-20' AND n.path = 'journals/20261120.md'`); n != 1 {
		t.Errorf("link to the new title resolved %d times", n)
	}
	// Unchanged formats: nothing is indexed again.
	if res := mustSync(t, ix, SyncOptions{}); res.Indexed != 0 {
		t.Errorf("indexed %d on an unchanged vault", res.Indexed)
	}
	// Back to the defaults (no config): the default titles, also when
	// the next sync is asked for one note only (it becomes a full one).
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	bump(t, filepath.Join(root, "pages", "Alice.md"), time.Second)
	if res := mustSync(t, ix, SyncOptions{Paths: []string{"pages/Alice.md"}}); res.Indexed != 3 {
		t.Errorf("indexed %d, want the 3 journals (Alice only touched)", res.Indexed)
	}
	want = map[string]string{"journals/20261120.md": "20261120", "journals/2026_11_21.md": "Nov 21st, 2026", "journals/notes.md": "notes"}
	if got := titles(); !equalMaps(got, want) {
		t.Errorf("titles %v, want %v", got, want)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
