package read_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/testutil"
)

func TestGetContext(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[read.GetContextOut](t, env, "get_context", `{"query": "index fresh", "mode": "lexical"}`)
	if out.Mode != "lexical" || len(out.Notes) == 0 || len(out.Notes) > 5 {
		t.Fatalf("get_context = %+v", out)
	}
	top := out.Notes[0]
	if top.Path != "Projects/Project Atlas.md" || !slices.Contains(top.Tags, "project") || top.Line == 0 ||
		!slices.Equal(top.HeadingPath, []string{"Project Atlas", "Goals"}) || !strings.Contains(top.Snippet, "**fresh**") || top.Preview != "" {
		t.Errorf("top note = %+v", top)
	}
	seen := map[string]bool{}
	for _, n := range out.Notes {
		if seen[n.Path] {
			t.Errorf("note %s listed twice", n.Path)
		}
		seen[n.Path] = true
		if n.Tags == nil || n.HeadingPath == nil {
			t.Errorf("nil lists in %+v", n)
		}
	}

	out = opstest.Call[read.GetContextOut](t, env, "get_context", `{"query": "index fresh", "limit": 1, "preview_chars": 40, "mode": "lexical"}`)
	if len(out.Notes) != 1 {
		t.Fatalf("limit 1 = %d notes", len(out.Notes))
	}
	if p := out.Notes[0].Preview; !strings.HasPrefix(p, "# Project Atlas\n") || utf8.RuneCountInString(p) != 41 || strings.Contains(p, "status:") {
		t.Errorf("preview = %q", p)
	}

	out = opstest.Call[read.GetContextOut](t, env, "get_context", `{"query": "note", "path_glob": "Ideas/**", "tags": ["learning"]}`)
	for _, n := range out.Notes {
		if !strings.HasPrefix(n.Path, "Ideas/") {
			t.Errorf("path_glob leaked %s", n.Path)
		}
	}
	// A string with no word and no known character n-gram in it: the
	// built-in embedder gives it no vector, so nothing matches. (A made-up
	// compound of real words, "xylophonequark", now has a vector from its
	// n-grams and may find the nearest notes by meaning.)
	out = opstest.Call[read.GetContextOut](t, env, "get_context", `{"query": "xqzvkjwpq"}`)
	if len(out.Notes) != 0 || out.Hint == "" {
		t.Errorf("no-match = %+v", out)
	}

	for _, in := range []string{`{}`, `{"query": "  "}`, `{"query": "x", "mode": "fuzzy"}`,
		`{"query": "x", "limit": 21}`, `{"query": "x", "preview_chars": -1}`, `{"query": "x", "preview_chars": 5000}`,
		`{"query": "x", "bogus": 1}`, `{"query": 3}`, `{"query": "x", "path_glob": "[bad"}`} {
		opstest.WantCode(t, env, "get_context", in, errs.CodeInvalidInput)
	}
	opstest.WantCode(t, env, "get_context", `{"query": "x", "vault": "nope"}`, errs.CodeVaultNotFound)
}

func TestReadNoteByReference(t *testing.T) {
	env := opstest.DemoEnv(t)
	cases := []struct{ note, path, match string }{
		{"20261101093000", "Projects/Project Atlas.md", "id"},
		{"Project Atlas", "Projects/Project Atlas.md", "filename"},
		{"[[Project Atlas|the project]]", "Projects/Project Atlas.md", "filename"},
		{"Ada", "People/Ada Lovelace.md", "alias"},
		{"slip box", "Ideas/Zettelkasten.md", "alias"},
		{"welcome to the demo vault", "Welcome.md", "title"},
		{"Projects/Project Atlas", "Projects/Project Atlas.md", "path"},
		{"projects/project atlas.md", "Projects/Project Atlas.md", "path"},
		{"Loci", "graph/pages/Loci.md", "filename"},
		{"graph/design", "graph/pages/graph___design.md", "title"},
		{"Nov 20th, 2026", "graph/journals/2026_11_20.md", "title"},
	}
	for _, c := range cases {
		out := opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"note": `+jsonString(c.note)+`}`)
		if out.Path != c.path || out.Match != c.match || out.Etag == "" || out.Content == "" {
			t.Errorf("read_note note=%q: path %s match %s", c.note, out.Path, out.Match)
		}
	}
	// A #heading in the wikilink selects the section.
	out := opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"note": "[[Project Atlas#Goals]]"}`)
	if !strings.HasPrefix(out.Content, "## Goals") || strings.Contains(out.Content, "## Milestones") {
		t.Errorf("wikilink heading: %q", out.Content)
	}
	// path keeps working, and reports no match reason.
	out = opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"path": "Ideas/Zettelkasten.md"}`)
	if out.Path != "Ideas/Zettelkasten.md" || out.Match != "" {
		t.Errorf("read by path: %+v", out)
	}

	opstest.WantCode(t, env, "read_note", `{}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "read_note", `{"path": "Welcome.md", "note": "Welcome"}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "read_note", `{"note": "[[]]"}`, errs.CodeInvalidInput)
	for _, p := range opstest.Traversal {
		opstest.WantCode(t, env, "read_note", `{"path": `+p+`}`, errs.CodePathDenied)
		opstest.WantCode(t, env, "read_note", `{"note": `+p+`}`, errs.CodePathDenied)
	}
	d := opstest.WantCode(t, env, "read_note", `{"note": "Zettel"}`, errs.CodeNotFound)
	if s, _ := d["suggestions"].([]any); len(s) == 0 || s[0] != "Ideas/Zettelkasten.md" {
		t.Errorf("not-found suggestions = %v", d)
	}
	d = opstest.WantCode(t, env, "read_note", `{"path": "Nope.md"}`, errs.CodeNotFound)
	if d["path"] != "Nope.md" {
		t.Errorf("not-found details = %v", d)
	}

	// A path-like reference to a file not indexed yet is still read from disk.
	root := env.Vaults[0].Vault.Root
	testutil.WriteFiles(t, root, map[string]string{"New/Fresh.md": "# Fresh\n"})
	out = opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"note": "New/Fresh.md"}`)
	if out.Content != "# Fresh\n" || out.Match != "path" {
		t.Errorf("fresh note: %+v", out)
	}
}

func jsonString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

func ambiguousVault(t *testing.T) *ops.Env {
	return opstest.FixtureEnv(t, map[string]string{
		"a/Ideas.md":  "# Ideas A\n",
		"b/Ideas.md":  "# Ideas B\n",
		"c/One.md":    "---\naliases: [Shared]\n---\n# One\n",
		"d/Two.md":    "---\naliases: [Shared]\n---\n# Two\n",
		"Root.md":     "---\nid: abc-1\n---\n# Root\n",
		"x/Root.md":   "# Another root\n",
		"Unique.md":   "---\ntitle: Spécial title\n---\nbody\n",
		"Logs/Log.md": "# Log\n",
		"Csharp.md":   "---\ntitle: C# notes\n---\n",
	})
}

func TestReadNoteAmbiguous(t *testing.T) {
	env := ambiguousVault(t)
	d := opstest.WantCode(t, env, "read_note", `{"note": "Ideas"}`, errs.CodeAmbiguous)
	cands, _ := d["candidates"].([]any)
	if len(cands) != 2 {
		t.Fatalf("candidates = %v", d)
	}
	if c, _ := cands[0].(map[string]any); c["path"] != "a/Ideas.md" || c["match"] != "filename" || c["title"] != "Ideas A" {
		t.Errorf("candidate = %v", cands[0])
	}
	opstest.WantCode(t, env, "read_note", `{"note": "[[Shared]]"}`, errs.CodeAmbiguous)
	// A folder-qualified name or an exact path is not ambiguous.
	if out := opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"note": "b/Ideas"}`); out.Path != "b/Ideas.md" {
		t.Errorf("b/Ideas → %s", out.Path)
	}
	if out := opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"note": "Root.md"}`); out.Path != "Root.md" || out.Match != "path" {
		t.Errorf("Root.md → %s (%s)", out.Path, out.Match)
	}
	if out := opstest.Call[read.ReadNoteOut](t, env, "read_note", `{"note": "abc-1"}`); out.Path != "Root.md" || out.Match != "id" {
		t.Errorf("id abc-1 → %s (%s)", out.Path, out.Match)
	}
}

func TestResolveNote(t *testing.T) {
	env := ambiguousVault(t)
	out := opstest.Call[read.ResolveNoteOut](t, env, "resolve_note", `{"note": "Ideas"}`)
	if !out.Ambiguous || out.Resolved != "" || len(out.Candidates) != 2 || out.Candidates[1].Path != "b/Ideas.md" {
		t.Errorf("ambiguous = %+v", out)
	}
	out = opstest.Call[read.ResolveNoteOut](t, env, "resolve_note", `{"note": "Nothing like it"}`)
	if out.Ambiguous || out.Resolved != "" || out.Candidates == nil || len(out.Candidates) != 0 {
		t.Errorf("none = %+v", out)
	}
	out = opstest.Call[read.ResolveNoteOut](t, env, "resolve_note", `{"note": "spécial TITLE"}`)
	if out.Resolved != "Unique.md" || out.Candidates[0].Match != "title" || out.Candidates[0].Title != "Spécial title" || out.Candidates[0].Kind != "note" {
		t.Errorf("title = %+v", out)
	}
	// "Root" is both an exact path (Root.md) and a file name elsewhere: the exact path wins.
	out = opstest.Call[read.ResolveNoteOut](t, env, "resolve_note", `{"note": "Root"}`)
	if out.Resolved != "Root.md" || len(out.Candidates) != 2 || out.Candidates[0].Match != "path" {
		t.Errorf("exact path = %+v", out)
	}
	out = opstest.Call[read.ResolveNoteOut](t, env, "resolve_note", `{"note": "c# Notes"}`)
	if out.Resolved != "Csharp.md" {
		t.Errorf("title with # = %+v", out)
	}
	out = opstest.Call[read.ResolveNoteOut](t, env, "resolve_note", `{"note": "Log#Heading"}`)
	if out.Resolved != "Logs/Log.md" {
		t.Errorf("bare wikilink text = %+v", out)
	}
	out = opstest.Call[read.ResolveNoteOut](t, env, "resolve_note", `{"note": "[[Log#Heading]]"}`)
	if out.Resolved != "Logs/Log.md" {
		t.Errorf("wikilink = %+v", out)
	}

	demo := opstest.DemoEnv(t)
	out = opstest.Call[read.ResolveNoteOut](t, demo, "resolve_note", `{"note": "[[Ada]]"}`)
	if out.Resolved != "People/Ada Lovelace.md" || out.Candidates[0].Match != "alias" || out.Candidates[0].Title != "Ada Lovelace" {
		t.Errorf("alias = %+v", out)
	}
	out = opstest.Call[read.ResolveNoteOut](t, demo, "resolve_note", `{"note": "loci engine"}`)
	if out.Resolved != "graph/pages/Loci.md" || out.Candidates[0].Kind != "page" {
		t.Errorf("logseq alias = %+v", out)
	}
	opstest.WantCode(t, demo, "resolve_note", `{}`, errs.CodeInvalidInput)
	opstest.WantCode(t, demo, "resolve_note", `{"note": " "}`, errs.CodeInvalidInput)
	for _, p := range opstest.Traversal {
		opstest.WantCode(t, demo, "resolve_note", `{"note": `+p+`}`, errs.CodePathDenied)
	}
}

func TestGetLinksDepth(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[read.GetLinksOut](t, env, "get_links", `{"path": "Projects/Project Atlas.md"}`)
	if len(out.Backlinks) != 4 || len(out.TypedOut) != 4 || out.Neighbors != nil {
		t.Fatalf("depth 1 = %d backlinks, %d typed, neighbors %v", len(out.Backlinks), len(out.TypedOut), out.Neighbors)
	}
	out = opstest.Call[read.GetLinksOut](t, env, "get_links", `{"note": "20261101093000", "depth": 2}`)
	if out.Path != "Projects/Project Atlas.md" || len(out.Backlinks) != 4 || out.NeighborsTruncated {
		t.Fatalf("depth 2 = %+v", out)
	}
	byPath := map[string]index.Neighbor{}
	last := index.Neighbor{Distance: 1}
	for _, n := range out.Neighbors {
		if n.Path == out.Path {
			t.Errorf("the starting note is its own neighbor")
		}
		if _, dup := byPath[n.Path]; dup {
			t.Errorf("%s listed twice", n.Path)
		}
		byPath[n.Path] = n
		if n.Distance < last.Distance || (n.Distance == last.Distance && n.Path < last.Path) || n.Distance > 2 {
			t.Errorf("order: %+v after %+v", n, last)
		}
		last = n
	}
	if n := byPath["People/Ada Lovelace.md"]; n.Distance != 1 || n.Via != "Projects/Project Atlas.md" || n.Direction != "out" || n.Kind != "typed" || n.Key != "owner" {
		t.Errorf("Ada = %+v", n)
	}
	if n := byPath["Welcome.md"]; n.Distance != 1 || n.Direction != "in" {
		t.Errorf("Welcome = %+v", n)
	}
	if n := byPath["Ideas/Spaced repetition.md"]; n.Distance != 2 {
		t.Errorf("Spaced repetition = %+v", n)
	}
	if n := byPath["graph/pages/graph___design.md"]; n.Distance != 2 || n.Via != "graph/pages/Loci.md" {
		t.Errorf("graph/design = %+v", n)
	}

	small := opstest.Call[read.GetLinksOut](t, env, "get_links", `{"path": "Projects/Project Atlas.md", "depth": 3, "limit": 3}`)
	if len(small.Neighbors) != 3 || !small.NeighborsTruncated || small.Neighbors[0].Path != out.Neighbors[0].Path {
		t.Errorf("limit 3 = %+v", small.Neighbors)
	}
	// An isolated note has no neighbors, and an empty (not null) list.
	iso := opstest.Call[read.GetLinksOut](t, env, "get_links", `{"path": "Notes/Café culture.md", "depth": 2}`)
	if iso.Neighbors == nil || len(iso.Neighbors) != 0 || iso.NeighborsTruncated {
		t.Errorf("isolated = %+v", iso.Neighbors)
	}

	for _, in := range []string{`{}`, `{"path": "Welcome.md", "depth": 4}`, `{"path": "Welcome.md", "depth": -1}`,
		`{"path": "Welcome.md", "limit": 501}`, `{"path": "Welcome.md", "note": "Welcome"}`} {
		opstest.WantCode(t, env, "get_links", in, errs.CodeInvalidInput)
	}
	for _, p := range opstest.Traversal {
		opstest.WantCode(t, env, "get_links", `{"path": `+p+`}`, errs.CodePathDenied)
	}
	opstest.WantCode(t, env, "get_links", `{"path": "Nope.md"}`, errs.CodeNotFound)
	opstest.WantCode(t, env, "get_links", `{"note": "Nope"}`, errs.CodeNotFound)
}

func TestFindBrokenLinks(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[read.FindBrokenLinksOut](t, env, "find_broken_links", `{}`)
	got := opstest.Paths(out.Sources, func(s read.BrokenSource) string { return s.Path })
	want := []string{"Inbox/Unsorted.md", "Meetings/2026-11-02 Atlas kickoff.md", "graph/pages/Loci.md"}
	if !slices.Equal(got, want) || out.Total != 3 || out.TotalSources != 3 || out.NextCursor != "" {
		t.Fatalf("broken = %+v", out)
	}
	if l := out.Sources[0].Links[0]; l.Target != "Nonexistent note" || l.Line != 2 || l.Kind != "wikilink" || out.Sources[0].Title != "Unsorted" {
		t.Errorf("first = %+v", l)
	}
	if l := out.Sources[2].Links[0]; l.Target != "Tool" || l.Kind != "typed" || l.Key != "type" {
		t.Errorf("typed = %+v", l)
	}

	out = opstest.Call[read.FindBrokenLinksOut](t, env, "find_broken_links", `{"path_glob": "Meetings/**"}`)
	if out.Total != 1 || out.Sources[0].Links[0].Target != "Missing design doc" || out.Sources[0].Links[0].Line != 17 {
		t.Errorf("glob = %+v", out)
	}

	// Page through one link at a time.
	var all []string
	cursor := ""
	for i := 0; i < 10; i++ {
		pg := opstest.Call[read.FindBrokenLinksOut](t, env, "find_broken_links", `{"limit": 1, "cursor": "`+cursor+`"}`)
		if pg.Total != 3 || len(pg.Sources) != 1 {
			t.Fatalf("page %d = %+v", i, pg)
		}
		all = append(all, pg.Sources[0].Links[0].Target)
		if cursor = pg.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(all, []string{"Nonexistent note", "Missing design doc", "Tool"}) {
		t.Errorf("pages = %v", all)
	}

	for _, in := range []string{`{"cursor": "!!"}`, `{"path_glob": "[bad"}`, `{"limit": 1001}`, `{"limit": -1}`} {
		opstest.WantCode(t, env, "find_broken_links", in, errs.CodeInvalidInput)
	}

	// Attachments and links into the same note are not broken.
	fx := opstest.FixtureEnv(t, map[string]string{
		"a.md": "![[diagram.png]] [[#Local heading]] [[gone]] [x](missing.md) [[b]]\n\n# Local heading\n",
		"b.md": "[[a]]\n",
	})
	out = opstest.Call[read.FindBrokenLinksOut](t, fx, "find_broken_links", `{}`)
	got = opstest.Paths(out.Sources[0].Links, func(l index.BrokenLink) string { return l.Target })
	if out.Total != 2 || !slices.Equal(got, []string{"gone", "missing.md"}) {
		t.Errorf("fixture broken = %v (%+v)", got, out)
	}
}

func TestListFrontmatterKeys(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[read.ListFrontmatterKeysOut](t, env, "list_frontmatter_keys", `{}`)
	if len(out.Keys) == 0 || out.Keys[0].Key != "tags" || out.Keys[0].Notes != 11 || !slices.Equal(out.Keys[0].Types, []string{"list", "string"}) || out.Truncated {
		t.Fatalf("keys = %+v", out.Keys)
	}
	if out.TotalKeys != len(out.Keys) || out.Values != nil || out.Key != "" {
		t.Errorf("keys mode = %+v", out)
	}
	for i := 1; i < len(out.Keys); i++ {
		a, b := out.Keys[i-1], out.Keys[i]
		if a.Notes < b.Notes || (a.Notes == b.Notes && a.Key > b.Key) {
			t.Errorf("order: %v before %v", a, b)
		}
	}
	out = opstest.Call[read.ListFrontmatterKeysOut](t, env, "list_frontmatter_keys", `{"limit": 2}`)
	if len(out.Keys) != 2 || !out.Truncated || out.TotalKeys <= 2 {
		t.Errorf("limit 2 = %+v", out)
	}

	out = opstest.Call[read.ListFrontmatterKeysOut](t, env, "list_frontmatter_keys", `{"key": "tags"}`)
	if out.Key != "tags" || out.Notes != 11 || out.Values[0].Value != "learning" || out.Values[0].Notes != 2 || out.Keys != nil {
		t.Errorf("values = %+v", out)
	}
	out = opstest.Call[read.ListFrontmatterKeysOut](t, env, "list_frontmatter_keys", `{"key": "related"}`)
	vals := opstest.Paths(out.Values, func(v index.ValueCount) string { return v.Value })
	if !slices.Equal(vals, []string{"[[Zettelkasten]]", "[[How to Take Smart Notes]]"}) || out.Values[0].Notes != 2 {
		t.Errorf("related = %+v", out.Values)
	}
	out = opstest.Call[read.ListFrontmatterKeysOut](t, env, "list_frontmatter_keys", `{"key": "Status"}`)
	if out.Values == nil || len(out.Values) != 0 || !slices.Equal(out.Suggestions, []string{"status"}) {
		t.Errorf("unknown key = %+v", out)
	}
	opstest.WantCode(t, env, "list_frontmatter_keys", `{"limit": 5000}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "list_frontmatter_keys", `{"key": 1}`, errs.CodeInvalidInput)
}

func TestGetVaultTree(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[read.TreeOut](t, env, "get_vault_tree", `{}`)
	if out.NoteCount != 16 || out.Truncated || out.Path != "" {
		t.Fatalf("tree = %+v", out)
	}
	byPath := map[string]read.TreeEntry{}
	var order []string
	for _, e := range out.Entries {
		byPath[e.Path] = e
		order = append(order, e.Path)
		if e.Depth > 2 {
			t.Errorf("entry deeper than 2: %+v", e)
		}
	}
	if e := byPath["graph"]; e.Type != "folder" || e.NoteCount != 3 || e.Depth != 1 {
		t.Errorf("graph = %+v", e)
	}
	if e := byPath["graph/pages"]; e.NoteCount != 2 || e.Depth != 2 {
		t.Errorf("graph/pages = %+v", e)
	}
	if _, ok := byPath["graph/pages/Loci.md"]; ok {
		t.Errorf("notes at depth 3 are listed")
	}
	if e := byPath["Welcome.md"]; e.Type != "note" || e.Title != "Welcome to the demo vault" || e.Depth != 1 {
		t.Errorf("Welcome = %+v", e)
	}
	if e := byPath["Ideas/Zettelkasten.md"]; e.Title != "" || e.Depth != 2 {
		t.Errorf("Zettelkasten = %+v", e)
	}
	// Depth-first: a folder's children follow it; the root's notes come after its folders.
	i := slices.Index(order, "Ideas")
	if i < 0 || order[i+1] != "Ideas/Spaced repetition.md" || order[len(order)-1] != "Welcome.md" {
		t.Errorf("order = %v", order)
	}

	out = opstest.Call[read.TreeOut](t, env, "get_vault_tree", `{"depth": 1}`)
	for _, e := range out.Entries {
		if e.Type == "note" && e.Path != "Welcome.md" {
			t.Errorf("depth 1 lists %s", e.Path)
		}
	}
	out = opstest.Call[read.TreeOut](t, env, "get_vault_tree", `{"path": "GRAPH/", "depth": 5}`)
	got := opstest.Paths(out.Entries, func(e read.TreeEntry) string { return e.Path })
	want := []string{"graph/journals", "graph/journals/2026_11_20.md", "graph/pages", "graph/pages/graph___design.md", "graph/pages/Loci.md"}
	if out.Path != "graph" || out.NoteCount != 3 || !slices.Equal(got, want) {
		t.Errorf("graph subtree = %s %d %v", out.Path, out.NoteCount, got)
	}
	out = opstest.Call[read.TreeOut](t, env, "get_vault_tree", `{"limit": 3}`)
	if len(out.Entries) != 3 || !out.Truncated {
		t.Errorf("limit 3 = %+v", out)
	}

	d := opstest.WantCode(t, env, "get_vault_tree", `{"path": "Nope"}`, errs.CodeNotFound)
	if f, _ := d["folders"].([]any); len(f) == 0 {
		t.Errorf("not-found details = %v", d)
	}
	for _, p := range opstest.Traversal {
		opstest.WantCode(t, env, "get_vault_tree", `{"path": `+p+`}`, errs.CodePathDenied)
	}
	for _, in := range []string{`{"depth": 21}`, `{"limit": 5001}`, `{"depth": "2"}`} {
		opstest.WantCode(t, env, "get_vault_tree", in, errs.CodeInvalidInput)
	}
}

func TestFrontmatterValidate(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"good.md":     "---\nid: 20240102030405\ncreated: 2024-01-02\nstatus: done\ntags: [a]\ncount: 3\ndone: true\n---\n# Good\n",
		"mismatch.md": "---\nid: 202402010900\ncreated: 2024-02-02T08:00:00\nstatus: draft\n---\n",
		"badyaml.md":  "---\ntitle: [unclosed\n---\n# Bad\n",
		"types.md":    "---\ncreated: soon\ntags: x\ncount: \"3\"\ndone: yes please\nstatus: \"\"\n---\n",
		"plain.md":    "no frontmatter\n",
		"sub/deep.md": "---\nid: not-a-timestamp\ncreated: 2020-01-01\nstatus: ok\n---\n",
	})
	in := `{"required": ["status"], "types": {"created": "date", "tags": "list", "count": "number", "done": "boolean"}}`
	out := opstest.Call[read.ValidateOut](t, env, "frontmatter_validate", in)
	type k struct{ path, key, rule string }
	var got []k
	for _, is := range out.Issues {
		got = append(got, k{is.Path, is.Key, is.Rule})
		if is.Message == "" {
			t.Errorf("issue without message: %+v", is)
		}
	}
	want := []k{
		{"badyaml.md", "", "yaml"},
		{"mismatch.md", "id", "id_created"},
		{"plain.md", "status", "required"},
		{"types.md", "status", "required"},
		{"types.md", "count", "type"},
		{"types.md", "created", "type"},
		{"types.md", "done", "type"},
		{"types.md", "tags", "type"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("issues:\n got %v\nwant %v", got, want)
	}
	if out.Checked != 6 || out.NotesWithIssues != 4 || out.Total != 8 ||
		out.Counts["yaml"] != 1 || out.Counts["required"] != 2 || out.Counts["id_created"] != 1 || out.Counts["type"] != 4 {
		t.Errorf("counts = %+v", out)
	}
	if m := out.Issues[1].Message; !strings.Contains(m, "2024-02-01") || !strings.Contains(m, "2024-02-02") {
		t.Errorf("id_created message = %q", m)
	}

	// Pagination, a glob, explicit paths.
	pg := opstest.Call[read.ValidateOut](t, env, "frontmatter_validate", `{"required": ["status"], "limit": 2}`)
	if len(pg.Issues) != 2 || pg.NextCursor == "" || pg.Total != 4 {
		t.Errorf("page 1 = %+v", pg)
	}
	pg = opstest.Call[read.ValidateOut](t, env, "frontmatter_validate", `{"required": ["status"], "limit": 2, "cursor": "`+pg.NextCursor+`"}`)
	if len(pg.Issues) != 2 || pg.NextCursor != "" {
		t.Errorf("page 2 = %+v", pg)
	}
	out = opstest.Call[read.ValidateOut](t, env, "frontmatter_validate", `{"path_glob": "sub/**", "required": ["status"]}`)
	if out.Checked != 1 || out.Total != 0 || out.Issues == nil {
		t.Errorf("glob = %+v", out)
	}
	out = opstest.Call[read.ValidateOut](t, env, "frontmatter_validate", `{"paths": ["good.md", "./Mismatch.md"]}`)
	if out.Checked != 2 || out.Total != 1 || out.Issues[0].Path != "mismatch.md" {
		t.Errorf("paths = %+v", out)
	}

	opstest.WantCode(t, env, "frontmatter_validate", `{"paths": ["nope.md"]}`, errs.CodeNotFound)
	for _, p := range opstest.Traversal {
		opstest.WantCode(t, env, "frontmatter_validate", `{"paths": [`+p+`]}`, errs.CodePathDenied)
	}
	for _, in := range []string{`{"paths": ["a.md"], "path_glob": "**"}`, `{"types": {"x": "uuid"}}`, `{"required": [""]}`,
		`{"limit": 0, "cursor": "nope"}`, `{"path_glob": "[x"}`, `{"types": {"x": 1}}`} {
		opstest.WantCode(t, env, "frontmatter_validate", in, errs.CodeInvalidInput)
	}

	// The demo vault: only its broken frontmatter, and Project Atlas' id agrees with created.
	demo := opstest.DemoEnv(t)
	out = opstest.Call[read.ValidateOut](t, demo, "frontmatter_validate", `{}`)
	if out.Checked != 16 || out.Total != 1 || out.Issues[0].Path != "Inbox/Broken frontmatter.md" || out.Issues[0].Rule != "yaml" {
		t.Errorf("demo = %+v", out)
	}
}

func TestSuggestTypedLinks(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[read.SuggestTypedLinksOut](t, env, "suggest_typed_links", `{"note": "Welcome"}`)
	by := map[string]read.LinkSuggestion{}
	for _, s := range out.Suggestions {
		if s.Source != "Welcome.md" {
			t.Errorf("source %s", s.Source)
		}
		by[s.Resolved] = s
	}
	if s := by["People/Ada Lovelace.md"]; s.Target != "Ada Lovelace" || s.Line != 10 || s.Reason != "target" || s.Evidence != 1 ||
		(s.Key != "owner" && s.Key != "attendees") || s.Value != "[[Ada Lovelace]]" || s.Title != "Ada Lovelace" {
		t.Errorf("Ada = %+v", s)
	}
	if s := by["Ideas/Spaced repetition.md"]; s.Key != "related" || s.Reason != "folder" || s.Evidence != 2 {
		t.Errorf("Spaced repetition = %+v", s)
	}
	if s := by["Projects/Project Atlas.md"]; s.Key != "related" || s.Reason != "default" || s.Evidence != 0 {
		t.Errorf("Project Atlas = %+v", s)
	}
	if s := by["graph/pages/Loci.md"]; s.Value != "[[Loci]]" {
		t.Errorf("Loci = %+v", s)
	}
	if _, ok := by["Ideas/Zettelkasten.md"]; ok {
		t.Errorf("an embed was suggested")
	}

	// Targets already typed are not suggested.
	out = opstest.Call[read.SuggestTypedLinksOut](t, env, "suggest_typed_links", `{"path": "Projects/Project Atlas.md"}`)
	if len(out.Suggestions) != 1 || out.Suggestions[0].Resolved != "Meetings/2026-11-02 Atlas kickoff.md" {
		t.Errorf("Atlas = %+v", out.Suggestions)
	}
	// A Markdown link gets a wikilink value.
	out = opstest.Call[read.SuggestTypedLinksOut](t, env, "suggest_typed_links", `{"path_glob": "Inbox/**"}`)
	if s := out.Suggestions; len(s) != 2 || s[1].Target != "../Ideas/Zettelkasten.md" || s[1].Value != "[[Zettelkasten]]" || s[1].Key != "related" || s[1].Reason != "target" {
		t.Errorf("Inbox = %+v", s)
	}
	all := opstest.Call[read.SuggestTypedLinksOut](t, env, "suggest_typed_links", `{"path_glob": "**", "limit": 2}`)
	if len(all.Suggestions) != 2 || all.NextCursor == "" || all.Total < 10 {
		t.Errorf("all = %+v", all)
	}

	// The folder of the target decides when the target itself has no typed links.
	fx := opstest.FixtureEnv(t, map[string]string{
		"People/A.md":   "# A\n",
		"People/B.md":   "# B\n",
		"People/C.md":   "# C\n",
		"x.md":          "---\nowner: \"[[A]]\"\n---\n",
		"y.md":          "---\nmentor: \"[[C]]\"\nreviewer: \"[[C]]\"\n---\n",
		"Notes/Note.md": "Talked to [[B]] and [[C]], then [[Nobody]]. [[B]] again.\n",
	})
	out = opstest.Call[read.SuggestTypedLinksOut](t, fx, "suggest_typed_links", `{"note": "Note"}`)
	got := opstest.Paths(out.Suggestions, func(s read.LinkSuggestion) string { return s.Resolved + "=" + s.Key + "/" + s.Reason })
	// B: folder People has owner×1, mentor×1, reviewer×1 → alphabetical tie-break; C: its own typed links tie → mentor.
	if !slices.Equal(got, []string{"People/B.md=mentor/folder", "People/C.md=mentor/target"}) {
		t.Errorf("fixture = %v", got)
	}

	for _, in := range []string{`{}`, `{"path": "x.md", "path_glob": "**"}`, `{"note": "a", "path": "x.md"}`, `{"path_glob": "[x"}`, `{"path_glob": "**", "limit": 501}`} {
		opstest.WantCode(t, env, "suggest_typed_links", in, errs.CodeInvalidInput)
	}
	for _, p := range opstest.Traversal {
		opstest.WantCode(t, env, "suggest_typed_links", `{"path": `+p+`}`, errs.CodePathDenied)
	}
	opstest.WantCode(t, env, "suggest_typed_links", `{"note": "Nope"}`, errs.CodeNotFound)
}

func TestRecentNotes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, root, map[string]string{
		"old.md":        "# Old\n",
		"new.md":        "# New\n",
		"fm.md":         "---\nupdated: 2031-05-01\n---\n# Front\n",
		"Daily/day.md":  "# Day\n",
		"fm-bad.md":     "---\nupdated: next week\n---\n",
		"Daily/same.md": "# Same\n",
	})
	base := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for p, d := range map[string]int{"old.md": -300, "new.md": 10, "fm.md": -100, "Daily/day.md": 5, "fm-bad.md": -200, "Daily/same.md": 5} {
		ts := base.AddDate(0, 0, d)
		if err := os.Chtimes(filepath.Join(root, p), ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	env := opstest.OpenEnv(t, root)
	out := opstest.Call[read.RecentNotesOut](t, env, "recent_notes", `{}`)
	got := opstest.Paths(out.Notes, func(n read.RecentNote) string { return n.Path })
	want := []string{"new.md", "Daily/day.md", "Daily/same.md", "fm.md", "fm-bad.md", "old.md"}
	if !slices.Equal(got, want) || out.By != "mtime" || out.Total != 6 {
		t.Errorf("by mtime = %v", got)
	}
	if n := out.Notes[0]; n.Modified != "2030-01-11T12:00:00Z" || n.Title != "New" {
		t.Errorf("new = %+v", n)
	}
	out = opstest.Call[read.RecentNotesOut](t, env, "recent_notes", `{"by": "updated", "limit": 2}`)
	got = opstest.Paths(out.Notes, func(n read.RecentNote) string { return n.Path })
	if !slices.Equal(got, []string{"fm.md", "new.md"}) || out.Notes[0].Updated != "2031-05-01" || out.NextCursor == "" {
		t.Errorf("by updated = %v", out)
	}
	out = opstest.Call[read.RecentNotesOut](t, env, "recent_notes", `{"by": "updated", "limit": 2, "cursor": "`+out.NextCursor+`"}`)
	if got = opstest.Paths(out.Notes, func(n read.RecentNote) string { return n.Path }); !slices.Equal(got, []string{"Daily/day.md", "Daily/same.md"}) {
		t.Errorf("page 2 = %v", got)
	}
	out = opstest.Call[read.RecentNotesOut](t, env, "recent_notes", `{"since": "2030-01-01"}`)
	if got = opstest.Paths(out.Notes, func(n read.RecentNote) string { return n.Path }); !slices.Equal(got, []string{"new.md", "Daily/day.md", "Daily/same.md"}) {
		t.Errorf("since = %v", got)
	}
	out = opstest.Call[read.RecentNotesOut](t, env, "recent_notes", `{"path_glob": "Daily/**", "since": "2030-01-06T12:00:00Z"}`)
	if out.Total != 2 {
		t.Errorf("glob = %+v", out)
	}
	for _, in := range []string{`{"by": "size"}`, `{"since": "yesterday"}`, `{"limit": 201}`, `{"path_glob": "[x"}`, `{"cursor": "x"}`} {
		opstest.WantCode(t, env, "recent_notes", in, errs.CodeInvalidInput)
	}
}

func TestIndexStatusSync(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[read.IndexStatusOut](t, env, "index_status", `{}`)
	if out.Notes != 16 || out.Sync.Running || out.Sync.LastSyncAt.IsZero() || out.Sync.LastError != "" || out.Vaults != nil {
		t.Errorf("status = %+v", out)
	}
	if len(out.FrontmatterIssue) != 1 {
		t.Errorf("frontmatter errors = %v", out.FrontmatterIssue)
	}

	// Two vaults: both are listed, and vault picks one.
	second := opstest.FixtureEnv(t, map[string]string{"only.md": "# Only\n"})
	env.Vaults = append(env.Vaults, second.Vaults[0])
	out = opstest.Call[read.IndexStatusOut](t, env, "index_status", `{}`)
	if len(out.Vaults) != 2 || !out.Vaults[0].Default || out.Vaults[1].Default || out.Vaults[1].Name != "vault" || out.Vaults[0].Kind != "obsidian" {
		t.Errorf("vaults = %+v", out.Vaults)
	}
	out = opstest.Call[read.IndexStatusOut](t, env, "index_status", `{"vault": "vault"}`)
	if out.Notes != 1 {
		t.Errorf("second vault = %+v", out)
	}
	d := opstest.WantCode(t, env, "index_status", `{"vault": "nope"}`, errs.CodeVaultNotFound)
	if v, _ := d["vaults"].([]any); len(v) != 2 {
		t.Errorf("vault_not_found details = %v", d)
	}
}

func TestOpsAreCancellable(t *testing.T) {
	env := opstest.DemoEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, op := range opstest.Reg.List() {
		if op.Example == "" {
			continue
		}
		res := opstest.Reg.Call(ctx, env, ops.Caller{Surface: "test"}, op.Name, []byte(op.Example))
		if res.Err != nil && res.Err.Code != "cancelled" && !slices.Contains(op.Errors, res.Err.Code) {
			t.Errorf("%s under a cancelled context: %s %s", op.Name, res.Err.Code, res.Err.Message)
		}
	}
}
