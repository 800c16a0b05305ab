package logseq_test

import (
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/logseq"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// Issue 18: blocks written by hand in Logseq have no id::, and the block
// tools must still reach them.
const lsPlain = "- Alpha\n\t- Alpha one\n\t- Alpha two\n\t\t- deep\n- Beta\n  note:: x\n"

func TestBlocksWithoutIDByAddress(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		"graph/logseq/config.edn": "{:meta/version 1}\n",
		"graph/pages/Projects.md": lsPlain,
		"graph/pages/Other.md":    "- elsewhere\n  id:: 33333333-0000-4000-8000-000000000001\n",
	})
	page := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name":"Projects"}`)
	if page.Etag == "" || len(page.Blocks) != 2 || page.Blocks[0].Address != "Projects#0" || page.Blocks[0].Children[1].Address != "Projects#0.1" ||
		page.Blocks[0].Children[1].Children[0].Address != "Projects#0.1.0" || page.Blocks[1].Address != "Projects#1" {
		t.Fatalf("addresses: %s", opstest.JS(page))
	}
	if other := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name":"Other"}`); other.Blocks[0].Address != "33333333-0000-4000-8000-000000000001" {
		t.Errorf("a block with id:: is addressed by its uuid: %+v", other.Blocks[0])
	}
	b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid":"Projects#0.1"}`)
	if b.Content != "Alpha two" || b.UUID != "" || b.Address != "Projects#0.1" || len(b.Parents) != 1 || len(b.Children) != 1 || b.Children[0].Address != "Projects#0.1.0" {
		t.Errorf("get_block by address: %s", opstest.JS(b))
	}
	opstest.WantCode(t, env, "get_block", `{"uuid":"Projects#7"}`, errs.CodeBlockNotFound)
	opstest.WantCode(t, env, "get_block", `{"uuid":"Nowhere#0"}`, errs.CodeNotFound)

	// Writes by address need the page etag.
	opstest.WantCode(t, env, "update_block", `{"uuid":"Projects#0.1","content":"x"}`, errs.CodeInvalidInput)
	etag := page.Etag
	opstest.Call[logseq.BlockWriteOut](t, env, "update_block", `{"uuid":"Projects#0.1","if_match":"`+etag+`","content":"Alpha two, edited","properties":{"status":"done"},"apply":true}`)
	want := "- Alpha\n\t- Alpha one\n\t- Alpha two, edited\n\t  status:: done\n\t\t- deep\n- Beta\n  note:: x\n"
	if got := opstest.ReadFile(t, env, "graph/pages/Projects.md"); got != want {
		t.Fatalf("update by address (no id:: added):\n%q\nwant\n%q", got, want)
	}
	// The old etag is stale now: the same address fails instead of editing
	// whatever block sits there today.
	opstest.WantCode(t, env, "update_block", `{"uuid":"Projects#0.1","if_match":"`+etag+`","content":"y","apply":true}`, errs.CodeEtagMismatch)
	opstest.WantCode(t, env, "delete_block", `{"uuid":"Projects#0","if_match":"`+etag+`","apply":true}`, errs.CodeEtagMismatch)

	etag = opstest.EtagOf(t, env, "graph/pages/Projects.md")
	opstest.WantCode(t, env, "update_block", `{"uuid":"Projects#0.9","if_match":"`+etag+`","content":"y","apply":true}`, errs.CodeBlockNotFound)
	// create_block under an address parent; the parent gets no id::.
	nb := opstest.Call[logseq.BlockWriteOut](t, env, "create_block", `{"parent":"Projects#1","if_match":"`+etag+`","content":"Beta child","apply":true}`)
	want += "\t- Beta child\n\t  id:: " + nb.UUID + "\n"
	if got := opstest.ReadFile(t, env, "graph/pages/Projects.md"); got != want {
		t.Fatalf("create_block under an address:\n%q\nwant\n%q", got, want)
	}
	// move_block: Beta (with its child) before Alpha one, both by address.
	etag = opstest.EtagOf(t, env, "graph/pages/Projects.md")
	opstest.WantCode(t, env, "move_block", `{"uuid":"Projects#0","parent":"Projects#0.1","if_match":"`+etag+`","apply":true}`, errs.CodeConflict)
	opstest.WantCode(t, env, "move_block", `{"uuid":"Projects#0","parent":"Other#0","if_match":"`+etag+`","apply":true}`, errs.CodeInvalidInput)
	opstest.Call[logseq.BlockWriteOut](t, env, "move_block", `{"uuid":"Projects#1","sibling":"Projects#0.0","position":"before","if_match":"`+etag+`","apply":true}`)
	want = "- Alpha\n\t- Beta\n\t  note:: x\n\t\t- Beta child\n\t\t  id:: " + nb.UUID + "\n\t- Alpha one\n\t- Alpha two, edited\n\t  status:: done\n\t\t- deep\n"
	if got := opstest.ReadFile(t, env, "graph/pages/Projects.md"); got != want {
		t.Fatalf("move_block by address:\n%q\nwant\n%q", got, want)
	}
	// delete_block by address, by path instead of name.
	etag = opstest.EtagOf(t, env, "graph/pages/Projects.md")
	opstest.Call[logseq.BlockWriteOut](t, env, "delete_block", `{"uuid":"graph/pages/Projects.md#0.2","if_match":"`+etag+`","apply":true}`)
	want = strings.Replace(want, "\t- Alpha two, edited\n\t  status:: done\n\t\t- deep\n", "", 1)
	if got := opstest.ReadFile(t, env, "graph/pages/Projects.md"); got != want {
		t.Fatalf("delete_block by address:\n%q\nwant\n%q", got, want)
	}
	if n := strings.Count(opstest.ReadFile(t, env, "graph/pages/Projects.md"), "id::"); n != 1 {
		t.Errorf("only the created block has an id::, got %d", n)
	}
	opstest.WantCode(t, env, "update_block", `{"uuid":"#0","if_match":"`+etag+`","content":"y"}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "update_block", `{"uuid":"Projects#a.b","if_match":"`+etag+`","content":"y"}`, errs.CodeInvalidInput)
}

func TestJournalPages(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		"graph/logseq/config.edn": "{:meta/version 1}\n",
		"graph/pages/Loci.md":     "- a page\n",
	})
	out := opstest.Call[ops.WriteResult](t, env, "create_page", `{"name":"2026-11-25","blocks":["first entry"],"apply":true}`)
	if out.Path != "graph/journals/2026_11_25.md" || opstest.ReadFile(t, env, out.Path) != "- first entry\n" {
		t.Fatalf("create_page with a date: %+v", out)
	}
	if p := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"name":"2026-11-25"}`); p.Kind != "journal" || p.Path != out.Path {
		t.Errorf("the new journal reads back as one: %+v", p)
	}
	opstest.WantCode(t, env, "create_page", `{"name":"Nov 25th, 2026","apply":true}`, errs.CodeConflict)
	// The default title format names a journal too.
	out = opstest.Call[ops.WriteResult](t, env, "create_page", `{"name":"Dec 1st, 2026","apply":true}`)
	if out.Path != "graph/journals/2026_12_01.md" {
		t.Errorf("title-format date: %+v", out)
	}
	// Not dates: ordinary pages.
	for name, want := range map[string]string{"2026-13-01": "graph/pages/2026-13-01.md", "Dec 1, 2026": "graph/pages/Dec 1, 2026.md"} {
		if out := opstest.Call[ops.WriteResult](t, env, "create_page", `{"name":"`+name+`"}`); out.Path != want {
			t.Errorf("%s: %s, want %s", name, out.Path, want)
		}
	}
	// create_block on a journal day that has no page yet creates it.
	b := opstest.Call[logseq.BlockWriteOut](t, env, "create_block", `{"page":"2026-11-26","content":"met Ada","apply":true}`)
	if b.Path != "graph/journals/2026_11_26.md" || opstest.ReadFile(t, env, b.Path) != "- met Ada\n  id:: "+b.UUID+"\n" {
		t.Fatalf("create_block on a new journal: %+v %q", b, opstest.ReadFile(t, env, b.Path))
	}
	b2 := opstest.Call[logseq.BlockWriteOut](t, env, "create_block", `{"page":"2026-11-26","content":"then Bob","apply":true}`)
	if got := opstest.ReadFile(t, env, b.Path); got != "- met Ada\n  id:: "+b.UUID+"\n- then Bob\n  id:: "+b2.UUID+"\n" {
		t.Errorf("second block on the journal: %q", got)
	}
	opstest.WantCode(t, env, "create_block", `{"page":"No such page","content":"x"}`, errs.CodeNotFound)
}

func TestJournalFileNameFormat(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		"graph/logseq/config.edn": "{:meta/version 1\n ;; :journal/file-name-format \"yyyy\"\n :journal/page-title-format \"EEEE, dd.MM.yyyy\"\n :journal/file-name-format \"yyyy-MM-dd\"}\n",
		"graph/pages/Loci.md":     "- a page\n",
	})
	out := opstest.Call[ops.WriteResult](t, env, "create_page", `{"name":"2026_11_25","apply":true}`)
	if out.Path != "graph/journals/2026-11-25.md" {
		t.Errorf("file-name-format yyyy-MM-dd: %+v", out)
	}
	out = opstest.Call[ops.WriteResult](t, env, "create_page", `{"name":"Friday, 27.11.2026"}`)
	if out.Path != "graph/journals/2026-11-27.md" {
		t.Errorf("the graph's title format: %+v", out)
	}
	// A title in the default format is no date for this graph.
	if out := opstest.Call[ops.WriteResult](t, env, "create_page", `{"name":"Nov 27th, 2026"}`); out.Path != "graph/pages/Nov 27th, 2026.md" {
		t.Errorf("default title format in a graph with another: %+v", out)
	}
}

// Child bullets in a block's text are written in the page's own
// indentation: tabs in a tab-indented page, never "\t\t\t  - x".
func TestChildBulletsKeepTheFileIndentation(t *testing.T) {
	tabs := "- Top\n  id:: 44444444-0000-4000-8000-000000000001\n\t- Child\n\t  id:: 44444444-0000-4000-8000-000000000002\n"
	spaces := "- Top\n  id:: 55555555-0000-4000-8000-000000000001\n    - Child\n      id:: 55555555-0000-4000-8000-000000000002\n"
	env := opstest.WriteEnv(t, map[string]string{
		"graph/logseq/config.edn": "{:meta/version 1}\n",
		"graph/pages/Tabs.md":     tabs,
		"graph/pages/Spaces.md":   spaces,
	})
	content := `"New\n- grandchild\n  more of it\n  - great\n\t- great two\n- grandchild two\n` + "```" + `\n- not a bullet\n` + "```" + `"`
	out := opstest.Call[logseq.BlockWriteOut](t, env, "create_block", `{"parent":"44444444-0000-4000-8000-000000000002","content":`+content+`,"apply":true}`)
	want := tabs + "\t\t- New\n\t\t  id:: " + out.UUID + "\n\t\t\t- grandchild\n\t\t\t  more of it\n\t\t\t\t- great\n\t\t\t\t- great two\n\t\t\t- grandchild two\n\t\t\t  ```\n\t\t\t  - not a bullet\n\t\t\t  ```\n"
	if got := opstest.ReadFile(t, env, "graph/pages/Tabs.md"); got != want {
		t.Fatalf("tabs:\n%q\nwant\n%q", got, want)
	}
	if strings.Contains(opstest.ReadFile(t, env, "graph/pages/Tabs.md"), "\t  - grandchild") {
		t.Fatal("mixed tabs and spaces before a bullet")
	}
	if b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid":"`+out.UUID+`"}`); len(b.Children) != 2 || len(b.Children[0].Children) != 2 || b.Content != "New" {
		t.Errorf("the child bullets parse as children: %s", opstest.JS(b))
	}
	out = opstest.Call[logseq.BlockWriteOut](t, env, "create_block", `{"parent":"55555555-0000-4000-8000-000000000002","content":"New\n- kid\n\t- grandkid","apply":true}`)
	want = spaces + "        - New\n          id:: " + out.UUID + "\n            - kid\n                - grandkid\n"
	if got := opstest.ReadFile(t, env, "graph/pages/Spaces.md"); got != want {
		t.Fatalf("four spaces:\n%q\nwant\n%q", got, want)
	}
	// update_block's new text follows the same rule.
	opstest.Call[logseq.BlockWriteOut](t, env, "update_block", `{"uuid":"44444444-0000-4000-8000-000000000001","content":"Top\n- first kid","apply":true}`)
	if got := opstest.ReadFile(t, env, "graph/pages/Tabs.md"); !strings.HasPrefix(got, "- Top\n  id:: 44444444-0000-4000-8000-000000000001\n\t- first kid\n\t- Child\n") {
		t.Errorf("update_block with a child line:\n%q", got)
	}
}

// delete_block with recursive false lifts the children into the block's
// place, one level up, in the page's indentation.
func TestDeleteBlockKeepingChildren(t *testing.T) {
	env := logseqEnv(t)
	out := opstest.Call[logseq.BlockWriteOut](t, env, "delete_block", `{"uuid":"11111111-0000-4000-8000-000000000001","recursive":false,"apply":true}`)
	want := "type:: [[Tool]]\nalias:: loci engine\n\n" +
		"- Child A\n  id:: 11111111-0000-4000-8000-000000000002\n" +
		"\t- Grandchild\n\t  id:: 11111111-0000-4000-8000-000000000003\n" +
		"- Child B\n  status:: draft\n  id:: 11111111-0000-4000-8000-000000000004\n" +
		"- Top two\n  id:: 11111111-0000-4000-8000-000000000005\n"
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); got != want {
		t.Fatalf("lifted children:\n%q\nwant\n%q", got, want)
	}
	if len(out.Warnings) != 0 {
		t.Errorf("the grandchild's reference survives: %v", out.Warnings)
	}
	if b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid":"11111111-0000-4000-8000-000000000003"}`); len(b.Parents) != 1 || b.Parents[0].UUID != "11111111-0000-4000-8000-000000000002" {
		t.Errorf("grandchild after the lift: %+v", b.Parents)
	}
	// A nested block in a space-indented page; a leaf behaves as before.
	opstest.Call[logseq.BlockWriteOut](t, env, "delete_block", `{"uuid":"22222222-0000-4000-8000-000000000001","recursive":false,"apply":true}`)
	if got := opstest.ReadFile(t, env, "graph/pages/Spaces.md"); got != "- S1a\n  id:: 22222222-0000-4000-8000-000000000002\n- S2\n" {
		t.Errorf("spaces: %q", got)
	}
	opstest.Call[logseq.BlockWriteOut](t, env, "delete_block", `{"uuid":"22222222-0000-4000-8000-000000000002","recursive":false,"apply":true}`)
	if got := opstest.ReadFile(t, env, "graph/pages/Spaces.md"); got != "- S2\n" {
		t.Errorf("leaf: %q", got)
	}
	// The default is still recursive.
	opstest.Call[logseq.BlockWriteOut](t, env, "delete_block", `{"uuid":"11111111-0000-4000-8000-000000000002","apply":true}`)
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); strings.Contains(got, "Grandchild") {
		t.Errorf("recursive default: %q", got)
	}
}

// Property values may be JSON numbers and booleans, written as Logseq
// writes them.
func TestNumberAndBooleanProperties(t *testing.T) {
	env := logseqEnv(t)
	out := opstest.Call[ops.WriteResult](t, env, "create_page", `{"name":"Book","properties":{"rating":5,"done":true,"price":12.50,"big":1e3,"title":"Dune"},"apply":true}`)
	if got := opstest.ReadFile(t, env, out.Path); got != "big:: 1000\ndone:: true\nprice:: 12.50\nrating:: 5\ntitle:: Dune\n" {
		t.Errorf("create_page: %q", got)
	}
	b := opstest.Call[logseq.BlockWriteOut](t, env, "create_block", `{"page":"Book","content":"ch 1","properties":{"read":false,"pages":42},"apply":true}`)
	if got := opstest.ReadFile(t, env, out.Path); !strings.Contains(got, "- ch 1\n  pages:: 42\n  read:: false\n  id:: "+b.UUID+"\n") {
		t.Errorf("create_block: %q", got)
	}
	opstest.Call[logseq.BlockWriteOut](t, env, "update_block", `{"uuid":"11111111-0000-4000-8000-000000000004","properties":{"status":true,"rank":-3},"apply":true}`)
	if got := opstest.ReadFile(t, env, "graph/pages/Loci.md"); !strings.Contains(got, "\t- Child B\n\t  status:: true\n\t  rank:: -3\n\t  id::") {
		t.Errorf("update_block: %q", got)
	}
	opstest.Call[ops.WriteResult](t, env, "update_page", `{"name":"Book","properties":{"rating":4},"apply":true}`)
	if got := opstest.ReadFile(t, env, out.Path); !strings.HasPrefix(got, "big:: 1000\ndone:: true\nprice:: 12.50\nrating:: 4\n") {
		t.Errorf("update_page: %q", got)
	}
	for _, bad := range []string{`{"x":null}`, `{"x":[1]}`, `{"x":{"a":1}}`} {
		opstest.WantCode(t, env, "update_page", `{"name":"Book","properties":`+bad+`}`, errs.CodeInvalidInput)
	}
}

// Addresses and journal formats are input too: they never reach outside
// the graph's pages.
func TestHostileAddressesAndFormats(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		"graph/logseq/config.edn": "{:journal/file-name-format \"'../../../'yyyy\"}\n",
		"graph/pages/P.md":        "- a\n",
		"Note.md":                 "- not a page\n",
	})
	etag := opstest.EtagOf(t, env, "graph/pages/P.md")
	for _, addr := range []string{"../../etc/passwd.md#0", "/etc/passwd.md#0", "Note.md#0", "graph/logseq/config.edn#0"} {
		code, _ := opstest.CallErr(t, env, "update_block", `{"uuid":`+opstest.JS(addr)+`,"if_match":"`+etag+`","content":"x","apply":true}`)
		if code == "" {
			t.Errorf("%s: no error", addr)
		}
		code, _ = opstest.CallErr(t, env, "get_block", `{"uuid":`+opstest.JS(addr)+`}`)
		if code == "" {
			t.Errorf("get_block %s: no error", addr)
		}
	}
	if got := opstest.ReadFile(t, env, "Note.md"); got != "- not a page\n" {
		t.Errorf("Note.md changed: %q", got)
	}
	// A file-name format with path parts stays one file name in journals/
	// (here a hidden one, which the write policy refuses).
	opstest.WantCode(t, env, "create_page", `{"name":"2026-11-25"}`, errs.CodePathDenied)
}

// A page whose properties sit in a first bullet: get_page's addresses and
// the editor count blocks the same way.
func TestAddressesWithBulletedPageProperties(t *testing.T) {
	text := "- title:: Bulleted\n  type:: x\n- One\n\t- One a\n- Two\n"
	env := opstest.WriteEnv(t, map[string]string{
		"graph/logseq/config.edn": "{}\n",
		"graph/pages/Bulleted.md": text,
	})
	page := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"path":"graph/pages/Bulleted.md"}`)
	var oneA string
	for _, b := range page.Blocks {
		if b.Content == "One" && len(b.Children) == 1 {
			oneA = b.Children[0].Address
		}
	}
	if oneA == "" {
		t.Fatalf("blocks: %s", opstest.JS(page.Blocks))
	}
	opstest.Call[logseq.BlockWriteOut](t, env, "update_block", `{"uuid":`+opstest.JS(oneA)+`,"if_match":"`+page.Etag+`","content":"One A","apply":true}`)
	if got := opstest.ReadFile(t, env, "graph/pages/Bulleted.md"); got != strings.Replace(text, "One a", "One A", 1) {
		t.Errorf("update of %s:\n%q", oneA, got)
	}
}
