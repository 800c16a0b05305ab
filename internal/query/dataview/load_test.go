package dataview

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestIncrementalLinks: after a sync, a query that reads links sees the
// index as it is now; when only notes' content changed, only their links
// are read again (the rest come from the earlier revision), else all of
// them are; either way they equal a full read.
func TestIncrementalLinks(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"A.md": "[[B]] and [[C]]\n",
		"B.md": "back to [[A]] and [[Missing]]\n",
		"C.md": "plain\n",
	})
	ix := indexOf(t, root)
	ctx := context.Background()
	const q = `TABLE file.outlinks, file.inlinks SORT file.name`
	sync := func() {
		t.Helper()
		if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// step checks q's answer and whether every link was read again.
	step := func(name, want string, fullRead bool) {
		t.Helper()
		before := linkReads.Load()
		if got := rowsOf(t, ix, q, query.Options{}); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		if got := linkReads.Load() != before; got != fullRead {
			t.Errorf("%s: every link read again: %v, want %v", name, got, fullRead)
		}
		r, err := cached(ctx, ix, true)
		if err != nil {
			t.Fatal(err)
		}
		all, err := loadRaw(ctx, ix, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if all.rev != r.rev || !slices.Equal(all.links, r.links) {
			t.Errorf("%s: links %v (rev %s), a full read gives %v (rev %s)", name, r.links, r.rev, all.links, all.rev)
		}
	}
	step("first query", `["File","file.outlinks","file.inlinks"] A.md=["[[A]]",["[[B]]","[[C]]"],["[[B]]"]] B.md=["[[B]]",["[[A]]","[[Missing]]"],["[[A]]"]] C.md=["[[C]]",[],["[[A]]"]]`, true)

	// An edit: only A's links are read again.
	testutil.WriteFiles(t, root, map[string]string{"A.md": "[[C]] then [[Nope]] then [[C]] again\n"})
	sync()
	step("A edited", `["File","file.outlinks","file.inlinks"] A.md=["[[A]]",["[[C]]","[[Nope]]"],["[[B]]"]] B.md=["[[B]]",["[[A]]","[[Missing]]"],[]] C.md=["[[C]]",[],["[[A]]"]]`, false)

	// An edit seen first by a query without links, then one with them:
	// still only B's links are read.
	testutil.WriteFiles(t, root, map[string]string{"B.md": "back to [[A]]\n"})
	sync()
	if got := rowsOf(t, ix, `LIST FROM "B.md"`, query.Options{}); got != `["File"] B.md=["[[B]]"]` {
		t.Errorf("list: %s", got)
	}
	step("B edited", `["File","file.outlinks","file.inlinks"] A.md=["[[A]]",["[[C]]","[[Nope]]"],["[[B]]"]] B.md=["[[B]]",["[[A]]"],[]] C.md=["[[C]]",[],["[[A]]"]]`, false)

	// A deleted note: its in-links no longer resolve (all links read).
	if err := os.Remove(filepath.Join(root, "C.md")); err != nil {
		t.Fatal(err)
	}
	sync()
	step("C deleted", `["File","file.outlinks","file.inlinks"] A.md=["[[A]]",["[[C]]","[[Nope]]"],["[[B]]"]] B.md=["[[B]]",["[[A]]"],[]]`, true)
	if got := rowsOf(t, ix, `LIST FROM [[C]]`, query.Options{}); got != `["File"]` {
		t.Errorf("links to a deleted note: %s", got)
	}

	// A note added: links to its name resolve to it.
	testutil.WriteFiles(t, root, map[string]string{"C.md": "plain again\n"})
	sync()
	step("C added", `["File","file.outlinks","file.inlinks"] A.md=["[[A]]",["[[C]]","[[Nope]]"],["[[B]]"]] B.md=["[[B]]",["[[A]]"],[]] C.md=["[[C]]",[],["[[A]]"]]`, true)

	// A rename (same content, new path).
	if err := os.Rename(filepath.Join(root, "B.md"), filepath.Join(root, "E.md")); err != nil {
		t.Fatal(err)
	}
	sync()
	step("B renamed to E", `["File","file.outlinks","file.inlinks"] A.md=["[[A]]",["[[C]]","[[Nope]]"],["[[E]]"]] C.md=["[[C]]",[],["[[A]]"]] E.md=["[[E]]",["[[A]]"],[]]`, true)
	if got := rowsOf(t, ix, `LIST FROM [[A]]`, query.Options{}); got != `["File"] E.md=["[[E]]"]` {
		t.Errorf("links from a renamed note: %s", got)
	}

	// A new alias moves resolution: every link is read again.
	testutil.WriteFiles(t, root, map[string]string{"C.md": "---\naliases: [Nope]\n---\nplain again\n"})
	sync()
	step("C aliased Nope", `["File","file.outlinks","file.inlinks"] A.md=["[[A]]",["[[C]]"],["[[E]]"]] C.md=["[[C]]",[],["[[A]]"]] E.md=["[[E]]",["[[A]]"],[]]`, true)
}
