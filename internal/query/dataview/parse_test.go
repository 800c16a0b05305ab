package dataview

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/query"
)

var seeds = []string{
	`LIST`,
	`LIST FROM #project`,
	`TABLE status, due AS "Due date" FROM "Projects" AND -#archive WHERE status != "done" SORT due ASC, file.name DESC LIMIT 10`,
	`TABLE WITHOUT ID file.link, file.tags FROM [[Home]] OR outgoing([[Home]])`,
	`TASK FROM "Projects" WHERE !completed AND due < date(today)`,
	`LIST WHERE contains(file.outlinks, [[A]]) || (priority >= 2 && !done)`,
	`LIST WHERE length(file.inlinks) > 3 and lower(file.name) = "x" and icontains(text, "Y")`,
	`TABLE a GROUP BY b`,
	`LIST FLATTEN x`,
	`TABLE length(rows) AS n, rows.file.link, sum(rows.n) FROM #project FLATTEN file.tags AS t WHERE t != "#x" GROUP BY t AS tag SORT length(rows) DESC LIMIT 3`,
	`TASK WHERE !completed GROUP BY file.link`,
	`LIST rows.status GROUP BY status WHERE key != null FLATTEN rows AS r`,
	`TABLE max(rows.due), min(rows.n) GROUP BY file.folder`,
	`LIST WHERE rating > 3 AND contains(author, [[B]])`,
	`CALENDAR file.mtime`,
	`LIST WHERE x = -1.5 AND y = null AND z = true`,
	`list from -("a" or #b) where file.folder = "a/b"`,
	`LIST WHERE "unterminated`,
	`TABLE a + b`,
	`LIST WHERE f(x)`,
	`LIST WHERE x[0]`,
}

func TestParse(t *testing.T) {
	q, err := Parse(seeds[2])
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %v %d %v %d %v", q.Kind, q.WithoutID, len(q.Fields), q.From, len(q.Sort), q.Limit)
	if want := `TABLE false 2 {{Projects} {{archive}}} 2 10`; got != want {
		t.Errorf("parsed: %s, want %s", got, want)
	}
	if q.Fields[1].Name != "Due date" || !q.Sort[1].Desc || q.Sort[0].Desc {
		t.Errorf("fields %+v sort %+v", q.Fields, q.Sort)
	}
	q, err = Parse(`TABLE x FROM #a WHERE a SORT b LIMIT 5 GROUP BY c AS k FLATTEN rows AS r SORT k DESC LIMIT 2`)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, st := range q.Steps {
		steps = append(steps, fmt.Sprintf("%s:%s:%d:%d", st.Kind, st.Name, len(st.Sort), st.Limit))
	}
	if got, want := fmt.Sprint(steps), "[WHERE::0:0 SORT::1:0 LIMIT::0:5 GROUP:k:0:0 FLATTEN:r:0:0 SORT::1:0 LIMIT::0:2]"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	for src, code := range map[string]string{
		`TABLE a GROUP x`:      errs.CodeInvalidInput,
		`LIST FLATTEN`:         errs.CodeInvalidInput,
		`LIST GROUP BY a AS`:   errs.CodeInvalidInput,
		`TABLE a + b`:          errs.CodeUnsupportedQuery,
		`LIST WHERE f(x)`:      errs.CodeUnsupportedQuery,
		`LIST WHERE x[0]`:      errs.CodeUnsupportedQuery,
		`LIST WHERE "a`:        errs.CodeInvalidInput,
		`LIST WHERE a = `:      errs.CodeInvalidInput,
		`LIST FROM #a SORT`:    errs.CodeInvalidInput,
		`LIST FROM "a" "b"`:    errs.CodeInvalidInput,
		`SELECT * FROM notes`:  errs.CodeInvalidInput,
		`LIST WHERE a LIMIT x`: errs.CodeInvalidInput,
		"LIST WHERE \xff":      errs.CodeInvalidInput,
	} {
		if _, err := Parse(src); errs.Code(err) != code {
			t.Errorf("%q: %v, want %s", src, err, code)
		}
	}
}

func TestDetect(t *testing.T) {
	for q, want := range map[string]string{
		"LIST":                    query.Dataview,
		"  table a, b":            query.Dataview,
		"TASK\nWHERE !completed":  query.Dataview,
		"{{query (todo now)}}":    query.LogseqSimple,
		"(and [[a]] (task TODO))": query.LogseqSimple,
		"[:find ?b :where [?b]]":  query.LogseqAdvanced,
		"{:query [:find ?b]}":     query.LogseqAdvanced,
		"SELECT 1":                "",
		"":                        "",
	} {
		if got := query.Detect(q); got != want {
			t.Errorf("Detect(%q) = %q, want %q", q, got, want)
		}
	}
}

// fuzzModel is a small in-memory vault for the fuzz target to evaluate on.
func fuzzModel() *model {
	m := &model{byID: map[int64]*note{}, byPath: map[string]*note{}, keys: map[string]*note{}}
	add := func(id int64, p, name, folder string, fm map[string]any, tags ...string) *note {
		n := &note{id: id, path: p, name: name, folder: folder, fm: fm, tags: tags,
			mtime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ctime: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
		m.notes = append(m.notes, n)
		m.byID[id], m.byPath[p], m.keys[name] = n, n, n
		return n
	}
	a := add(1, "a/A.md", "A", "a", map[string]any{"status": "open", "n": 2.0, "list": []any{"x", 1.0}, "obj": map[string]any{"k": "v"}, "due": "2026-02-01"}, "project", "project/x")
	b := add(2, "B.md", "B", "", nil)
	a.out, a.outNotes = []link{b.link(), {name: "missing"}}, []*note{b}
	b.inNotes = []*note{a}
	a.fields = map[string]any{"rating": 4.0, "author": multi{b.link(), "x"}, "status": "inline"}
	a.lineFields = map[int]map[string]any{3: {"owner": "bob"}}
	m.tasks = []index.TaskRow{{Path: "a/A.md", Line: 3, Status: "todo", Marker: " ", Text: "do it", Due: "2026-01-05"},
		{Path: "B.md", Line: 1, Status: "done", Marker: "x", Text: "done", Done: "2026-01-01"}}
	return m
}

// FuzzParse: any text parses to a query or a typed error, and a query
// that parses evaluates (on a small model) to rows or a typed error.
func FuzzParse(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	m := fuzzModel()
	f.Fuzz(func(t *testing.T, src string) {
		q, err := Parse(src)
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || (e.Code != errs.CodeInvalidInput && e.Code != errs.CodeUnsupportedQuery) {
				t.Fatalf("%q: untyped error %v", src, err)
			}
			return
		}
		res, err := m.run(context.Background(), q, query.Options{Limit: 5})
		if err != nil {
			if c := errs.Code(err); c != errs.CodeUnsupportedQuery && c != errs.CodeInvalidInput {
				t.Fatalf("%q: eval error %v", src, err)
			}
			return
		}
		if len(res.Rows) > 5 {
			t.Fatalf("%q: %d rows past the limit", src, len(res.Rows))
		}
		for _, r := range res.Rows {
			if len(r.Values) != len(res.Columns) {
				t.Fatalf("%q: row %v does not fit columns %v", src, r.Values, res.Columns)
			}
		}
	})
}
