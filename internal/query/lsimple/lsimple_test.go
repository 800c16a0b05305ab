package lsimple

import (
	"context"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/index/indextest"
	"github.com/loci-dev/loci/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunMain(m)) }

// fixture is a small graph; every block's first word is a label the tests
// use to name the expected answers.
var fixture = map[string]string{
	"logseq/config.edn": "{}\n",
	"pages/Project X.md": "tags:: work, [[Planning]]\nstatus:: active\n\n" +
		"- px1 TODO [#A] write the plan\n" +
		"  id:: 6500aaaa-0000-4000-8000-000000000001\n" +
		"- px2 notes about [[Alice]]\n" +
		"  - px3 DOING review with #urgent\n",
	"pages/Alice.md": "type:: person\nalias:: Al\n\n" +
		"- al1 DONE call [[Project X]]\n" +
		"- al2 LATER [#B] lunch\n" +
		"  owner:: [[Bob]], [[Carol]]\n" +
		"  effort:: 3\n",
	"pages/Lib___Go.md":      "title:: lib/go\n\n- lg1 TODO read the spec #urgent\n",
	"pages/Lib___Rust.md":    "title:: lib/rust\ntags:: lang\n\n- lr1 borrow checker notes\n",
	"journals/2026_11_20.md": "- j20 TODO [#C] buy milk\n- j20b met [[Alice]] about the plan\n",
	"journals/2026_11_24.md": "- j24 DONE shipped [[Project X]]\n  owner:: [[Bob]]\n",
	// Not an outline page (outside pages/ and journals/): never an answer.
	"other/Plain.md":         "- the plan, #urgent, [[Alice]]\n",
	"journals/2026_10_01.md": "- j01 old entry about the plan\n- j01b tagged by property\n  tags:: errand, [[Alice]]\n",
}

func openFixture(t *testing.T) *index.Index {
	t.Helper()
	root := t.TempDir()
	testutil.WriteFiles(t, root, fixture)
	return indexOf(t, root)
}

// indexOf indexes the vault at root (indextest.Open).
func indexOf(tb testing.TB, root string) *index.Index { return indextest.Open(tb, root) }

var fixedNow = func() time.Time { return time.Date(2026, 11, 25, 15, 4, 5, 0, time.UTC) }

// labels returns the first word of each row's content (blocks), or the
// page names (pages), sorted.
func labels(r *Result) []string {
	out := []string{}
	for _, row := range r.Rows {
		if r.Kind == "pages" {
			out = append(out, row.Page)
		} else {
			w, _, _ := strings.Cut(row.Content, " ")
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

func TestFixture(t *testing.T) {
	ix := openFixture(t)
	ev := Evaluator{Now: fixedNow}
	// The block contents start with the label, so the markers follow it:
	// the task filters read the first word, hence labelled task blocks
	// are written "label TODO ..." only where the test wants no match.
	cases := []struct {
		q    string
		want []string
	}{
		{`"the plan"`, []string{"j01", "j20b", "px1"}},
		{`{{query "the plan"}}`, []string{"j01", "j20b", "px1"}},
		// Path references: the block's own, its ancestors' (px3 under
		// px2) and its page's (al1, al2 are on Alice).
		{`[[Alice]]`, []string{"al1", "al2", "j01b", "j20b", "px2", "px3"}},
		{`[[alice]]`, []string{"al1", "al2", "j01b", "j20b", "px2", "px3"}},
		{`[[Al]]`, []string{"al1", "al2", "j01b", "j20b", "px2", "px3"}},
		{`(and [[Alice]] #urgent)`, []string{"px3"}},
		{`(and [[Alice]] (not (page Alice)))`, []string{"j01b", "j20b", "px2", "px3"}},
		{`#errand`, []string{"j01b"}},
		{`{{query the plan}}`, []string{"j01", "j20b", "px1"}},
		{`#urgent`, []string{"lg1", "px3"}},
		// Page tags: every block of a page tagged work.
		{`[[work]]`, []string{"px1", "px2", "px3"}},
		{`#[[Planning]]`, []string{"px1", "px2", "px3"}},
		// A reference through a resolved link (title) and as written.
		{`[[Project X]]`, []string{"al1", "j24", "px1", "px2", "px3"}},
		{`(and [[Project X]] (page "Alice"))`, []string{"al1"}},
		{`(or [[Alice]] #urgent)`, []string{"al1", "al2", "j01b", "j20b", "lg1", "px2", "px3"}},
		{`(and "plan" (not (page "Project X")))`, []string{"j01", "j20b"}},
		{`(not [[work]] #urgent "the" [[Alice]] [[Project X]] (page alice) (namespace lib) (between 2026-10-01 today))`, []string{}},
		{`(property owner bob)`, []string{"al2", "j24"}},
		{`(property owner [[Carol]])`, []string{"al2"}},
		{`(property effort)`, []string{"al2"}},
		{`(property "owner" "[[bob]], [[carol]]")`, []string{"al2"}},
		{`(page "Lib/Go")`, []string{"lg1"}},
		{`(between -7d today)`, []string{"j20", "j20b", "j24"}},
		{`(between [[Nov 21st, 2026]] [[Nov 25th, 2026]])`, []string{"j24"}},
		{`(between [[Oct 1st, 2026]] -5d)`, []string{"j01", "j01b", "j20", "j20b"}},
		{`(and (between -1m today) [[Alice]])`, []string{"j20b"}},
		{`(and (page-property status active) "review")`, []string{"px3"}},
		{`(and (namespace lib) "notes")`, []string{"lr1"}},
	}
	for _, c := range cases {
		r, err := ev.Eval(context.Background(), ix, c.q, 0)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if got := labels(r); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %v, want %v", c.q, got, c.want)
		}
	}
}

// Tasks and priorities read the block's first word and its [#X], so they
// get blocks of their own.
var taskFixture = map[string]string{
	"logseq/config.edn": "{}\n",
	"pages/Tasks.md": "- TODO [#A] t1 write\n  id:: 6500aaaa-0000-4000-8000-0000000000aa\n" +
		"- DOING t2 review [[Alice]]\n" +
		"- DONE [#B] t3 ship\n" +
		"- LATER t4 someday\n" +
		"- t5 not a TODO task\n",
	"journals/2026_11_24.md": "- NOW [#A] t6 today\n",
}

func TestTasks(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, taskFixture)
	ix := indexOf(t, root)
	second := func(r *Result) []string {
		out := []string{}
		for _, row := range r.Rows {
			for _, w := range strings.Fields(row.Content) {
				if len(w) == 2 && w[0] == 't' {
					out = append(out, w)
				}
			}
		}
		sort.Strings(out)
		return out
	}
	ev := Evaluator{Now: fixedNow}
	cases := []struct {
		q    string
		want []string
	}{
		{`(task TODO DOING)`, []string{"t1", "t2"}},
		{`(task todo)`, []string{"t1"}},
		{`(todo now later)`, []string{"t4", "t6"}},
		{`(priority a)`, []string{"t1", "t6"}},
		{`(priority A b)`, []string{"t1", "t3", "t6"}},
		{`(and (task TODO DOING DONE) (not (priority a)))`, []string{"t2", "t3"}},
		{`(and (task DOING) [[Alice]])`, []string{"t2"}},
		{`(and (priority a) (between -3d today))`, []string{"t6"}},
		{`"TODO"`, []string{"t1", "t5"}},
	}
	for _, c := range cases {
		r, err := ev.Eval(context.Background(), ix, c.q, 0)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if got := second(r); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %v, want %v", c.q, got, c.want)
		}
	}
	// Row fields: path, line, uuid, page.
	r, err := ev.Eval(context.Background(), ix, `(priority a)`, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Path: "journals/2026_11_24.md", Line: 1, Page: "Nov 24th, 2026", Content: "NOW [#A] t6 today"},
		{Path: "pages/Tasks.md", Line: 1, UUID: "6500aaaa-0000-4000-8000-0000000000aa", Page: "Tasks", Content: "TODO [#A] t1 write"},
	}
	if !reflect.DeepEqual(r.Rows, want) {
		t.Errorf("rows = %+v\nwant %+v", r.Rows, want)
	}
	// The limit cuts rows, not the total.
	r, err = ev.Eval(context.Background(), ix, `(task TODO DOING DONE LATER NOW)`, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 || r.Total != 5 || !r.Truncated {
		t.Errorf("limit 2: %d rows, total %d, truncated %v", len(r.Rows), r.Total, r.Truncated)
	}
}

func TestPageQueries(t *testing.T) {
	ix := openFixture(t)
	ev := Evaluator{Now: fixedNow}
	cases := []struct {
		q    string
		want []string
	}{
		{`(page-property type person)`, []string{"Alice"}},
		{`(page-property tags work)`, []string{"Project X"}},
		{`(page-property status)`, []string{"Project X"}},
		{`(namespace lib)`, []string{"lib/go", "lib/rust"}},
		{`(page-tags lang planning)`, []string{"Project X", "lib/rust"}},
		{`(and (namespace lib) (not (page-tags lang)))`, []string{"lib/go"}},
		{`(or (page-property type person) (page-tags lang))`, []string{"Alice", "lib/rust"}},
	}
	for _, c := range cases {
		r, err := ev.Eval(context.Background(), ix, c.q, 0)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if r.Kind != "pages" {
			t.Errorf("%s: kind %s, want pages", c.q, r.Kind)
		}
		if got := labels(r); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	ix := openFixture(t)
	cases := []struct{ q, want string }{
		{``, "empty query"},
		{`{{query }}`, "empty query"},
		{`{{embed [[x]]}}`, "only {{query"},
		{`{{query "x"`, "unclosed {{"},
		{`(and "x"`, "unclosed ("},
		{`"x`, "unclosed string"},
		{`[[x`, "unclosed [["},
		{`[[ ]]`, "empty [[ ]]"},
		{`)`, "unexpected )"},
		{`()`, "empty ()"},
		{`("a" b)`, "must start with an operator"},
		{`(and)`, "needs arguments"},
		{`(task FOO)`, "unknown marker"},
		{`(priority z)`, "not a, b or c"},
		{`(between today)`, "two dates"},
		{`(between someday today)`, "cannot read"},
		{`(page a b)`, "one name"},
		{`(property)`, "one or two"},
		{`(task (and x))`, "takes values"},
		{`(sort-by created-at)`, "need a filter"},
		{`(and "x" (sample 0))`, "from 1 to"},
		{`(and "x" (sample two))`, "from 1 to"},
		{`(and "x" (sample 1 2))`, "one number"},
		{`(and "x" (sample 1) (sample 2))`, "given twice"},
		{`(and "x" (sort-by a sideways))`, "not asc or desc"},
		{`(and "x" (sort-by (a)))`, "takes a property key"},
		{`(or "x" (sort-by a))`, "top level"},
		{`(and "x" (all-page-tags y))`, "no arguments"},
		{`(page-ref a b)`, "one name"},
		{`(and "x" (page-ref))`, "one name"},
		{`(and "x" (all-pages))`, "unsupported: (all-pages)"},
		{`(and (page <% today %>) (todo now))`, "unsupported: <% %> placeholders"},
		{`(and (task done) $1)`, "unsupported: $ parameters"},
		{`(and "x" (full-text-search "y"))`, "unsupported: (full-text-search)"},
		{strings.Repeat("(and ", 40) + `"x"` + strings.Repeat(")", 40), "nested deeper"},
		{strings.Repeat(`"x" `, 600), "more than"},
		{strings.Repeat("x", MaxQueryBytes+1), "longer than"},
	}
	for _, c := range cases {
		_, err := Eval(context.Background(), ix, c.q, 10)
		if err == nil {
			t.Errorf("%q: no error, want %q", c.q, c.want)
			continue
		}
		want := errs.CodeInvalidInput // a malformed query
		if strings.HasPrefix(c.want, "unsupported:") {
			want = errs.CodeUnsupportedQuery // valid, but outside what loci evaluates
		}
		if errs.Code(err) != want || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v (code %s), want %s containing %q", c.q, err, errs.Code(err), want, c.want)
		}
	}
	// Unsupported constructs say so in a detail the caller can map to its
	// own error code.
	_, err := Eval(context.Background(), ix, `(and "x" (get-children 2))`, 10)
	if e := errs.As(err); e == nil || e.Details["detail"] != "unsupported: (get-children)" {
		t.Errorf("(get-children 2): %v, want detail %q", err, "unsupported: (get-children)")
	}
	// A cancelled context stops the evaluation.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Eval(ctx, ix, `"x"`, 10); err == nil {
		t.Error("cancelled context: no error")
	}
}
