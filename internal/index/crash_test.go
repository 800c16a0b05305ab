package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

// The crash tests run a real `loci index` process that kills itself with
// SIGKILL at a named point of a sync (LOCI_TEST_CRASH_AT, see crash.go), then
// run `loci index` once more and compare the index with a clean build of
// the same files: notes, chunks, links with their resolved targets, tags,
// vectors and the top 10 of a set of queries.

// runLoci runs `loci index <vault> --index-dir <dir> [args]` with the
// given LOCI_TEST_* settings; killed reports that it died of SIGKILL.
func runLoci(t *testing.T, bin, vaultDir, indexDir string, env []string, args ...string) (out string, killed bool) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"index", vaultDir, "--index-dir", indexDir, "-q"}, args...)...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "LOCI_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return string(b), true
		}
	}
	if err != nil {
		t.Fatalf("loci index %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return string(b), false
}

// genVault writes a deterministic vault of n notes: folders, frontmatter
// tags and aliases, sections, wikilinks (by name, alias, heading, some
// unresolved), percent-encoded Markdown links, inline tags and tasks, and
// a few file names shared by several folders.
func genVault(t *testing.T, root string, n int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	syll := []string{"ka", "lo", "mi", "ra", "ten", "sol", "vi", "qua", "dor", "pel", "an", "ex", "tri", "zu", "mon", "gar"}
	vocab := make([]string, 600)
	for i := range vocab {
		var b strings.Builder
		for k := 0; k < 2+i%3; k++ {
			b.WriteString(syll[(i*7+k*5+i/16)%len(syll)])
		}
		vocab[i] = fmt.Sprintf("%s%d", b.String(), i%10)
	}
	english := strings.Fields("garden memory project meeting review archive index search network planning budget travel research design")
	words := func(k int) string {
		var b strings.Builder
		for i := 0; i < k; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			if r.IntN(12) == 0 {
				b.WriteString(english[r.IntN(len(english))])
			} else {
				b.WriteString(vocab[int(r.ExpFloat64()*120)%len(vocab)])
			}
		}
		return b.String()
	}
	files := map[string]string{}
	for i := 0; i < n; i++ {
		rel := fmt.Sprintf("area%d/note %d.md", i%6, i)
		if i%97 == 0 {
			rel = fmt.Sprintf("area%d/common.md", i/97%6) // same name in several folders
		}
		var b strings.Builder
		if i%3 == 0 {
			fmt.Fprintf(&b, "---\ntags: [t%d, shared]\n", i%17)
			if i%5 == 0 {
				fmt.Fprintf(&b, "aliases: [alias%d]\n", i)
			}
			fmt.Fprintf(&b, "up: \"[[note %d]]\"\n---\n", (i*31)%n)
		}
		fmt.Fprintf(&b, "# Note %d %s\n\n%s\n", i, words(2), words(20+r.IntN(30)))
		for s := 0; s < 1+r.IntN(3); s++ {
			fmt.Fprintf(&b, "\n## %s\n\n%s", words(2), words(15+r.IntN(40)))
			for l := 0; l < 1+r.IntN(4); l++ {
				switch r.IntN(6) {
				case 0:
					fmt.Fprintf(&b, " [[alias%d]]", 5*3*r.IntN(n/15+1))
				case 1:
					fmt.Fprintf(&b, " [[missing %d]]", r.IntN(50))
				case 2:
					j := r.IntN(n)
					fmt.Fprintf(&b, " [see](../area%d/note%%20%d.md)", j%6, j)
				case 3:
					fmt.Fprintf(&b, " [[common]]")
				default:
					fmt.Fprintf(&b, " [[note %d#%s]]", r.IntN(n), english[r.IntN(len(english))])
				}
			}
			fmt.Fprintf(&b, " #tag%d\n", r.IntN(40))
			if r.IntN(3) == 0 {
				fmt.Fprintf(&b, "- [ ] %s\n", words(4))
			}
		}
		files[rel] = b.String()
	}
	testutil.WriteFiles(t, root, files)
}

// snapshot is what must be equal between a healed index and a clean build.
type snapshot struct {
	Notes, Chunks, Links, Resolved, Tags, ChunkVectors, NoteVectors int
	LinkRows, TagRows, AnchorRows                                   []string
	Top                                                             map[string][]string
	Incomplete                                                      string
}

var crashQueries = []search.Query{
	{Text: "garden"},
	{Text: "memory project"},
	{Text: "review archive budget"},
	{Text: `"travel research"`},
	{Text: "plan*"},
	{Text: "network -design"},
	{Text: "tag7"},
	{Text: "kaloka0 mirami1"},
	{Text: "garden", Tags: []string{"shared"}},
	{Text: "meeting notes about the budget", Mode: search.ModeSemantic},
	{Text: "research design", Mode: search.ModeSemantic},
}

func takeSnapshot(t *testing.T, vaultDir, indexDir string, queries []search.Query) snapshot {
	t.Helper()
	ctx := context.Background()
	v, err := vault.Open(vaultDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(ctx, v, index.Options{Dir: indexDir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var s snapshot
	for q, dst := range map[string]*int{
		"SELECT COUNT(*) FROM notes":                          &s.Notes,
		"SELECT COUNT(*) FROM chunks":                         &s.Chunks,
		"SELECT COUNT(*) FROM links":                          &s.Links,
		"SELECT COUNT(*) FROM links WHERE dst_id IS NOT NULL": &s.Resolved,
		"SELECT COUNT(*) FROM tags":                           &s.Tags,
		"SELECT COUNT(*) FROM chunk_vectors":                  &s.ChunkVectors,
		"SELECT COUNT(*) FROM note_vectors":                   &s.NoteVectors,
	} {
		if err := ix.DB.QueryRow(q).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	s.Incomplete = ix.Meta(ctx, "sync_incomplete")
	rowsOf := func(q string) []string {
		rows, err := ix.DB.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var x string
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			out = append(out, x)
		}
		sort.Strings(out)
		return out
	}
	s.LinkRows = rowsOf(`SELECT s.path||'|'||l.kind||'|'||l.target||'|'||l.line||'|'||COALESCE(l.heading,'')||'|'||COALESCE(d.path,'-')||'|'||COALESCE(l.context,'')
		FROM links l JOIN notes s ON s.id=l.src_id LEFT JOIN notes d ON d.id=l.dst_id`)
	// The notes with anchor text (the text itself is contentless; the
	// queries below rank by it).
	s.AnchorRows = rowsOf(`SELECT n.path FROM anchors_fts a JOIN notes n ON n.id=a.rowid`)
	s.TagRows = rowsOf(`SELECT n.path||'|'||t.tag||'|'||t.line||'|'||t.source FROM tags t JOIN notes n ON n.id=t.note_id`)
	if len(queries) == 0 {
		return s
	}
	s.Top = map[string][]string{}
	sr := &search.Searcher{DB: ix.DB, Vectors: ix}
	for _, q := range queries {
		if q.Mode == "" {
			q.Mode = search.ModeLexical
		}
		resp, err := sr.Search(ctx, q)
		if err != nil {
			t.Fatalf("search %q: %v", q.Text, err)
		}
		s.Top[q.Mode+" "+q.Text+" "+strings.Join(q.Tags, ",")] = canonTop(resp.Results)
	}
	return s
}

// canonTop renders a top 10 so that notes tied on score compare equal
// whatever order the engine returned them in (ties are broken by chunk
// ids, which differ between two builds): every score in order, and the
// paths of the notes strictly above the last score (ties at the cut may
// legitimately differ).
func canonTop(rs []search.Result) []string {
	rs = append([]search.Result(nil), rs...)
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Score != rs[j].Score {
			return rs[i].Score > rs[j].Score
		}
		return rs[i].Path < rs[j].Path
	})
	var out []string
	for _, r := range rs {
		if r.Score > rs[len(rs)-1].Score {
			out = append(out, fmt.Sprintf("%.3f %s", r.Score, r.Path))
		} else {
			out = append(out, fmt.Sprintf("%.3f", r.Score))
		}
	}
	return out
}

func diffSnapshots(t *testing.T, what string, got, want snapshot) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	t.Errorf("%s: the index differs from a clean build:\n  notes %d/%d chunks %d/%d links %d/%d resolved %d/%d tags %d/%d chunk vectors %d/%d note vectors %d/%d (got/want), incomplete=%q",
		what, got.Notes, want.Notes, got.Chunks, want.Chunks, got.Links, want.Links, got.Resolved, want.Resolved,
		got.Tags, want.Tags, got.ChunkVectors, want.ChunkVectors, got.NoteVectors, want.NoteVectors, got.Incomplete)
	shown := 0
	for k, w := range want.Top {
		if g := got.Top[k]; !reflect.DeepEqual(g, w) && shown < 3 {
			shown++
			t.Errorf("  query %q:\n    got  %v\n    want %v", k, g, w)
		}
	}
	if !reflect.DeepEqual(got.LinkRows, want.LinkRows) {
		t.Errorf("  link rows differ (%d vs %d), first difference: %s", len(got.LinkRows), len(want.LinkRows), firstDiff(got.LinkRows, want.LinkRows))
	}
	if !reflect.DeepEqual(got.AnchorRows, want.AnchorRows) {
		t.Errorf("  notes with anchor text differ (%d vs %d), first difference: %s", len(got.AnchorRows), len(want.AnchorRows), firstDiff(got.AnchorRows, want.AnchorRows))
	}
	if !reflect.DeepEqual(got.TagRows, want.TagRows) {
		t.Errorf("  tag rows differ (%d vs %d), first difference: %s", len(got.TagRows), len(want.TagRows), firstDiff(got.TagRows, want.TagRows))
	}
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("got %q, want %q", x, y)
		}
	}
	return ""
}

// copyIndex copies a closed index directory (no WAL left behind).
func copyIndex(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	testutil.CopyTree(t, from, to)
	return to
}

// mutate edits, renames, deletes and adds notes of a generated vault: the
// changes an incremental sync (and re-resolution after renames) must apply.
func mutate(t *testing.T, root string, n int) {
	t.Helper()
	for i := 1; i < n; i += 4 { // edit: new words and links
		p := filepath.Join(root, fmt.Sprintf("area%d/note %d.md", i%6, i))
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		b = append(b, fmt.Sprintf("\nedited zebrafish [[note %d]] [[renamed %d]] #edited\n", (i+1)%n, (i+2)%n)...)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := 2; i < n; i += 6 { // rename: links to the old name break, [[renamed i]] resolve
		from := filepath.Join(root, fmt.Sprintf("area%d/note %d.md", i%6, i))
		to := filepath.Join(root, fmt.Sprintf("area%d/renamed %d.md", i%6, i))
		if err := os.Rename(from, to); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	for i := 3; i < n; i += 24 { // delete
		os.Remove(filepath.Join(root, fmt.Sprintf("area%d/note %d.md", i%6, i)))
	}
	files := map[string]string{}
	for i := 0; i < 100; i++ { // add, with names other notes already link to
		files[fmt.Sprintf("new/missing %d.md", i)] = fmt.Sprintf("# Missing %d\n\nnow it exists, garden zebrafish [[note %d]]\n", i, i*7)
	}
	testutil.WriteFiles(t, root, files)
}

type crashCase struct {
	name  string
	from  string // "empty" or "indexed": the index before the crashed run
	args  []string
	crash string
	then  string // a second crash point for the healing run, if any
}

// TestCrashHeals kills `loci index` at every named point of a full build
// (from empty and with --reset) and of an incremental sync with edits,
// renames, deletions and additions; one more `loci index` must then give
// the same index as a clean build.
func TestCrashHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ~40 index processes")
	}
	bin := testutil.LociBinary(t)
	const n = 1200
	base := filepath.Join(t.TempDir(), "vault")
	genVault(t, base, n, 1)
	// Small transactions, so 1,200 notes cross several commits (the
	// default is 20,000 rows; the windows are the same).
	small := []string{"LOCI_TEST_TX_ROWS=600"}

	clean := t.TempDir()
	if _, killed := runLoci(t, bin, base, clean, small); killed {
		t.Fatal("clean build was killed")
	}
	want := takeSnapshot(t, base, clean, crashQueries)
	if want.Notes < n-10 || want.Links < 2*n || want.Resolved == want.Links || want.ChunkVectors != want.Chunks {
		t.Fatalf("generated vault too thin: %+v", want)
	}

	full := []crashCase{
		{"reset", "indexed", []string{"--reset"}, "reset", ""},
		{"reset commit 1", "indexed", []string{"--reset"}, "commit:1", ""},
		{"empty commit 3", "empty", nil, "commit:3", ""},
		{"empty notes 700", "empty", nil, "notes:700", ""},
		{"reset before links", "indexed", []string{"--reset"}, "before-links", ""},
		{"empty mid links", "empty", nil, "mid-links", ""},
		{"empty before indexes", "empty", nil, "before-indexes", ""},
		{"reset before commit", "indexed", []string{"--reset"}, "before-commit", ""},
		{"empty before embed", "empty", nil, "before-embed", ""},
		{"empty embed 2", "empty", nil, "embed:2", ""},
		{"crash while healing", "indexed", []string{"--reset"}, "commit:2", "relink:300"},
	}
	for _, c := range full {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.from == "indexed" {
				dir = copyIndex(t, clean)
			}
			crashAndHeal(t, bin, base, dir, c, small)
			diffSnapshots(t, c.name, takeSnapshot(t, base, dir, crashQueries), want)
		})
	}

	// Incremental: index the vault, change it, crash the sync that follows.
	inc := filepath.Join(t.TempDir(), "vault")
	testutil.CopyTree(t, base, inc)
	before := t.TempDir()
	runLoci(t, bin, inc, before, small)
	mutate(t, inc, n)
	cleanInc := t.TempDir()
	runLoci(t, bin, inc, cleanInc, small)
	wantInc := takeSnapshot(t, inc, cleanInc, crashQueries)
	// BM25 statistics of an index updated in place differ from a clean
	// build's (FTS5 does not subtract a deleted row of a contentless_delete
	// table from its totals), so the rankings to compare with are those of
	// the same incremental sync run without a crash; everything else must
	// equal the clean build.
	uncrashed := copyIndex(t, before)
	runLoci(t, bin, inc, uncrashed, small)
	noCrash := takeSnapshot(t, inc, uncrashed, crashQueries)
	top := noCrash.Top
	noCrash.Top = wantInc.Top
	diffSnapshots(t, "incremental without a crash", noCrash, wantInc)
	wantInc.Top = top
	for _, c := range []crashCase{
		{"incremental commit 1", "indexed", nil, "commit:1", ""},
		{"incremental notes 150", "indexed", nil, "notes:150", ""},
		{"incremental reresolve", "indexed", nil, "reresolve", ""},
		{"incremental mid links", "indexed", nil, "mid-links", ""},
		{"incremental embed 1", "indexed", nil, "embed:1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyIndex(t, before)
			crashAndHeal(t, bin, inc, dir, c, small)
			diffSnapshots(t, c.name, takeSnapshot(t, inc, dir, crashQueries), wantInc)
		})
	}
}

// TestCrashHealsObsidianHub kills `loci index --reset` on obsidian-hub
// after its first commit (3,000-odd notes stored, no links), the case
// reported from the field, with the real transaction size.
func TestCrashHealsObsidianHub(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus test")
	}
	hub := testutil.Corpus(t, "obsidian-hub")
	bin := testutil.LociBinary(t)
	lexical := []string{"LOCI_EMBED_PROVIDER=none"} // vectors are covered by TestCrashHeals
	clean := t.TempDir()
	runLoci(t, bin, hub, clean, lexical)
	queries := []search.Query{{Text: "plugin"}, {Text: "daily notes template"}, {Text: "dataview query"}, {Text: `"graph view"`},
		{Text: "theme*"}, {Text: "sync -mobile"}, {Text: "zettelkasten"}, {Text: "canvas"}, {Text: "kanban board"}, {Text: "publish"}}
	want := takeSnapshot(t, hub, clean, queries)
	dir := copyIndex(t, clean)
	crashAndHeal(t, bin, hub, dir, crashCase{name: "hub", args: []string{"--reset"}, crash: "commit:1"}, lexical)
	diffSnapshots(t, "obsidian-hub", takeSnapshot(t, hub, dir, queries), want)
	t.Logf("clean build: notes %d, chunks %d, links %d (resolved %d), tags %d", want.Notes, want.Chunks, want.Links, want.Resolved, want.Tags)
}

// crashAndHeal runs the crashing sync, checks it died at its point, then
// runs plain `loci index` (crashing it too when c.then is set) until one
// run completes.
func crashAndHeal(t *testing.T, bin, vaultDir, indexDir string, c crashCase, env []string) {
	t.Helper()
	out, killed := runLoci(t, bin, vaultDir, indexDir, append(env, "LOCI_TEST_CRASH_AT="+c.crash), c.args...)
	if !killed {
		t.Fatalf("crash point %s was never reached:\n%s", c.crash, out)
	}
	crashed := takeSnapshot(t, vaultDir, indexDir, nil)
	t.Logf("after the kill at %s: notes %d, chunks %d, links %d (resolved %d), tags %d, chunk vectors %d",
		c.crash, crashed.Notes, crashed.Chunks, crashed.Links, crashed.Resolved, crashed.Tags, crashed.ChunkVectors)
	if c.then != "" {
		if out, killed := runLoci(t, bin, vaultDir, indexDir, append(env, "LOCI_TEST_CRASH_AT="+c.then)); !killed {
			t.Fatalf("crash point %s (while healing) was never reached:\n%s", c.then, out)
		}
	}
	out, _ = runLoci(t, bin, vaultDir, indexDir, env)
	t.Logf("healing run: %s", strings.TrimSpace(out))
}
