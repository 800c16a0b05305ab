package logseq_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops/logseq"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/testutil"
)

const lociUUID = "6745a1b2-0000-4000-8000-000000000001"

func TestListPages(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[logseq.ListPagesOut](t, env, "list_pages", `{}`)
	names := opstest.Paths(out.Pages, func(p index.PageInfo) string { return p.Name })
	if !slices.Equal(names, []string{"graph/design", "Loci"}) || out.Total != 2 || out.NextCursor != "" {
		t.Fatalf("pages = %v", out)
	}
	if p := out.Pages[1]; p.Path != "graph/pages/Loci.md" || p.Kind != "page" || p.Blocks != 7 || !slices.Equal(p.Aliases, []string{"loci engine"}) {
		t.Errorf("Loci = %+v", p)
	}
	out = opstest.Call[logseq.ListPagesOut](t, env, "list_pages", `{"include_journals": true}`)
	if names = opstest.Paths(out.Pages, func(p index.PageInfo) string { return p.Name }); !slices.Equal(names, []string{"graph/design", "Loci", "Nov 20th, 2026"}) || out.Pages[2].Kind != "journal" {
		t.Errorf("with journals = %v", names)
	}
	out = opstest.Call[logseq.ListPagesOut](t, env, "list_pages", `{"namespace": "GRAPH/"}`)
	if len(out.Pages) != 1 || out.Pages[0].Name != "graph/design" {
		t.Errorf("namespace = %+v", out)
	}
	out = opstest.Call[logseq.ListPagesOut](t, env, "list_pages", `{"limit": 1}`)
	if len(out.Pages) != 1 || out.NextCursor == "" || out.Total != 2 {
		t.Fatalf("limit 1 = %+v", out)
	}
	out = opstest.Call[logseq.ListPagesOut](t, env, "list_pages", `{"limit": 1, "cursor": "`+out.NextCursor+`"}`)
	if len(out.Pages) != 1 || out.Pages[0].Name != "Loci" || out.NextCursor != "" {
		t.Errorf("page 2 = %+v", out)
	}
	for _, in := range []string{`{"limit": 1001}`, `{"cursor": "%%"}`, `{"include_journals": "yes"}`} {
		opstest.WantCode(t, env, "list_pages", in, errs.CodeInvalidInput)
	}
}

func TestLogseqOpsNeedAGraph(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{"a.md": "- looks like an outline\n  id:: " + lociUUID + "\n"})
	opstest.WantCode(t, env, "list_pages", `{}`, errs.CodeNotLogseqGraph)
	opstest.WantCode(t, env, "get_page", `{"name": "a"}`, errs.CodeNotLogseqGraph)
	opstest.WantCode(t, env, "get_block", `{"uuid": "`+lociUUID+`"}`, errs.CodeNotLogseqGraph)
}

func TestGetPage(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name": "loci"}`)
	if out.Name != "Loci" || out.Path != "graph/pages/Loci.md" || out.Kind != "page" || out.BlockCount != 7 || len(out.Blocks) != 3 ||
		!slices.Equal(out.Aliases, []string{"loci engine"}) || out.Properties["type"] != "[[Tool]]" || !slices.Contains(out.Tags, "software") {
		t.Fatalf("page = %+v", out)
	}
	first := out.Blocks[0]
	if first.UUID != lociUUID || first.Content != "Loci indexes Logseq graphs as outlines" || first.Line != 5 || first.Properties != nil || len(first.Children) != 2 {
		t.Errorf("first block = %+v", first)
	}
	if c := first.Children[1]; c.Properties["status"] != "stable" || c.Line != 8 || c.Children != nil {
		t.Errorf("nested block = %+v", c)
	}
	if b := out.Blocks[2]; !strings.HasPrefix(b.Content, "TODO Try a namespace page") || b.Line != 13 {
		t.Errorf("last block = %+v", b)
	}

	out = opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name": "loci engine", "depth": 1}`)
	if out.Match != "alias" || out.Blocks[0].Children != nil || out.Blocks[0].MoreChildren != 2 || out.Blocks[2].MoreChildren != 0 {
		t.Errorf("depth 1 = %+v", out.Blocks)
	}
	for name, path := range map[string]string{
		`{"name": "graph/design"}`:                 "graph/pages/graph___design.md",
		`{"name": "[[graph/design]]"}`:             "graph/pages/graph___design.md",
		`{"name": "2026-11-20"}`:                   "graph/journals/2026_11_20.md",
		`{"name": "Nov 20th, 2026"}`:               "graph/journals/2026_11_20.md",
		`{"path": "graph/pages/Loci.md"}`:          "graph/pages/Loci.md",
		`{"path": "graph/journals/2026_11_20.md"}`: "graph/journals/2026_11_20.md",
	} {
		if out := opstest.Call[logseq.GetPageOut](t, env, "get_page", name); out.Path != path {
			t.Errorf("%s → %s", name, out.Path)
		}
	}
	j := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name": "2026-11-20"}`)
	if j.Kind != "journal" || len(j.Blocks) != 1 || len(j.Blocks[0].Children) != 2 {
		t.Errorf("journal = %+v", j)
	}

	d := opstest.WantCode(t, env, "get_page", `{"name": "Welcome"}`, errs.CodeNotFound)
	if n, _ := d["notes"].([]any); len(n) != 1 || n[0] != "Welcome.md" {
		t.Errorf("regular note details = %v", d)
	}
	d = opstest.WantCode(t, env, "get_page", `{"name": "design"}`, errs.CodeNotFound)
	if s, _ := d["suggestions"].([]any); len(s) != 1 || s[0] != "graph/design" {
		t.Errorf("suggestions = %v", d)
	}
	opstest.WantCode(t, env, "get_page", `{"path": "Welcome.md"}`, errs.CodeNotLogseqGraph)
	opstest.WantCode(t, env, "get_page", `{"path": "graph/pages/Nope.md"}`, errs.CodeNotFound)
	for _, in := range []string{`{}`, `{"name": " "}`, `{"name": "Loci", "path": "graph/pages/Loci.md"}`, `{"name": "Loci", "depth": 101}`} {
		opstest.WantCode(t, env, "get_page", in, errs.CodeInvalidInput)
	}
	for _, p := range opstest.Traversal {
		opstest.WantCode(t, env, "get_page", `{"path": `+p+`}`, errs.CodePathDenied)
		opstest.WantCode(t, env, "get_page", `{"name": `+p+`}`, errs.CodePathDenied)
	}
}

func TestGetBlock(t *testing.T) {
	env := opstest.DemoEnv(t)
	for _, id := range []string{lociUUID, "((" + lociUUID + "))", strings.ToUpper(lociUUID)} {
		out := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid": "`+id+`"}`)
		if out.UUID != lociUUID || out.Page != "graph/pages/Loci.md" || out.PageName != "Loci" || out.Line != 5 || out.EndLine != 6 ||
			len(out.Parents) != 0 || len(out.Children) != 2 || out.Properties != nil {
			t.Errorf("block %s = %+v", id, out)
		}
		refs := opstest.Paths(out.ReferencedBy, func(r index.BlockRef) string { return r.Path })
		if !slices.Equal(refs, []string{"graph/journals/2026_11_20.md", "graph/pages/Loci.md"}) || out.ReferencedBy[0].Line != 3 {
			t.Errorf("referenced_by = %+v", out.ReferencedBy)
		}
	}
	opstest.WantCode(t, env, "get_block", `{"uuid": "6745a1b2-0000-4000-8000-00000000ffff"}`, errs.CodeBlockNotFound)
	for _, in := range []string{`{}`, `{"uuid": "xyz"}`, `{"uuid": "../6745a1b2"}`, `{"uuid": "` + lociUUID + `", "depth": -1}`} {
		opstest.WantCode(t, env, "get_block", in, errs.CodeInvalidInput)
	}

	// Parents and depth on a deeper outline.
	fx := opstest.FixtureEnv(t, map[string]string{
		"g/logseq/config.edn": "{}\n",
		"g/pages/Deep.md": "- root block\n  id:: 00000000-0000-4000-8000-000000000001\n" +
			"\t- middle block\n" +
			"\t\t- target block\n\t\t  id:: 00000000-0000-4000-8000-000000000002\n\t\t  kind:: demo\n" +
			"\t\t\t- child one\n\t\t\t\t- grandchild\n\t\t\t- child two\n",
		"g/journals/2026_01_02.md": "- see ((00000000-0000-4000-8000-000000000002))\n",
	})
	out := opstest.Call[logseq.GetBlockOut](t, fx, "get_block", `{"uuid": "00000000-0000-4000-8000-000000000002", "depth": 1}`)
	if out.Content != "target block" || out.Properties["kind"] != "demo" || len(out.Parents) != 2 ||
		out.Parents[0].UUID != "00000000-0000-4000-8000-000000000001" || out.Parents[0].Content != "root block" || out.Parents[1].Content != "middle block" || out.Parents[1].UUID != "" {
		t.Errorf("deep block = %+v", out)
	}
	if len(out.Children) != 2 || out.Children[0].Content != "child one" || out.Children[0].MoreChildren != 1 || out.Children[0].Children != nil {
		t.Errorf("depth 1 children = %+v", out.Children)
	}
	if len(out.ReferencedBy) != 1 || out.ReferencedBy[0].Path != "g/journals/2026_01_02.md" {
		t.Errorf("referenced_by = %+v", out.ReferencedBy)
	}
	out = opstest.Call[logseq.GetBlockOut](t, fx, "get_block", `{"uuid": "00000000-0000-4000-8000-000000000002"}`)
	if len(out.Children[0].Children) != 1 || out.Children[0].Children[0].Content != "grandchild" {
		t.Errorf("all levels = %+v", out.Children)
	}
}

func TestLogseqDocsCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus test")
	}
	root := testutil.Corpus(t, "logseq-docs")
	// The corpus is read-only to us: OpenVault puts the index in a temp dir.
	env := opstest.OpenEnv(t, root)
	out := opstest.Call[logseq.ListPagesOut](t, env, "list_pages", `{"limit": 1000}`)
	if out.Total < 100 || len(out.Pages) != out.Total {
		t.Fatalf("pages = %d of %d", len(out.Pages), out.Total)
	}
	for _, p := range out.Pages {
		if p.Kind != "page" {
			t.Errorf("journal listed without include_journals: %+v", p)
		}
	}
	ns := opstest.Call[logseq.ListPagesOut](t, env, "list_pages", `{"namespace": "whiteboard"}`)
	if ns.Total < 2 {
		t.Errorf("whiteboard namespace = %+v", ns)
	}
	for _, p := range ns.Pages {
		if !strings.EqualFold(p.Name, "whiteboard") && !strings.HasPrefix(strings.ToLower(p.Name), "whiteboard/") {
			t.Errorf("namespace leaked %s", p.Name)
		}
	}
	withJ := opstest.Call[logseq.ListPagesOut](t, env, "list_pages", `{"include_journals": true, "limit": 1000}`)
	if withJ.Total <= out.Total || withJ.Pages[len(withJ.Pages)-1].Kind != "journal" {
		t.Errorf("journals = %d vs %d", withJ.Total, out.Total)
	}

	pg := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name": "markdown", "depth": 1}`)
	if pg.Path != "pages/Markdown.md" || pg.BlockCount < 10 || len(pg.Blocks) == 0 {
		t.Errorf("Markdown page = %s %d", pg.Path, pg.BlockCount)
	}
	full := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"path": "pages/Markdown.md"}`)
	if n := countBlocks(full.Blocks); n != full.BlockCount {
		t.Errorf("tree holds %d blocks, page has %d", n, full.BlockCount)
	}

	// Every block with a uuid can be fetched, with a consistent parent chain.
	var uuid string
	var depth int
	err := env.Vaults[0].Index.DB.QueryRowContext(context.Background(),
		"SELECT uuid, depth FROM blocks WHERE uuid IS NOT NULL AND depth >= 2 ORDER BY uuid LIMIT 1").Scan(&uuid, &depth)
	if err != nil {
		t.Fatal(err)
	}
	b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid": "`+uuid+`"}`)
	if b.UUID != uuid || len(b.Parents) != depth {
		t.Errorf("block %s at depth %d: %d parents", uuid, depth, len(b.Parents))
	}
}

func countBlocks(nodes []logseq.BlockNode) int {
	n := len(nodes)
	for _, c := range nodes {
		n += countBlocks(c.Children)
	}
	return n
}
