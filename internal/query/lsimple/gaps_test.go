package lsimple

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/testutil"
)

// gapFixture exercises block references, sort-by, sample, all-page-tags,
// page-ref and a graph whose journals are named yyyyMMdd.
var gapFixture = map[string]string{
	"logseq/config.edn": "{:journal/file-name-format \"yyyyMMdd\"\n :journal/page-title-format \"EEE, dd.MM.yyyy\"}\n",
	"pages/Goal.md": "- g1 the goal\n  id:: 6500bbbb-0000-4000-8000-000000000001\n  - g2 under the goal\n" +
		"- g3 other\n  id:: 6500bbbb-0000-4000-8000-000000000002\n",
	"pages/Notes.md": "tags:: topic\n\n- n1 see ((6500bbbb-0000-4000-8000-000000000001))\n  - n2 child of n1\n" +
		"- n3 embeds {{embed ((6500bbbb-0000-4000-8000-000000000002))}}\n- n4 plain\n",
	"pages/Topic.md": "- t1 topic page\n",
	"pages/Other.md": "tags:: topic, [[Goal]]\n\n- o1 other\n",
	"pages/Ranked.md": "- r1 first\n  rank:: 10\n- r2 second\n  rank:: 9\n- r3 third\n  rank:: Apple\n" +
		"- r4 none\n- r5 fifth\n  rank:: 2.5\n- r6 sixth\n  rank:: 1a\n",
	"journals/20261120.md":   "- jA day one\n",
	"journals/2026_11_21.md": "- jB default name\n",
}

// firstWords is the first word of each row, in row order.
func firstWords(r *Result) []string {
	out := []string{}
	for _, row := range r.Rows {
		w := row.Page
		if r.Kind == "blocks" {
			w = row.Content
			for i := range w {
				if w[i] == ' ' {
					w = w[:i]
					break
				}
			}
		}
		out = append(out, w)
	}
	return out
}

func TestGaps(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, gapFixture)
	ix := indexOf(t, root)
	ev := Evaluator{Now: fixedNow}
	cases := []struct {
		q    string
		want []string // in row order
	}{
		// Block references: the referring block and its children.
		{`((6500bbbb-0000-4000-8000-000000000001))`, []string{"n1", "n2"}},
		{`((6500BBBB-0000-4000-8000-000000000001))`, []string{"n1", "n2"}},
		{`{{query ((6500bbbb-0000-4000-8000-000000000002))}}`, []string{"n3"}},
		{`(and ((6500bbbb-0000-4000-8000-000000000001)) "child")`, []string{"n2"}},
		{`(or ((6500bbbb-0000-4000-8000-000000000001)) ((6500bbbb-0000-4000-8000-000000000002)))`, []string{"n1", "n2", "n3"}},
		{`(not ((6500bbbb-0000-4000-8000-000000000001)) (page Ranked) (page Goal) (page Notes) (between 2026-01-01 today))`, []string{"o1", "t1"}},
		{`((6500bbbb-0000-4000-8000-000000000009))`, []string{}},
		// page-ref is [[ ]].
		{`(page-ref topic)`, []string{"n1", "n2", "n3", "n4", "o1", "t1"}},
		{`(page-ref "Goal")`, []string{"g1", "g2", "g3", "o1"}},
		// sort-by a property: numbers by value, then text; missing last.
		{`(and (page Ranked) (sort-by rank))`, []string{"r3", "r6", "r1", "r2", "r5", "r4"}},
		{`(and (page Ranked) (sort-by rank desc))`, []string{"r3", "r6", "r1", "r2", "r5", "r4"}},
		{`(page Ranked) (sort-by RANK asc)`, []string{"r5", "r2", "r1", "r6", "r3", "r4"}},
		{`(and (page Ranked) (sort-by nothing))`, []string{"r1", "r2", "r3", "r4", "r5", "r6"}},
		{`(and (page Ranked) (not "first") (sort-by rank asc))`, []string{"r5", "r2", "r6", "r3", "r4"}},
		// all-page-tags: the pages some page's tags:: name.
		{`(all-page-tags)`, []string{"Goal", "Topic"}},
		{`(and (all-page-tags) "goal")`, []string{"g1", "g2"}},
		// Journals named by the graph's format, and by the default.
		{`(between 2026-11-20 2026-11-20)`, []string{"jA"}},
		{`(between [[Nov 19th, 2026]] today)`, []string{"jA", "jB"}},
		// Bounds in the graph's journal title format.
		{`(between [[Fri, 20.11.2026]] [[Fri, 20.11.2026]])`, []string{"jA"}},
		{`(between [[Sat, 21.11.2026]] +1d)`, []string{"jB"}},
		// Journals are titled in the graph's title format.
		{`(page "Fri, 20.11.2026")`, []string{"jA"}},
		{`(page "sat, 21.11.2026")`, []string{"jB"}},
		{`(page "Nov 20th, 2026")`, []string{}},
		{`(sample 10) (page Ranked)`, []string{"r1", "r2", "r3", "r4", "r5", "r6"}},
	}
	for _, c := range cases {
		r, err := ev.Eval(context.Background(), ix, c.q, 0)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if got := firstWords(r); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %v, want %v", c.q, got, c.want)
		}
	}
}

// (sample n) keeps n of the matches, chosen by the evaluator's Rand, in
// the query's order; the same seed picks the same rows.
func TestSample(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, gapFixture)
	ix := indexOf(t, root)
	all := map[string]bool{"r1": true, "r2": true, "r3": true, "r4": true, "r5": true, "r6": true}
	picks := map[string]bool{}
	for seed := range uint64(20) {
		ev := Evaluator{Now: fixedNow, Rand: rand.New(rand.NewPCG(seed, 1))}
		r, err := ev.Eval(context.Background(), ix, `(and (page Ranked) (sample 2))`, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := firstWords(r)
		if len(got) != 2 || r.Total != 2 || got[0] == got[1] || !all[got[0]] || !all[got[1]] || !slices.IsSorted(got) {
			t.Fatalf("seed %d: %v (total %d)", seed, got, r.Total)
		}
		again, _ := Evaluator{Now: fixedNow, Rand: rand.New(rand.NewPCG(seed, 1))}.Eval(context.Background(), ix, `(and (page Ranked) (sample 2))`, 0)
		if !reflect.DeepEqual(firstWords(again), got) {
			t.Fatalf("seed %d: %v then %v", seed, got, firstWords(again))
		}
		picks[got[0]], picks[got[1]] = true, true
	}
	// Twenty draws of 2 of 6 reach every row (a fixed sample would not).
	if len(picks) != 6 {
		t.Errorf("rows ever picked: %v", picks)
	}
	// Sample then sort: the sorted order of the two picked.
	ev := Evaluator{Now: fixedNow, Rand: rand.New(rand.NewPCG(7, 1))}
	r, err := ev.Eval(context.Background(), ix, `(and (page Ranked) (sample 4) (sort-by rank asc))`, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := firstWords(r); len(got) != 4 || !isSubsequence(got, []string{"r5", "r2", "r1", "r6", "r3", "r4"}) {
		t.Errorf("sample 4 sorted: %v", got)
	}
}

func isSubsequence(a, of []string) bool {
	i := 0
	for _, x := range of {
		if i < len(a) && a[i] == x {
			i++
		}
	}
	return i == len(a)
}

// An edit synced into the index is seen by the next query: the cached
// graph goes with the content revision it was read at.
func TestEditSeenByNextQuery(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, gapFixture)
	ix := indexOf(t, root)
	ctx := context.Background()
	run := func(q string) []string {
		t.Helper()
		r, err := query.Run(ctx, ix, query.LogseqSimple, q, query.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, row := range r.Rows {
			out = append(out, row.Values[1].(string))
		}
		return out
	}
	if got := run(`"freshly written"`); len(got) != 0 {
		t.Fatalf("before the edit: %v", got)
	}
	if got := run(`[[Topic]]`); len(got) != 6 {
		t.Fatalf("[[Topic]] before the edit: %v", got)
	}
	if err := os.WriteFile(filepath.Join(root, "pages", "Topic.md"), []byte("- t1 topic page\n- t2 freshly written\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "pages", "Notes.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := run(`"freshly written"`); !reflect.DeepEqual(got, []string{"t2 freshly written"}) {
		t.Errorf("after the edit: %v", got)
	}
	if got := run(`[[Topic]]`); !reflect.DeepEqual(got, []string{"o1 other", "t1 topic page", "t2 freshly written"}) {
		t.Errorf("[[Topic]] after the edit: %v", got)
	}
	// The read fence is per query, not in the cache.
	r, err := query.Run(ctx, ix, query.LogseqSimple, `[[Topic]]`, query.Options{Visible: func(p string) bool { return p != "pages/Other.md" }})
	if err != nil || len(r.Rows) != 2 {
		t.Errorf("fenced: %v %v", r, err)
	}
	if got := run(`[[Topic]]`); len(got) != 3 {
		t.Errorf("after a fenced query: %v", got)
	}
}

// The read fence hides a note's rows before (sample n) and the limit, and
// its aliases and tags stand for nothing.
func TestFence(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"logseq/config.edn": "{}\n",
		"pages/Secret.md":   "alias:: Cover\ntags:: hush\n\n- s1 secret\n",
		"pages/Open.md":     "- v1 mentions [[Secret]]\n- v2 mentions [[Cover]]\n",
		"pages/Hush.md":     "- h1 hush page\n",
	})
	ix := indexOf(t, root)
	open := Evaluator{Now: fixedNow}
	fenced := Evaluator{Now: fixedNow, Visible: func(p string) bool { return p != "pages/Secret.md" }}
	cases := []struct {
		ev   Evaluator
		q    string
		want []string
	}{
		{open, `[[Cover]]`, []string{"v1", "v2", "s1"}}, // path order
		{fenced, `[[Cover]]`, []string{"v2"}},
		{open, `(all-page-tags)`, []string{"Hush"}},
		{fenced, `(all-page-tags)`, []string{}},
		{fenced, `(sample 1) [[Cover]]`, []string{"v2"}},
	}
	for _, c := range cases {
		r, err := c.ev.Eval(context.Background(), ix, c.q, 0)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if got := firstWords(r); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s (fenced %v) = %v, want %v", c.q, c.ev.Visible != nil, got, c.want)
		}
	}
	// Through the query operation's evaluator: rows and the limit.
	r, err := query.Run(context.Background(), ix, query.LogseqSimple, `(or [[Cover]] [[Hush]])`, query.Options{Limit: 2, Visible: fenced.Visible})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 || r.Truncated || r.Rows[0].Path != "pages/Hush.md" || r.Rows[1].Values[1] != "v2 mentions [[Cover]]" {
		t.Errorf("fenced run: %+v", r)
	}
}
