package graph

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/index/indextest"
	"github.com/loci-dev/loci/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunMain(m)) }

// indexOf indexes the vault at root (indextest.Open).
func indexOf(tb testing.TB, root string) *index.Index { return indextest.Open(tb, root) }

func sync1(tb testing.TB, ix *index.Index) {
	tb.Helper()
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); err != nil {
		tb.Fatal(err)
	}
}

var fixture = map[string]string{
	"logseq/config.edn": "{}\n",
	"pages/A.md": "tags:: t1\n\n" +
		"- TODO [#B] a1 see [[B]] and [[B]]\n" +
		"  id:: 6500aaaa-0000-4000-8000-000000000001\n" +
		"  - a2 child #t2\n" +
		"    - DONE a3 grandchild [#C] then [#A]\n" +
		"- a4 refers to ((6500aaaa-0000-4000-8000-000000000001))\n",
	"pages/B.md":             "alias:: Bee\n\n- b1 nothing\n",
	"journals/2026_11_20.md": "- j1 day\n",
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, fixture)
	ix := indexOf(t, root)
	g, err := For(context.Background(), ix)
	if err != nil {
		t.Fatal(err)
	}
	if g.Rev == "" || g.Rev != ix.ContentRev(context.Background()) {
		t.Errorf("Rev %q, index %q", g.Rev, ix.ContentRev(context.Background()))
	}
	var labels []string
	for i, b := range g.Blocks {
		if b.Ord != i {
			t.Errorf("block %d has Ord %d", i, b.Ord)
		}
		labels = append(labels, b.Page.Path+":"+b.Marker+":"+b.Priority)
	}
	want := []string{"journals/2026_11_20.md::", "pages/A.md:TODO:B", "pages/A.md::", "pages/A.md:DONE:C", "pages/A.md::", "pages/B.md::"}
	if !reflect.DeepEqual(labels, want) {
		t.Errorf("blocks %v, want %v", labels, want)
	}
	a1, a2, a3, a4 := g.Blocks[1], g.Blocks[2], g.Blocks[3], g.Blocks[4]
	if a2.Parent != a1 || a3.Parent != a2 || a4.Parent != nil {
		t.Error("parents wrong")
	}
	if g.ByUUID["6500aaaa-0000-4000-8000-000000000001"] != a1 {
		t.Error("ByUUID does not find a1")
	}
	if got := g.BlockReferrers["6500aaaa-0000-4000-8000-000000000001"]; len(got) != 1 || got[0] != a4 {
		t.Errorf("BlockReferrers = %v, want [a4]", got)
	}
	if got := g.Referrers["b"]; len(got) != 1 || got[0] != a1 {
		t.Errorf("Referrers[b] = %v, want [a1]", got)
	}
	if got := g.Referrers["t2"]; len(got) != 1 || got[0] != a2 {
		t.Errorf("Referrers[t2] = %v, want [a2]", got)
	}
	if a1.Lower != "todo [#b] a1 see [[b]] and [[b]]" {
		t.Errorf("Lower %q", a1.Lower)
	}
	if d := g.Blocks[0].Page.Day; !d.Equal(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("journal day %v", d)
	}
	if p := g.Lookup(" bee "); len(p) != 1 || p[0].Key != "b" {
		t.Errorf("Lookup(bee) = %v", p)
	}
	// Path references, by Ord (j1 a1 a2 a3 a4 b1): own, ancestors', page
	// title and page tags.
	for _, c := range []struct {
		key  string
		want []int
	}{
		{"b", []int{1, 2, 3, 5}}, // a1 links [[B]]; b1 is on B
		{"t1", []int{1, 2, 3, 4}},
		{"t2", []int{2, 3}},
		{"a", []int{1, 2, 3, 4}},
		{"bee", nil}, // an alias as a key: callers expand aliases (Lookup)
		{"zzz", nil},
	} {
		out := make([]bool, len(g.Blocks))
		g.MarkPathRefs(out, c.key)
		var got []int
		for i, ok := range out {
			if ok {
				got = append(got, i)
			}
			if g.Blocks[i].HasPathRef(c.key) != ok {
				t.Errorf("%s: HasPathRef(block %d) disagrees", c.key, i)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("MarkPathRefs(%s) = %v, want %v", c.key, got, c.want)
		}
	}
	out := make([]bool, len(g.Blocks))
	g.MarkBlockPathRefs(out, "6500AAAA-0000-4000-8000-000000000001")
	if !reflect.DeepEqual(out, []bool{false, false, false, false, true, false}) {
		t.Errorf("MarkBlockPathRefs = %v", out)
	}
}

func TestTaskOf(t *testing.T) {
	for _, c := range []struct{ in, m, p string }{
		{"TODO [#A] x", "TODO", "A"},
		{"todo x", "", ""},
		{"NOW x [#D] y [#B]", "NOW", "B"},
		{"x [#", "", ""},
		{"[#C]", "", "C"},
		{"IN-PROGRESS", "IN-PROGRESS", ""},
		{"", "", ""},
	} {
		if m, p := TaskOf(c.in); m != c.m || p != c.p {
			t.Errorf("TaskOf(%q) = %q %q, want %q %q", c.in, m, p, c.m, c.p)
		}
	}
}

// The cache hands out one graph while the index is unchanged, and a new
// one, with the edit, after a sync that changed a note.
func TestForCachesUntilTheIndexChanges(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, fixture)
	ix := indexOf(t, root)
	ctx := context.Background()
	g1, err := For(ctx, ix)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := For(ctx, ix)
	if err != nil {
		t.Fatal(err)
	}
	if g1 != g2 {
		t.Fatal("unchanged index: a second graph was loaded")
	}
	// A sync that finds nothing changed keeps the graph.
	sync1(t, ix)
	if g3, _ := For(ctx, ix); g3 != g1 {
		t.Error("a sync with no change dropped the cached graph")
	}
	if err := os.WriteFile(filepath.Join(root, "pages", "B.md"), []byte("alias:: Bee\n\n- b1 nothing\n- b2 new [[A]]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sync1(t, ix)
	g4, err := For(ctx, ix)
	if err != nil {
		t.Fatal(err)
	}
	if g4 == g1 {
		t.Fatal("edit + sync: still the old graph")
	}
	if len(g4.Blocks) != len(g1.Blocks)+1 || len(g4.Referrers["a"]) != 1 || g4.Referrers["a"][0].Content != "b2 new [[A]]" {
		t.Errorf("new graph misses the edit: %d blocks, referrers of a %v", len(g4.Blocks), g4.Referrers["a"])
	}
	// The old graph is untouched (readers may still hold it).
	if len(g1.Blocks) != 6 || len(g1.Referrers["a"]) != 0 {
		t.Error("the published graph was modified")
	}
	// Another Index over the same vault has its own cache entry.
	ix2 := indexOf(t, root)
	if g5, _ := For(ctx, ix2); g5 == g4 {
		t.Error("two indexes share a graph")
	}
}

// Concurrent callers on a cold cache all get the same graph.
func TestForConcurrent(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, fixture)
	ix := indexOf(t, root)
	const n = 8
	got := make([]*Graph, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			g, err := For(context.Background(), ix)
			if err != nil {
				t.Error(err)
			}
			got[i] = g
		})
	}
	wg.Wait()
	for i := range got {
		if got[i] == nil || got[i] != got[0] {
			t.Fatalf("caller %d got another graph", i)
		}
	}
	// A cancelled caller gets its error and leaves the cache usable.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := loadAt(ctx, ix, journalFormats(ix)); err == nil {
		t.Error("cancelled load: no error")
	}
	if g, err := For(context.Background(), ix); err != nil || g != got[0] {
		t.Errorf("after a cancelled load: %v", err)
	}
}

// Journals get their day from the graph's own :journal/file-name-format,
// and the default names still read; a config change is seen without a
// sync.
func TestJournalFileNameFormat(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"logseq/config.edn":      "{:meta/version 1\n ;; :journal/file-name-format \"yyyy\"\n :journal/file-name-format \"dd.MM.yyyy\"}\n",
		"journals/20.11.2026.md": "- a\n",
		"journals/2026_11_21.md": "- b\n",
		"journals/notadate.md":   "- c\n",
		// A second graph with its own format.
		"sub/logseq/config.edn":        "{:journal/file-name-format \"yyyy/MM/dd\"}\n",
		"sub/journals/2026_11_22.md":   "- d\n",
		"sub/journals/20.11.2026.md":   "- e\n",
		"sub/pages/x.md":               "- f\n",
		"journals/Nov 23rd, 2026.md":   "- g\n",
		"pages/19.11.2026.md":          "- h page, not a journal\n",
		"journals/31.02.2026.md":       "- i no such day\n",
		"journals/2026-11-24.md":       "- j\n",
		"sub/journals/2026_11_25_x.md": "- k\n",
	})
	ix := indexOf(t, root)
	days := func() map[string]string {
		g, err := For(context.Background(), ix)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range g.Pages {
			if p.Kind == "journal" {
				d := ""
				if !p.Day.IsZero() {
					d = p.Day.Format("2006-01-02")
				}
				out[p.Path] = d
			}
		}
		return out
	}
	got := days()
	want := map[string]string{
		"journals/20.11.2026.md":       "2026-11-20",
		"journals/2026_11_21.md":       "2026-11-21",
		"journals/notadate.md":         "",
		"journals/Nov 23rd, 2026.md":   "",
		"journals/31.02.2026.md":       "",
		"journals/2026-11-24.md":       "2026-11-24",
		"sub/journals/2026_11_22.md":   "2026-11-22",
		"sub/journals/20.11.2026.md":   "",
		"sub/journals/2026_11_25_x.md": "",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("days\n got %v\nwant %v", got, want)
	}
	// The title format of a file name: "MMM do, yyyy".
	if err := os.WriteFile(filepath.Join(root, "logseq", "config.edn"), []byte("{:journal/file-name-format \"MMM do, yyyy\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = days()
	if got["journals/Nov 23rd, 2026.md"] != "2026-11-23" || got["journals/20.11.2026.md"] != "" || got["journals/2026_11_21.md"] != "2026-11-21" {
		t.Errorf("after the config change: %v", got)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) != len(want) {
		t.Errorf("journals %v", keys)
	}
}

func TestFileLayout(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"yyyy_MM_dd", "2006_01_02"},
		{"yyyy/MM/dd", "2006_01_02"},
		{"MMM do, yyyy", "Jan 2, 2006"},
		{"EEE dd.MM.yy", "Mon 02.01.06"},
		{"'week' yyyy", "week 2006"},
		{"'open", "open"},
	} {
		if got := FileLayout(c.in); got != c.want {
			t.Errorf("FileLayout(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := TitleLayout("yyyy/MM/dd"); got != "2006/01/02" {
		t.Errorf("TitleLayout keeps /: %q", got)
	}
	for _, c := range []struct {
		pattern, title string
		want           time.Time
		ok             bool
	}{
		{"MMM do, yyyy", "Nov 23rd, 2026", time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), true},
		{"EEEE, dd.MM.yyyy", " Monday, 23.11.2026 ", time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), true},
		{"dd.MM.yyyy", "2026-11-23", time.Time{}, false},
	} {
		if got, ok := ParseTitle(TitleLayout(c.pattern), c.title); ok != c.ok || !got.Equal(c.want) {
			t.Errorf("ParseTitle(%q, %q) = %v %v", c.pattern, c.title, got, ok)
		}
	}
}

// BenchmarkLoad reads the Logseq docs graph (skipped without the corpus):
// go test ./internal/query/graph -run '^$' -bench Load
func BenchmarkLoad(b *testing.B) {
	ix := indexOf(b, testutil.Corpus(b, "logseq-docs"))
	ctx := context.Background()
	b.Run("Load", func(b *testing.B) {
		for b.Loop() {
			if _, err := Load(ctx, ix.DB); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ForCached", func(b *testing.B) {
		for b.Loop() {
			if _, err := For(ctx, ix); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A config.edn over 1 MiB counts as absent: the default names only.
func TestJournalFormatHugeConfig(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"logseq/config.edn":      "{:journal/file-name-format \"yyyyMMdd\"\n" + strings.Repeat(" ", 1<<20) + "}\n",
		"journals/20261120.md":   "- a\n",
		"journals/2026_11_21.md": "- b\n",
	})
	ix := indexOf(t, root)
	g, err := For(context.Background(), ix)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Pages {
		if got := !p.Day.IsZero(); got != (p.Path == "journals/2026_11_21.md") {
			t.Errorf("%s: day %v", p.Path, p.Day)
		}
	}
	if len(g.Pages) != 2 {
		t.Errorf("%d pages", len(g.Pages))
	}
}
