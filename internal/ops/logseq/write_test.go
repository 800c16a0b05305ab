package logseq_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/logseq"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/write"
)

const (
	lsLoci = "type:: [[Tool]]\nalias:: loci engine\n\n" +
		"- Top one\n  id:: 11111111-0000-4000-8000-000000000001\n" +
		"\t- Child A\n\t  id:: 11111111-0000-4000-8000-000000000002\n" +
		"\t\t- Grandchild\n\t\t  id:: 11111111-0000-4000-8000-000000000003\n" +
		"\t- Child B\n\t  status:: draft\n\t  id:: 11111111-0000-4000-8000-000000000004\n" +
		"- Top two\n  id:: 11111111-0000-4000-8000-000000000005\n"
	lsSpaces = "- S1\n  id:: 22222222-0000-4000-8000-000000000001\n  - S1a\n    id:: 22222222-0000-4000-8000-000000000002\n- S2\n"
	lsRef    = "- see ((11111111-0000-4000-8000-000000000003))\n"
)

func logseqEnv(t *testing.T) *ops.Env {
	return opstest.WriteEnv(t, map[string]string{
		"graph/logseq/config.edn": "{:meta/version 1}\n",
		"graph/pages/Loci.md":     lsLoci,
		"graph/pages/Spaces.md":   lsSpaces,
		"graph/pages/Ref.md":      lsRef,
		"Note.md":                 "# An Obsidian note\n",
	})
}

var uuidLine = regexp.MustCompile(`id:: [0-9a-f-]{36}`)

func TestCreateAndUpdatePage(t *testing.T) {
	env := logseqEnv(t)
	out := opstest.Call[ops.WriteResult](t, env, "create_page", `{"name":"Reading/2026","properties":{"tags":"reading","status":"open"},"blocks":["How to Take Smart Notes","Two\nlines"],"apply":true}`)
	want := "status:: open\ntags:: reading\n\n- How to Take Smart Notes\n- Two\n  lines\n"
	if out.Path != "graph/pages/Reading___2026.md" || opstest.ReadFile(t, env, out.Path) != want {
		t.Fatalf("create_page %+v:\n%q", out, opstest.ReadFile(t, env, out.Path))
	}
	page := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name":"reading/2026"}`)
	if page.Path != out.Path || len(page.Blocks) != 2 || page.Properties["status"] != "open" {
		t.Errorf("get_page after create: %+v", page)
	}
	opstest.WantCode(t, env, "create_page", `{"name":"Loci","apply":true}`, errs.CodeConflict)
	opstest.WantCode(t, env, "create_page", `{"name":"loci engine","apply":true}`, errs.CodeConflict)
	opstest.WantCode(t, env, "create_page", `{"name":".hidden"}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "create_page", `{"name":"a//b"}`, errs.CodeInvalidInput)
	empty := opstest.Call[ops.WriteResult](t, env, "create_page", `{"name":"What? A: page","apply":true}`)
	if empty.Path != "graph/pages/What%3F A%3A page.md" || opstest.ReadFile(t, env, empty.Path) != "-\n" {
		t.Errorf("empty page %q: %q", empty.Path, opstest.ReadFile(t, env, empty.Path))
	}
	if p := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name":"What? A: page"}`); p.Path != empty.Path {
		t.Errorf("encoded page name: %+v", p)
	}
	// A page holding only the placeholder block gets it replaced on append.
	opstest.Call[ops.WriteResult](t, env, "update_page", `{"name":"What? A: page","append":["first"],"apply":true}`)
	if got := opstest.ReadFile(t, env, empty.Path); got != "- first\n" {
		t.Errorf("append to the placeholder page: %q", got)
	}

	etag := opstest.EtagOf(t, env, "graph/pages/Loci.md")
	opstest.Call[ops.WriteResult](t, env, "update_page", `{"name":"loci engine","if_match":"`+etag+`","properties":{"status":"active","type":""},"append":["Top three"],"apply":true}`)
	want = "alias:: loci engine\nstatus:: active\n\n" + strings.TrimPrefix(lsLoci, "type:: [[Tool]]\nalias:: loci engine\n\n") + "- Top three\n"
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); got != want {
		t.Errorf("update_page:\n%s\nwant\n%s", got, want)
	}
	opstest.WantCode(t, env, "update_page", `{"name":"Loci","if_match":"`+etag+`","append":["x"],"apply":true}`, errs.CodeEtagMismatch)
	opstest.WantCode(t, env, "update_page", `{"name":"Note","append":["x"]}`, errs.CodeNotFound)
	opstest.WantCode(t, env, "update_page", `{"name":"Loci","properties":{"id":"x"}}`, errs.CodeInvalidInput)

	del := opstest.Call[ops.WriteResult](t, env, "delete_page", `{"name":"Reading/2026","apply":true}`)
	if opstest.Exists(env, "graph/pages/Reading___2026.md") || !opstest.Exists(env, ".trash/graph/pages/Reading___2026.md") || del.Action != "delete" {
		t.Errorf("delete_page %+v", del)
	}
	opstest.WantCode(t, env, "get_page", `{"name":"Reading/2026"}`, errs.CodeNotFound)
}

func TestCreateBlockPositions(t *testing.T) {
	env := logseqEnv(t)
	cases := []struct {
		name, in, want string
	}{
		{"last child", `{"parent":"11111111-0000-4000-8000-000000000002","content":"New"}`,
			strings.Replace(lsLoci, "000003\n", "000003\n\t\t- New\n\t\t  id:: NEW\n", 1)},
		{"first child", `{"parent":"11111111-0000-4000-8000-000000000002","position":"first","content":"New"}`,
			strings.Replace(lsLoci, "\t\t- Grandchild", "\t\t- New\n\t\t  id:: NEW\n\t\t- Grandchild", 1)},
		{"child of a leaf", `{"parent":"11111111-0000-4000-8000-000000000003","content":"New"}`,
			strings.Replace(lsLoci, "000003\n", "000003\n\t\t\t- New\n\t\t\t  id:: NEW\n", 1)},
		{"before sibling", `{"sibling":"11111111-0000-4000-8000-000000000004","position":"before","content":"New","properties":{"status":"x"}}`,
			strings.Replace(lsLoci, "\t- Child B", "\t- New\n\t  status:: x\n\t  id:: NEW\n\t- Child B", 1)},
		{"after sibling with children", `{"sibling":"11111111-0000-4000-8000-000000000002","content":"New"}`,
			strings.Replace(lsLoci, "\t- Child B", "\t- New\n\t  id:: NEW\n\t- Child B", 1)},
		{"first in page after properties", `{"page":"Loci","position":"first","content":"New\nsecond line"}`,
			strings.Replace(lsLoci, "- Top one", "- New\n  id:: NEW\n  second line\n- Top one", 1)},
		{"last in page", `{"path":"graph/pages/Loci.md","content":"New"}`,
			lsLoci + "- New\n  id:: NEW\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := logseqEnv(t)
			in := strings.TrimSuffix(c.in, "}") + `,"apply":true}`
			out := opstest.Call[logseq.BlockWriteOut](t, env, "create_block", in)
			got := strings.Replace(opstest.ReadFile(t, env, "graph/pages/Loci.md"), out.UUID, "NEW", 1)
			if got != c.want {
				t.Fatalf("got\n%s\nwant\n%s", got, c.want)
			}
			b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid":"`+out.UUID+`"}`)
			if b.Line != out.Line || !strings.HasPrefix(b.Content, "New") {
				t.Errorf("get_block of the new block: %+v (line %d)", b, out.Line)
			}
		})
	}
	// In a space-indented page the new block uses spaces.
	out := opstest.Call[logseq.BlockWriteOut](t, env, "create_block", `{"parent":"22222222-0000-4000-8000-000000000001","content":"S1b","apply":true}`)
	if got, want := opstest.ReadFile(t, env, "graph/pages/Spaces.md"), strings.Replace(lsSpaces, "- S2", "  - S1b\n    id:: "+out.UUID+"\n- S2", 1); got != want {
		t.Errorf("spaces:\n%s\nwant\n%s", got, want)
	}
	opstest.WantCode(t, env, "create_block", `{"page":"Loci","parent":"11111111-0000-4000-8000-000000000001","content":"x"}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "create_block", `{"sibling":"11111111-0000-4000-8000-000000000001","position":"first","content":"x"}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "create_block", `{"parent":"11111111-0000-4000-8000-0000000000ff","content":"x"}`, errs.CodeBlockNotFound)
	opstest.WantCode(t, env, "create_block", `{"page":"Loci","content":"x","properties":{"id":"x"}}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "create_block", `{"page":"Note","content":"x"}`, errs.CodeNotFound)
}

func TestUpdateAndDeleteBlock(t *testing.T) {
	env := logseqEnv(t)
	opstest.Call[logseq.BlockWriteOut](t, env, "update_block", `{"uuid":"((11111111-0000-4000-8000-000000000004))","content":"Child B2\nmore text","properties":{"status":"done","owner":"[[Ada]]"},"apply":true}`)
	want := strings.Replace(lsLoci, "\t- Child B\n\t  status:: draft\n\t  id:: 11111111-0000-4000-8000-000000000004\n",
		"\t- Child B2\n\t  status:: done\n\t  owner:: [[Ada]]\n\t  id:: 11111111-0000-4000-8000-000000000004\n\t  more text\n", 1)
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); got != want {
		t.Fatalf("update_block:\n%s\nwant\n%s", got, want)
	}
	b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid":"11111111-0000-4000-8000-000000000004"}`)
	if b.Content != "Child B2\nmore text" || b.Properties["status"] != "done" || b.Properties["owner"] != "[[Ada]]" {
		t.Errorf("get_block after update: %+v", b)
	}
	// Properties only: the text lines keep their bytes.
	opstest.Call[logseq.BlockWriteOut](t, env, "update_block", `{"uuid":"11111111-0000-4000-8000-000000000004","remove_properties":["owner"],"properties":{"status":""},"apply":true}`)
	want = strings.Replace(want, "\t  status:: done\n\t  owner:: [[Ada]]\n", "", 1)
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); got != want {
		t.Fatalf("update_block properties:\n%s\nwant\n%s", got, want)
	}
	opstest.WantCode(t, env, "update_block", `{"uuid":"11111111-0000-4000-8000-000000000004","remove_properties":["id"]}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "update_block", `{"uuid":"11111111-0000-4000-8000-000000000004"}`, errs.CodeInvalidInput)

	out := opstest.Call[logseq.BlockWriteOut](t, env, "delete_block", `{"uuid":"11111111-0000-4000-8000-000000000002","apply":true}`)
	want = strings.Replace(want, "\t- Child A\n\t  id:: 11111111-0000-4000-8000-000000000002\n\t\t- Grandchild\n\t\t  id:: 11111111-0000-4000-8000-000000000003\n", "", 1)
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); got != want {
		t.Fatalf("delete_block:\n%s\nwant\n%s", got, want)
	}
	if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "graph/pages/Ref.md:1") {
		t.Errorf("warnings %v", out.Warnings)
	}
	opstest.WantCode(t, env, "get_block", `{"uuid":"11111111-0000-4000-8000-000000000003"}`, errs.CodeBlockNotFound)
	opstest.Call[write.UndoOut](t, env, "undo", `{"id":"`+out.UndoID+`","apply":true}`)
	if b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid":"11111111-0000-4000-8000-000000000003"}`); len(b.Parents) != 2 {
		t.Errorf("undo of delete_block: %+v", b)
	}
}

func TestMoveBlock(t *testing.T) {
	env := logseqEnv(t)
	// Across pages: tabs become the target's two spaces; every id:: stays.
	out := opstest.Call[logseq.BlockWriteOut](t, env, "move_block", `{"uuid":"11111111-0000-4000-8000-000000000002","parent":"22222222-0000-4000-8000-000000000001","position":"first","apply":true}`)
	wantSpaces := "- S1\n  id:: 22222222-0000-4000-8000-000000000001\n" +
		"  - Child A\n    id:: 11111111-0000-4000-8000-000000000002\n    - Grandchild\n      id:: 11111111-0000-4000-8000-000000000003\n" +
		"  - S1a\n    id:: 22222222-0000-4000-8000-000000000002\n- S2\n"
	if got := opstest.ReadFile(t, env, "graph/pages/Spaces.md"); got != wantSpaces {
		t.Fatalf("target page:\n%s\nwant\n%s", got, wantSpaces)
	}
	wantLoci := strings.Replace(lsLoci, "\t- Child A\n\t  id:: 11111111-0000-4000-8000-000000000002\n\t\t- Grandchild\n\t\t  id:: 11111111-0000-4000-8000-000000000003\n", "", 1)
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); got != wantLoci {
		t.Fatalf("source page:\n%s\nwant\n%s", got, wantLoci)
	}
	if len(out.Changes) != 2 || out.Line != 3 || out.Path != "graph/pages/Spaces.md" {
		t.Errorf("result %+v", out)
	}
	b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid":"11111111-0000-4000-8000-000000000003"}`)
	if b.Page != "graph/pages/Spaces.md" || len(b.Parents) != 2 || b.Parents[1].UUID != "11111111-0000-4000-8000-000000000002" || len(b.ReferencedBy) != 1 {
		t.Errorf("moved grandchild: %+v", b)
	}
	// Undo restores both pages as one unit.
	opstest.Call[write.UndoOut](t, env, "undo", `{"id":"`+out.UndoID+`","apply":true}`)
	if opstest.ReadFile(t, env, "graph/pages/Loci.md") != lsLoci || opstest.ReadFile(t, env, "graph/pages/Spaces.md") != lsSpaces {
		t.Fatal("undo of move_block")
	}
	// Within a page: Child B before Child A, then Top two under Child B.
	opstest.Call[logseq.BlockWriteOut](t, env, "move_block", `{"uuid":"11111111-0000-4000-8000-000000000004","sibling":"11111111-0000-4000-8000-000000000002","position":"before","apply":true}`)
	opstest.Call[logseq.BlockWriteOut](t, env, "move_block", `{"uuid":"11111111-0000-4000-8000-000000000005","parent":"11111111-0000-4000-8000-000000000004","apply":true}`)
	want := "type:: [[Tool]]\nalias:: loci engine\n\n- Top one\n  id:: 11111111-0000-4000-8000-000000000001\n" +
		"\t- Child B\n\t  status:: draft\n\t  id:: 11111111-0000-4000-8000-000000000004\n" +
		"\t\t- Top two\n\t\t  id:: 11111111-0000-4000-8000-000000000005\n" +
		"\t- Child A\n\t  id:: 11111111-0000-4000-8000-000000000002\n\t\t- Grandchild\n\t\t  id:: 11111111-0000-4000-8000-000000000003\n"
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); got != want {
		t.Fatalf("moves within a page:\n%s\nwant\n%s", got, want)
	}
	opstest.WantCode(t, env, "move_block", `{"uuid":"11111111-0000-4000-8000-000000000002","parent":"11111111-0000-4000-8000-000000000003","apply":true}`, errs.CodeConflict)
	opstest.WantCode(t, env, "move_block", `{"uuid":"11111111-0000-4000-8000-000000000002","parent":"11111111-0000-4000-8000-000000000002","apply":true}`, errs.CodeConflict)
	if got := uuidLine.FindAllString(opstest.ReadFile(t, env, "graph/pages/Loci.md"), -1); len(got) != 5 {
		t.Errorf("uuids: %v", got)
	}
}

func TestEditNoteOnLogseqPage(t *testing.T) {
	env := logseqEnv(t)
	opstest.Call[ops.WriteResult](t, env, "edit_note", `{"path":"graph/pages/Loci.md","apply":true,"patches":[{"op":"set_frontmatter","key":"status","value":"active"},{"op":"add_tags","tags":["search","#tools"]},{"op":"delete_frontmatter","key":"type"}]}`)
	want := "alias:: loci engine\nstatus:: active\ntags:: search, tools\n\n" + strings.TrimPrefix(lsLoci, "type:: [[Tool]]\nalias:: loci engine\n\n")
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); got != want {
		t.Errorf("page properties through edit_note:\n%s\nwant\n%s", got, want)
	}
	opstest.Call[ops.WriteResult](t, env, "edit_note", `{"path":"graph/pages/Loci.md","apply":true,"patches":[{"op":"remove_tags","tags":["search"]}]}`)
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); !strings.HasPrefix(got, "alias:: loci engine\nstatus:: active\ntags:: tools\n\n- Top one") {
		t.Errorf("remove_tags on a page: %q", got)
	}
	// A page without properties gets them at the top.
	opstest.Call[ops.WriteResult](t, env, "edit_note", `{"path":"graph/pages/Spaces.md","apply":true,"patches":[{"op":"set_frontmatter","key":"status","value":"x"}]}`)
	if got := opstest.ReadFile(t, env, "graph/pages/Spaces.md"); got != "status:: x\n\n"+lsSpaces {
		t.Errorf("new page property: %q", got)
	}
}
