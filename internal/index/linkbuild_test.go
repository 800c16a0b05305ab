package index

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/testutil"
)

// linkFixture is a handful of notes whose links have known answers, added
// to a generated vault large enough (1,100 notes) for a bulk build.
var linkFixture = map[string]string{
	"fx/hub.md": "---\naliases: [Central]\n---\n# Hub\n\n## Part\n\nSee [[#Part]] and [[common]] and [[fx/deep/leaf]].\n" +
		"Also [[Central]] (myself), [[nowhere at all]], ![[diagram.png]] and [leaf](deep/leaf.md).\n",
	"fx/deep/leaf.md": "# Leaf\n\nBack to [[hub]], to [[Central]] and to [[area2/common]].\n",
	"fx/common.md":    "# Common here\n\nA note named like the generated ones: [[common]].\n",
}

// genLinkVault writes n notes (deterministic by seed) whose links take
// every path of the resolver: names shared by several folders, aliases,
// relative Markdown links, headings, unresolved targets, attachments.
func genLinkVault(t *testing.T, root string, n int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	files := map[string]string{}
	for i := 0; i < n; i++ {
		rel := fmt.Sprintf("area%d/note %d.md", i%6, i)
		if i%97 == 0 {
			rel = fmt.Sprintf("area%d/common.md", i/97%6)
		}
		var b strings.Builder
		if i%5 == 0 {
			fmt.Fprintf(&b, "---\naliases: [alias%d]\nup: \"[[note %d]]\"\n---\n", i, (i*31)%n)
		}
		fmt.Fprintf(&b, "# Heading\n\nText of note %d.", i)
		for l := 0; l < 2+r.IntN(5); l++ {
			switch r.IntN(7) {
			case 0:
				fmt.Fprintf(&b, " See [[alias%d]].", 5*r.IntN(n/5))
			case 1:
				fmt.Fprintf(&b, " See [[missing %d]].", r.IntN(50))
			case 2:
				j := r.IntN(n)
				fmt.Fprintf(&b, " See [this](../area%d/note%%20%d.md).", j%6, j)
			case 3:
				b.WriteString(" See [[common]].")
			case 4:
				fmt.Fprintf(&b, " See ![[pic%d.png]].", r.IntN(9))
			default:
				fmt.Fprintf(&b, " See [[note %d#Heading]].", r.IntN(n))
			}
		}
		b.WriteString("\n")
		files[rel] = b.String()
	}
	testutil.WriteFiles(t, root, files)
}

// linkRows lists every stored link as text, dst_id as the target's path,
// sorted (rowids and note ids differ between the builds compared).
func linkRows(t *testing.T, ix *Index) []string {
	t.Helper()
	rows, err := ix.DB.Query(`SELECT s.path, l.kind, l.target, IFNULL(l.heading,''), IFNULL(l.display,''), IFNULL(l.rel_key,''), l.line, l.attachment,
		IFNULL(d.path,'<none>'), IFNULL(l.context,'') FROM links l JOIN notes s ON s.id=l.src_id LEFT JOIN notes d ON d.id=l.dst_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var src, kind, target, heading, display, key, dst, ctx string
		var line, att int
		if err := rows.Scan(&src, &kind, &target, &heading, &display, &key, &line, &att, &dst, &ctx); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s|%s|%s|%s|%s|%s|%d|%d|%s|%s", src, kind, target, heading, display, key, line, att, dst, ctx))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// anchorRows lists every note's anchor text as "path|text", sorted.
func anchorRows(t *testing.T, ix *Index) []string {
	t.Helper()
	rows, err := ix.DB.Query(`SELECT n.path, a.anchor FROM anchors_fts a JOIN notes n ON n.id=a.rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p, a string
		if err := rows.Scan(&p, &a); err != nil {
			t.Fatal(err)
		}
		out = append(out, p+"|"+a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// dstOf returns where the one link of src with this target points.
func dstOf(t *testing.T, ix *Index, src, target string) string {
	t.Helper()
	var dst string
	err := ix.DB.QueryRow(`SELECT IFNULL(d.path,'<none>') FROM links l JOIN notes s ON s.id=l.src_id LEFT JOIN notes d ON d.id=l.dst_id
		WHERE s.path=? AND l.target=?`, src, target).Scan(&dst)
	if err != nil {
		t.Fatalf("link %s -> %s: %v", src, target, err)
	}
	return dst
}

// TestBuildLinksEqualIncremental: the links of a bulk build from empty
// (stored unresolved as the notes are written, resolved at the end a page
// at a time) are the links an incremental sync gives, both when it adds
// notes (every stored link re-resolved) and when it edits notes without
// changing any name (only the edited notes' links resolved).
func TestBuildLinksEqualIncremental(t *testing.T) {
	defer func(n int, a int64) { txRows, anchorPage = n, a }(txRows, anchorPage)
	txRows = 500    // several transactions: links are stored unresolved across commits
	anchorPage = 37 // the anchor text of a build is rebuilt over many pages
	const n = 1100
	full := filepath.Join(t.TempDir(), "vault")
	genLinkVault(t, full, n, 3)
	testutil.WriteFiles(t, full, linkFixture)

	// 1. A bulk build of the whole vault.
	ixFull := openTest(t, full)
	mustSync(t, ixFull, SyncOptions{})
	want := linkRows(t, ixFull)
	wantAnchors := anchorRows(t, ixFull)
	if len(wantAnchors) < n/2 {
		t.Fatalf("only %d notes with anchor text", len(wantAnchors))
	}
	if len(want) < 2*n {
		t.Fatalf("only %d links in the vault", len(want))
	}
	// Hand-checked answers, so the comparisons below cannot pass on links
	// that are wrong the same way in every build.
	for _, c := range []struct{ src, target, dst string }{
		{"fx/hub.md", "", "fx/hub.md"},                         // [[#Part]]: its own note
		{"fx/hub.md", "common", "fx/common.md"},                // the same name in the linking note's folder wins
		{"fx/hub.md", "fx/deep/leaf", "fx/deep/leaf.md"},       // a path
		{"fx/hub.md", "Central", "fx/hub.md"},                  // its own alias
		{"fx/hub.md", "nowhere at all", "<none>"},              // unresolved
		{"fx/hub.md", "diagram.png", "<none>"},                 // an attachment
		{"fx/hub.md", "deep/leaf.md", "fx/deep/leaf.md"},       // a relative Markdown link
		{"fx/deep/leaf.md", "hub", "fx/hub.md"},                // a unique file name
		{"fx/deep/leaf.md", "Central", "fx/hub.md"},            // an alias
		{"fx/deep/leaf.md", "area2/common", "area2/common.md"}, // a partial path
		{"fx/common.md", "common", "fx/common.md"},             // its own name, its own folder
	} {
		if got := dstOf(t, ixFull, c.src, c.target); got != c.dst {
			t.Errorf("bulk build: %s -> [[%s]] resolved to %s, want %s", c.src, c.target, got, c.dst)
		}
	}
	if got := count(t, ixFull, "SELECT COUNT(*) FROM links WHERE attachment=1 AND dst_id IS NOT NULL"); got != 0 {
		t.Errorf("%d attachments resolved to notes", got)
	}

	// 2. The same vault indexed in two steps: half of it (a bulk build),
	// then the other half added (incremental, names changed: every stored
	// link is re-resolved).
	inc := filepath.Join(t.TempDir(), "vault")
	testutil.CopyTree(t, full, inc)
	noIndex(t, inc)
	held := t.TempDir()
	var moved []string
	err := filepath.WalkDir(inc, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		rel, _ := filepath.Rel(inc, p)
		if len(moved)%2 == 0 || strings.HasPrefix(rel, "fx") {
			moved = append(moved, rel)
		} else {
			moved = append(moved, "")
			return nil
		}
		dst := filepath.Join(held, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.Rename(p, dst)
	})
	if err != nil {
		t.Fatal(err)
	}
	ixInc := openTest(t, inc)
	mustSync(t, ixInc, SyncOptions{})
	for _, rel := range moved {
		if rel == "" {
			continue
		}
		if err := os.Rename(filepath.Join(held, rel), filepath.Join(inc, rel)); err != nil {
			t.Fatal(err)
		}
	}
	if res := mustSync(t, ixInc, SyncOptions{}); res.Added < n/2 {
		t.Fatalf("the second sync added %d notes", res.Added)
	}
	diffLinkRows(t, "two-step build", linkRows(t, ixInc), want)
	// Its anchor text was refreshed note by note, the build's rebuilt in
	// pages of note ids: the same.
	diffLinkRows(t, "two-step build's anchor text", anchorRows(t, ixInc), wantAnchors)

	// 3. Edits that change links but no name (no title, no alias): only the
	// edited notes' links are resolved. A clean build of the edited vault
	// must give the same links.
	edits := map[string]string{
		"fx/deep/leaf.md":    "\nNow to [[common]], [[Central]], [[note 7]] and [[gone]].\n",
		"area1/note 1.md":    "\nAlso [[hub]] and [[#Heading]] here.\n",
		"area4/note 1000.md": "\n[[fx/common]] [[alias15]]\n",
	}
	for rel, more := range edits {
		p := filepath.Join(full, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(b, more...), 0o644); err != nil {
			t.Fatal(err)
		}
		bump(t, p, time.Hour)
	}
	if res := mustSync(t, ixFull, SyncOptions{}); res.Indexed != len(edits) {
		t.Fatalf("the edit sync indexed %d notes, want %d", res.Indexed, len(edits))
	}
	if got := dstOf(t, ixFull, "fx/deep/leaf.md", "common"); got != "fx/common.md" {
		t.Errorf("after the edit, leaf -> [[common]] resolved to %s, want fx/common.md", got)
	}
	if got := dstOf(t, ixFull, "area1/note 1.md", "hub"); got != "fx/hub.md" {
		t.Errorf("after the edit, note 1 -> [[hub]] resolved to %s, want fx/hub.md", got)
	}
	clean := filepath.Join(t.TempDir(), "vault")
	testutil.CopyTree(t, full, clean)
	noIndex(t, clean)
	ixClean := openTest(t, clean)
	mustSync(t, ixClean, SyncOptions{})
	diffLinkRows(t, "edited in place", linkRows(t, ixFull), linkRows(t, ixClean))
	diffLinkRows(t, "edited in place, anchor text", anchorRows(t, ixFull), anchorRows(t, ixClean))
}

// noIndex removes the index copied with a vault.
func noIndex(t *testing.T, root string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, ".loci")); err != nil {
		t.Fatal(err)
	}
}

func diffLinkRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("%s: %d links, a clean build has %d", what, len(got), len(want))
	shown := 0
	for _, g := range got {
		if _, ok := slices.BinarySearch(want, g); !ok && shown < 5 {
			t.Errorf("  only in %s: %s", what, g)
			shown++
		}
	}
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok && shown < 10 {
			t.Errorf("  only in the clean build: %s", w)
			shown++
		}
	}
}
