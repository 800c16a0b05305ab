package index

import (
	"context"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

func TestLinkResolution(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"Home.md": "[[Note]] [[note]] [[Deep/Note]] [[Other|shown]] [[Other#Section]] [[Other#^blk]] [[Ali]] [[Missing]] " +
			"[md](sub/Other.md) [img](pic.png) ![[pic.png]] [[#Local heading]] [[Note.md]] [[Folder X/Same]]\n\n# Local heading\n",
		"Note.md":          "root note",
		"Deep/Note.md":     "deeper note with the same name",
		"sub/Other.md":     "---\naliases: [Ali]\n---\n# Section\ntext ^blk\n",
		"Folder X/Same.md": "same name 1",
		"Folder Y/Same.md": "same name 2 [[Same]]",
		"typed.md":         "---\npart_of: \"[[Note]]\"\nrelated:\n  - \"[[Other]]\"\n  - \"[[Missing typed]]\"\n---\nbody\n",
	})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	ctx := context.Background()

	l, err := ix.LinksOf(ctx, "Home.md")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Note":          "Note.md", // shortest path wins
		"note":          "Note.md", // case-insensitive
		"Deep/Note":     "Deep/Note.md",
		"Other":         "sub/Other.md",
		"Ali":           "sub/Other.md", // alias
		"Missing":       "",
		"sub/Other.md":  "sub/Other.md",
		"":              "Home.md", // same-note heading link
		"Note.md":       "Note.md",
		"Folder X/Same": "Folder X/Same.md",
	}
	seen := map[string]bool{}
	for _, r := range append(append([]LinkRow{}, l.Outgoing...), l.Embeds...) {
		if w, ok := want[r.Target]; ok {
			seen[r.Target] = true
			if r.Resolved != w {
				t.Errorf("link %q (%s) resolved to %q, want %q", r.Target, r.Kind, r.Resolved, w)
			}
		}
		if r.Target == "pic.png" && !r.Attachment {
			t.Errorf("pic.png not marked as an attachment")
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("link %q missing from %+v", k, l.Outgoing)
		}
	}
	if len(l.Unresolved) != 1 || l.Unresolved[0].Target != "Missing" {
		t.Errorf("unresolved = %+v", l.Unresolved)
	}

	// Same file name in two folders: a link from Folder Y prefers its own folder.
	ly, _ := ix.LinksOf(ctx, "Folder Y/Same.md")
	if len(ly.Outgoing) != 1 || ly.Outgoing[0].Resolved != "Folder Y/Same.md" {
		t.Errorf("same-folder preference: %+v", ly.Outgoing)
	}

	// Typed links both ways.
	lt, _ := ix.LinksOf(ctx, "typed.md")
	if len(lt.TypedOut) != 3 {
		t.Fatalf("typed outgoing = %+v", lt.TypedOut)
	}
	if lt.TypedOut[0].Key != "part_of" || lt.TypedOut[0].Resolved != "Note.md" {
		t.Errorf("typed part_of = %+v", lt.TypedOut[0])
	}
	ln, _ := ix.LinksOf(ctx, "Note.md")
	if len(ln.TypedIn) != 1 || ln.TypedIn[0].Source != "typed.md" || ln.TypedIn[0].Key != "part_of" {
		t.Errorf("typed incoming = %+v", ln.TypedIn)
	}
	if len(ln.Backlinks) < 3 {
		t.Errorf("backlinks of Note.md = %+v", ln.Backlinks)
	}

	// Candidates explain why they matched.
	r, err := LoadResolver(ctx, ix.DB, ix.Vault.Kind)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Candidates("Home.md", "wikilink", "Note")
	if len(c) != 2 || c[0].Path != "Note.md" || c[0].Match != "path" || c[1].Match != "filename" {
		t.Errorf("candidates = %+v", c)
	}
}

func TestLogseqGraphIndexing(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"logseq/config.edn":      "{}",
		"pages/Alpha.md":         "type:: [[Beta]]\nalias:: First\n\n- block one\n  id:: 11111111-2222-4333-8444-555555555555\n\t- child links [[ns/page]] #tagged\n",
		"pages/Beta.md":          "- refers to ((11111111-2222-4333-8444-555555555555)) and [[First]]\n",
		"pages/ns___page.md":     "- a namespaced page\n",
		"journals/2024_01_15.md": "- TODO journal task [[Alpha]]\n",
	})
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	ctx := context.Background()
	lb, err := ix.LinksOf(ctx, "pages/Beta.md")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range lb.Outgoing {
		got[l.Kind+":"+l.Target] = l.Resolved
	}
	if got["blockref:11111111-2222-4333-8444-555555555555"] != "pages/Alpha.md" {
		t.Errorf("block ref not resolved: %v", got)
	}
	if got["wikilink:First"] != "pages/Alpha.md" {
		t.Errorf("alias page ref not resolved: %v", got)
	}
	la, _ := ix.LinksOf(ctx, "pages/Alpha.md")
	var ns, typed bool
	for _, l := range la.Outgoing {
		if l.Target == "ns/page" && l.Resolved == "pages/ns___page.md" {
			ns = true
		}
	}
	for _, l := range la.TypedOut {
		if l.Key == "type" && l.Resolved == "pages/Beta.md" {
			typed = true
		}
	}
	if !ns || !typed {
		t.Errorf("namespace=%v typed=%v: %+v", ns, typed, la)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM blocks WHERE uuid='11111111-2222-4333-8444-555555555555'"); n != 1 {
		t.Errorf("block uuid rows = %d", n)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM notes WHERE kind='journal'"); n != 1 {
		t.Errorf("journal kind rows = %d", n)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM tasks WHERE status='todo'"); n != 1 {
		t.Errorf("logseq TODO tasks = %d", n)
	}
}
