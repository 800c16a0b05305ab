package dataview

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/testutil"
)

var fieldVault = map[string]string{
	"Books/Dune.md":           "---\nrating: 5\ngenre: scifi\n---\n# Dune\nAuthor:: [[Frank Herbert]]\nStatus:: read\nI loved it [rating:: 9] and (mood:: epic)\nStarted Date:: 2026-01-10\nDone:: true\n",
	"Books/Emma.md":           "Author:: [[Jane Austen]]\nStatus:: reading\nrating:: 7\nRating:: 6\n- [ ] finish chapter 3 [due:: 2026-12-01] [owner:: ann]\n- [x] buy it [completion:: 2026-11-01]\n```\nstatus:: in code\n```\n",
	"Books/Solaris.md":        "Status:: read\nrating:: 8\nAuthor:: Stanisław Lem, \"x\"\nsee:: [[Dune]], [[Emma]]\n- [ ] review 📅 2026-11-30 [due:: 2026-12-24]\n",
	"People/Frank Herbert.md": "# Frank Herbert\n",
	"Tasks.md":                "- [ ] pay rent [due:: 2026-12-01]\n- [ ] call mom\n",
}

// rowsOf runs q and returns its columns and rows as JSON (the shape the
// query operation returns), the path of each row first.
func rowsOf(t *testing.T, ix *index.Index, q string, opt query.Options) string {
	t.Helper()
	res, err := Eval(context.Background(), ix, q, opt)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var b strings.Builder
	c, _ := json.Marshal(res.Columns)
	b.Write(c)
	for _, r := range res.Rows {
		v, _ := json.Marshal(r.Values)
		b.WriteString(" " + r.Path)
		if r.Line > 0 {
			b.WriteString(":" + strconv.Itoa(r.Line))
		}
		b.WriteString("=")
		b.Write(v)
	}
	return b.String()
}

func TestInlineFieldQueries(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, fieldVault)
	ix := indexOf(t, root)
	for _, c := range []struct{ q, want string }{
		// Frontmatter and inline values merge; a key twice is a list;
		// values are typed (numbers); code blocks hold no fields.
		{`TABLE rating, status FROM "Books" SORT file.name`,
			`["File","rating","status"] Books/Dune.md=["[[Dune]]",[5,9],"read"] Books/Emma.md=["[[Emma]]",[7,6],"reading"] Books/Solaris.md=["[[Solaris]]",8,"read"]`},
		// The key as written, any case, or normalized; dates; booleans.
		{`LIST WHERE started-date = date(2026-01-10) AND done = true AND MOOD = "epic"`, `["File"] Books/Dune.md=["[[Dune]]"]`},
		{`LIST WHERE author = [[Frank Herbert]]`, `["File"] Books/Dune.md=["[[Dune]]"]`},
		{`LIST WHERE contains(rating, 9) OR rating = 8`, `["File"] Books/Dune.md=["[[Dune]]"] Books/Solaris.md=["[[Solaris]]"]`},
		// A list of links; text that is not all literals stays text.
		{`TABLE see, author FROM "Books/Solaris.md"`, `["File","see","author"] Books/Solaris.md=["[[Solaris]]",["[[Dune]]","[[Emma]]"],"Stanisław Lem, \"x\""]`},
		{`LIST WHERE contains(see, [[Emma]])`, `["File"] Books/Solaris.md=["[[Solaris]]"]`},
		// A task's fields are not the note's.
		{`LIST WHERE owner OR due`, `["File"]`},
		// Task fields: [due:: …] unless 📅 gives one, completion, and the
		// task's own fields.
		{`TASK WHERE due = date(2026-12-01)`, `["Task","Status","Due"] Books/Emma.md:5=["finish chapter 3 [due:: 2026-12-01] [owner:: ann]","todo","2026-12-01"] Tasks.md:1=["pay rent [due:: 2026-12-01]","todo","2026-12-01"]`},
		{`TASK WHERE owner = "ann" OR completion = date(2026-11-01)`, `["Task","Status","Due"] Books/Emma.md:5=["finish chapter 3 [due:: 2026-12-01] [owner:: ann]","todo","2026-12-01"] Books/Emma.md:6=["buy it [completion:: 2026-11-01]","done",null]`},
		{`TASK FROM "Books/Solaris.md"`, `["Task","Status","Due"] Books/Solaris.md:5=["review 📅 2026-11-30 [due:: 2026-12-24]","todo","2026-11-30"]`},
	} {
		if got := rowsOf(t, ix, c.q, query.Options{}); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.q, got, c.want)
		}
	}
	// list_tasks reads the same due dates.
	rows, err := ix.Tasks(context.Background(), index.TaskFilter{DueFrom: "2026-12-01", DueTo: "2026-12-01"})
	if err != nil || len(rows) != 2 {
		t.Errorf("tasks due 2026-12-01: %v %v", rows, err)
	}
}

func TestGroupByFlatten(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, fieldVault)
	ix := indexOf(t, root)
	for _, c := range []struct{ q, want string }{
		// One row per group, in key order: the key, then the columns
		// evaluated on the group (rows.x: the rows' x, flattened).
		{`TABLE length(rows) AS n, rows.file.link AS books FROM "Books" GROUP BY status`,
			`["status","n","books"] =["read",2,["[[Dune]]","[[Solaris]]"]] =["reading",1,["[[Emma]]"]]`},
		// SORT and WHERE after GROUP BY act on the groups.
		{`TABLE WITHOUT ID key, length(rows) FROM "Books" GROUP BY status SORT length(rows) ASC`,
			`["key","expr"] =["reading",1] =["read",2]`},
		{`TABLE rows.file.name FROM "Books" GROUP BY status AS s WHERE s = "read"`,
			`["s","rows.file.name"] =["read",["Dune","Solaris"]]`},
		{`LIST FROM "Books" GROUP BY status`, `["status","rows"] =["read",["[[Dune]]","[[Solaris]]"]] =["reading",["[[Emma]]"]]`},
		// TASK: the tasks, group by group, with the key first.
		{`TASK FROM "Books" GROUP BY file.link`,
			`["file.link","Task","Status","Due"] Books/Emma.md:5=["[[Emma]]","finish chapter 3 [due:: 2026-12-01] [owner:: ann]","todo","2026-12-01"] Books/Emma.md:6=["[[Emma]]","buy it [completion:: 2026-11-01]","done",null] Books/Solaris.md:5=["[[Solaris]]","review 📅 2026-11-30 [due:: 2026-12-24]","todo","2026-11-30"]`},
		// FLATTEN: one row per value.
		{`TABLE r FROM "Books" FLATTEN rating AS r WHERE r > 6 SORT r DESC`,
			`["File","r"] Books/Dune.md=["[[Dune]]",9] Books/Solaris.md=["[[Solaris]]",8] Books/Emma.md=["[[Emma]]",7]`},
		{`TABLE sum(rows.r) AS total, max(rows.r), min(rows.r) FROM "Books" FLATTEN rating AS r GROUP BY status`,
			`["status","total","expr","expr"] =["read",22,9,5] =["reading",13,7,6]`},
		{`LIST FROM "Books" FLATTEN file.tags WHERE file.tags`, `["File"]`},
		// A link's fields: after FLATTEN (a note without the field is one
		// row with null), or directly.
		{`TABLE a.file.folder FROM "Books" FLATTEN see AS a`,
			`["File","a.file.folder"] Books/Dune.md=["[[Dune]]",null] Books/Emma.md=["[[Emma]]",null] Books/Solaris.md=["[[Solaris]]","Books"] Books/Solaris.md=["[[Solaris]]","Books"]`},
		{`TABLE author.file.folder, author.file.name FROM "Books/Dune.md" OR "Books/Emma.md"`,
			`["File","author.file.folder","author.file.name"] Books/Dune.md=["[[Dune]]","People","Frank Herbert"] Books/Emma.md=["[[Emma]]",null,null]`},
	} {
		if got := rowsOf(t, ix, c.q, query.Options{}); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.q, got, c.want)
		}
	}
	// The caller's limit counts output rows (tasks of a TASK group too).
	res, err := Eval(context.Background(), ix, `TASK FROM "Books" GROUP BY file.link`, query.Options{Limit: 2})
	if err != nil || len(res.Rows) != 2 || !res.Truncated {
		t.Errorf("limit 2: %+v %v", res, err)
	}
}

// TestModelCache: the model is cached per content revision (a sync that
// changes a note is seen by the next query), a fenced query never sees
// hidden notes nor leaves its view in the cache, and queries run in
// parallel give the serial answers.
func TestModelCache(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, fieldVault)
	ix := indexOf(t, root)
	ctx := context.Background()
	const q = `TABLE rating, file.inlinks FROM "Books/Solaris.md" OR "People"`
	before := `["File","rating","file.inlinks"] Books/Solaris.md=["[[Solaris]]",8,[]] People/Frank Herbert.md=["[[Frank Herbert]]",null,["[[Dune]]"]]`
	if got := rowsOf(t, ix, q, query.Options{}); got != before {
		t.Fatalf("got %s\nwant %s", got, before)
	}
	hideDune := query.Options{Visible: func(p string) bool { return p != "Books/Dune.md" }}
	fenced := `["File","rating","file.inlinks"] Books/Solaris.md=["[[Solaris]]",8,[]] People/Frank Herbert.md=["[[Frank Herbert]]",null,[]]`
	if got := rowsOf(t, ix, q, hideDune); got != fenced {
		t.Errorf("fenced: got %s\nwant %s", got, fenced)
	}
	if got := rowsOf(t, ix, `LIST WHERE mood`, hideDune); got != `["File"]` {
		t.Errorf("fenced field: %s", got)
	}
	hideFrank := query.Options{Visible: func(p string) bool { return p != "People/Frank Herbert.md" }}
	if got := rowsOf(t, ix, `TABLE author.file.folder, author FROM "Books/Dune.md"`, hideFrank); got != `["File","author.file.folder","author"] Books/Dune.md=["[[Dune]]",null,"[[Frank Herbert]]"]` {
		t.Errorf("a hidden note through a link: %s", got)
	}
	if got := rowsOf(t, ix, q, query.Options{}); got != before {
		t.Errorf("after a fenced query: %s", got)
	}
	r1, err := cached(ctx, ix, false)
	if err != nil {
		t.Fatal(err)
	}
	if r2, _ := cached(ctx, ix, false); r2 != r1 {
		t.Error("the model was loaded again without a change to the index")
	}
	// Fenced views: one per set of hidden notes, however the fence is
	// written; a fence that hides nothing reads the full model.
	v1, _ := r1.view(ctx, hideDune.Shows)
	v2, _ := r1.view(ctx, func(p string) bool { return !strings.HasSuffix(p, "Dune.md") })
	v3, _ := r1.view(ctx, func(p string) bool { return p != "Tasks.md" })
	v4, _ := r1.view(ctx, func(string) bool { return true })
	if v1 != v2 || v1 == v3 || v1 == r1.full || v4 != r1.full || v1.byPath["Books/Dune.md"] != nil || r1.full.byPath["Books/Dune.md"] == nil {
		t.Errorf("fenced views: %p %p %p %p full %p", v1, v2, v3, v4, r1.full)
	}
	// A file touched (same bytes, new mtime) moves file.mtime.
	mt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "Tasks.md"), mt, mt); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, ix, `TABLE file.mtime FROM "Tasks.md"`, query.Options{}); got != `["File","file.mtime"] Tasks.md=["[[Tasks]]","2030-01-02T03:04:05Z"]` {
		t.Errorf("after a touch: %s", got)
	}
	testutil.WriteFiles(t, root, map[string]string{"Books/Solaris.md": "rating:: 3\n", "Books/Dune.md": "no links now\n"})
	if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	after := `["File","rating","file.inlinks"] Books/Solaris.md=["[[Solaris]]",3,[]] People/Frank Herbert.md=["[[Frank Herbert]]",null,[]]`
	if got := rowsOf(t, ix, q, query.Options{}); got != after {
		t.Errorf("after a sync: %s\nwant %s", got, after)
	}
	queries := []string{q, `TABLE rating FROM "Books" SORT file.name`, `TASK WHERE !completed`, `LIST GROUP BY file.folder`}
	want := make([]string, len(queries))
	for i, q := range queries {
		want[i] = rowsOf(t, ix, q, query.Options{})
	}
	var wg sync.WaitGroup
	errc := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				k := (g + i) % len(queries)
				res, err := Eval(ctx, ix, queries[k], query.Options{})
				if err != nil || len(res.Rows) == 0 {
					errc <- queries[k]
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for q := range errc {
		t.Errorf("parallel %s failed", q)
	}
	for i, q := range queries {
		if got := rowsOf(t, ix, q, query.Options{}); got != want[i] {
			t.Errorf("%s after parallel runs: %s", q, got)
		}
	}
}
