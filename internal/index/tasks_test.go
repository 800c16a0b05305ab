package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

// taskFieldsDown takes an index back to before migrationTaskFields (and
// migrationInlineFields, which follows it).
var taskFieldsDown = []string{
	"DROP TABLE fields",
	"ALTER TABLE tasks DROP COLUMN marker", "ALTER TABLE tasks DROP COLUMN due", "ALTER TABLE tasks DROP COLUMN scheduled",
	"ALTER TABLE tasks DROP COLUMN start", "ALTER TABLE tasks DROP COLUMN done", "ALTER TABLE tasks DROP COLUMN priority",
	"ALTER TABLE tasks DROP COLUMN block_uuid",
}

var taskVault = map[string]string{
	"b.md":              "---\ntags: [work/alpha]\n---\n- [ ] later 📅 2026-12-01\n- [x] shipped ✅ 2026-11-20\n- [ ] soon 📅 2026-11-26 ⏫\n",
	"a.md":              "- [ ] no date\n- [ ] same day 📅 2026-12-01\n",
	"logseq/config.edn": "{}\n",
	"pages/p.md":        "- TODO [#B] write\n  DEADLINE: <2026-11-27 Fri>\n  id:: 11111111-2222-4333-8444-555555555555\n",
}

func taskKeys(rows []TaskRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s:%d:%s:%s:%s:%s", r.Path, r.Line, r.Marker, r.Due, r.Priority, r.Block))
	}
	return out
}

func TestTasksQuery(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, taskVault)
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	ctx := context.Background()
	rows, err := ix.Tasks(ctx, TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]string{
		"b.md:6: :2026-11-26:high:",
		"pages/p.md:1:TODO:2026-11-27:medium:11111111-2222-4333-8444-555555555555",
		"a.md:2: :2026-12-01::",
		"b.md:4: :2026-12-01::",
		"a.md:1: :::",
		"b.md:5:x:::",
	})
	if got := fmt.Sprint(taskKeys(rows)); got != want {
		t.Errorf("all tasks\n got %s\nwant %s", got, want)
	}
	rows, _ = ix.Tasks(ctx, TaskFilter{Tag: "#Work", DueFrom: "2026-11-27", DueTo: "2026-12-01"})
	if got := fmt.Sprint(taskKeys(rows)); got != "[b.md:4: :2026-12-01::]" {
		t.Errorf("tag and range: %s", got)
	}
	rows, _ = ix.Tasks(ctx, TaskFilter{Tag: "wor"})
	if len(rows) != 0 {
		t.Errorf("a tag prefix that is not a parent matched: %v", taskKeys(rows))
	}
	if p, ok, err := ix.BlockNote(ctx, "11111111-2222-4333-8444-555555555555"); err != nil || !ok || p != "pages/p.md" {
		t.Errorf("BlockNote: %q %v %v", p, ok, err)
	}
	if _, ok, err := ix.BlockNote(ctx, "nope"); err != nil || ok {
		t.Errorf("BlockNote(nope): %v %v", ok, err)
	}
}

// TestMigrateTaskFields: an index from before the task fields is migrated
// in place and the next sync fills them without re-indexing any note.
func TestMigrateTaskFields(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, taskVault)
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	for _, q := range append(taskFieldsDown, "PRAGMA user_version = 4") {
		if _, err := ix.DB.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	ix.Close()
	ix = openTest(t, root)
	if v := count(t, ix, "PRAGMA user_version"); v != SchemaVersion {
		t.Fatalf("version %d", v)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM tasks WHERE due <> ''"); n != 0 {
		t.Fatalf("due dates before the sync: %d", n)
	}
	res := mustSync(t, ix, SyncOptions{})
	if res.Indexed != 0 || !res.Recovered {
		t.Errorf("sync after migration: %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM tasks"); n != 6 {
		t.Errorf("tasks after the sync: %d, want 6 (no duplicates)", n)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM tasks WHERE due <> ''"); n != 4 {
		t.Errorf("due dates after the sync: %d, want 4", n)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM tasks WHERE block_uuid <> '' AND marker = 'TODO'"); n != 1 {
		t.Errorf("logseq task fields after the sync: %d", n)
	}
}

var fieldVault = map[string]string{
	"n.md":              "---\nrating: 5\n---\nRating:: 9\n- [ ] pay rent [due:: 2026-12-01]\n- [ ] file taxes 📅 2026-11-30 [due:: 2027-01-01]\n```\ncode:: no\n```\n**Due Date**:: 2026-12-24\n",
	"logseq/config.edn": "{}\n",
	"pages/p.md":        "- a block\n  rating:: 3\n",
}

func fieldRows(t *testing.T, ix *Index) []string {
	t.Helper()
	rows, err := ix.DB.Query("SELECT n.path, f.key, f.key_norm, f.value, f.line FROM fields f JOIN notes n ON n.id = f.note_id ORDER BY n.path, f.line, f.rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p, k, kn, v string
		var line int
		if err := rows.Scan(&p, &k, &kn, &v, &line); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s:%d:%s:%s:%s", p, line, k, kn, v))
	}
	return out
}

// TestInlineFields: an Obsidian note's inline fields are stored (not in
// code, not a Logseq page's properties), and a task's [due:: …] is its
// due date when no 📅 gives one, for the Tasks filter too.
func TestInlineFields(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, fieldVault)
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	want := fmt.Sprint([]string{
		"n.md:4:Rating:rating:9",
		"n.md:5:due:due:2026-12-01",
		"n.md:6:due:due:2027-01-01",
		"n.md:10:Due Date:due-date:2026-12-24",
	})
	if got := fmt.Sprint(fieldRows(t, ix)); got != want {
		t.Errorf("fields\n got %s\nwant %s", got, want)
	}
	rows, err := ix.Tasks(context.Background(), TaskFilter{DueFrom: "2026-12-01", DueTo: "2026-12-31"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(taskKeys(rows)); got != "[n.md:5: :2026-12-01::]" {
		t.Errorf("tasks due in December: %s", got)
	}
	// A re-indexed note's fields replace its old ones.
	testutil.WriteFiles(t, root, map[string]string{"n.md": "x [a:: 1]\n"})
	mustSync(t, ix, SyncOptions{})
	if got := fmt.Sprint(fieldRows(t, ix)); got != "[n.md:1:a:a:1]" {
		t.Errorf("fields after an edit: %s", got)
	}
}

// TestMigrateInlineFields: an index from schema v5 is migrated in place
// and the next sync fills the fields table and the tasks' inline due dates
// without re-indexing any note.
func TestMigrateInlineFields(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, fieldVault)
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	for _, q := range []string{"DROP TABLE fields", "UPDATE tasks SET due = '' WHERE text LIKE 'pay rent%'", "PRAGMA user_version = 5"} {
		if _, err := ix.DB.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	ix.Close()
	ix = openTest(t, root)
	if v := count(t, ix, "PRAGMA user_version"); v != SchemaVersion {
		t.Fatalf("version %d", v)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM fields"); n != 0 {
		t.Fatalf("fields before the sync: %d", n)
	}
	res := mustSync(t, ix, SyncOptions{})
	if res.Indexed != 0 || !res.Recovered {
		t.Errorf("sync after migration: %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM fields"); n != 4 {
		t.Errorf("fields after the sync: %d, want 4", n)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM tasks WHERE due = '2026-12-01'"); n != 1 {
		t.Errorf("inline due dates after the sync: %d, want 1", n)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM tasks"); n != 2 {
		t.Errorf("tasks after the sync: %d, want 2", n)
	}
}
