package write_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/ops/write"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

const patchNote = "---\ntitle: T\n---\n# T\n\nintro\n\n## A\na1\na2\n\n## B\nb1\n### B1\nb11\n\n## C\nc1\n"

var update = flag.Bool("update", false, "rewrite the golden files in testdata/writes/golden")

func TestEditNotePatchKinds(t *testing.T) {
	cases := []struct {
		name, patches, want string
	}{
		{"replace_lines", `[{"op":"replace_lines","start_line":9,"end_line":10,"content":"x"}]`,
			"---\ntitle: T\n---\n# T\n\nintro\n\n## A\nx\n\n## B\nb1\n### B1\nb11\n\n## C\nc1\n"},
		{"replace_lines one line with two", `[{"op":"replace_lines","start_line":6,"content":"one\ntwo\n"}]`,
			"---\ntitle: T\n---\n# T\n\none\ntwo\n\n## A\na1\na2\n\n## B\nb1\n### B1\nb11\n\n## C\nc1\n"},
		{"insert_lines", `[{"op":"insert_lines","line":6,"content":"pre"}]`,
			"---\ntitle: T\n---\n# T\n\npre\nintro\n\n## A\na1\na2\n\n## B\nb1\n### B1\nb11\n\n## C\nc1\n"},
		{"insert_lines append", `[{"op":"insert_lines","line":19,"content":"end"}]`,
			patchNote + "end\n"},
		{"delete_lines", `[{"op":"delete_lines","start_line":13}]`,
			"---\ntitle: T\n---\n# T\n\nintro\n\n## A\na1\na2\n\n## B\n### B1\nb11\n\n## C\nc1\n"},
		{"replace_text across lines", `[{"op":"replace_text","old_text":"a1\na2","new_text":"A!"}]`,
			"---\ntitle: T\n---\n# T\n\nintro\n\n## A\nA!\n\n## B\nb1\n### B1\nb11\n\n## C\nc1\n"},
		{"replace_text expected_count", `[{"op":"replace_text","old_text":"b1","new_text":"z","expected_count":2}]`,
			"---\ntitle: T\n---\n# T\n\nintro\n\n## A\na1\na2\n\n## B\nz\n### B1\nz1\n\n## C\nc1\n"},
		{"replace_text delete", `[{"op":"replace_text","old_text":"intro\n\n","new_text":""}]`,
			"---\ntitle: T\n---\n# T\n\n## A\na1\na2\n\n## B\nb1\n### B1\nb11\n\n## C\nc1\n"},
		{"insert_after_heading", `[{"op":"insert_after_heading","heading":"A","content":"new"}]`,
			"---\ntitle: T\n---\n# T\n\nintro\n\n## A\nnew\na1\na2\n\n## B\nb1\n### B1\nb11\n\n## C\nc1\n"},
		{"append_to_section with subsections", `[{"op":"append_to_section","heading":"## B","content":"- more"}]`,
			"---\ntitle: T\n---\n# T\n\nintro\n\n## A\na1\na2\n\n## B\nb1\n### B1\nb11\n- more\n\n## C\nc1\n"},
		{"append_to_section last", `[{"op":"append_to_section","heading":"c","content":"c2"}]`,
			patchNote + "c2\n"},
		{"replace_section by path", `[{"op":"replace_section","heading":"T > B > B1","content":"new b11"}]`,
			"---\ntitle: T\n---\n# T\n\nintro\n\n## A\na1\na2\n\n## B\nb1\n### B1\nnew b11\n\n## C\nc1\n"},
		{"set and delete frontmatter", `[{"op":"set_frontmatter","key":"status","value":"done"},{"op":"delete_frontmatter","key":"title"}]`,
			"---\nstatus: done\n---\n# T\n\nintro\n\n## A\na1\na2\n\n## B\nb1\n### B1\nb11\n\n## C\nc1\n"},
		{"add and remove tags", `[{"op":"add_tags","tags":["#x","y"]},{"op":"remove_tags","tags":["X"]}]`,
			"---\ntitle: T\ntags:\n  - y\n---\n# T\n\nintro\n\n## A\na1\na2\n\n## B\nb1\n### B1\nb11\n\n## C\nc1\n"},
		{"patches see each other (bottom-up line edits)", `[{"op":"delete_lines","start_line":18},{"op":"delete_lines","start_line":9,"end_line":10}]`,
			"---\ntitle: T\n---\n# T\n\nintro\n\n## A\n\n## B\nb1\n### B1\nb11\n\n## C\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := opstest.WriteEnv(t, map[string]string{"n.md": patchNote})
			etag := opstest.EtagOf(t, env, "n.md")
			pre := opstest.Call[ops.WriteResult](t, env, "edit_note", `{"path":"n.md","patches":`+c.patches+`}`)
			if pre.Applied || pre.Action != "update" || pre.Etag != etag || len(pre.Changes) != 1 || !strings.HasPrefix(pre.Changes[0].Diff, "--- a/n.md\n+++ b/n.md\n@@") {
				t.Fatalf("preview %+v", pre)
			}
			if got := opstest.ReadFile(t, env, "n.md"); got != patchNote {
				t.Fatal("a preview wrote the note")
			}
			out := opstest.Call[ops.WriteResult](t, env, "edit_note", `{"path":"n.md","if_match":"`+etag+`","apply":true,"patches":`+c.patches+`}`)
			got := opstest.ReadFile(t, env, "n.md")
			if got != c.want {
				t.Fatalf("got\n%s\nwant\n%s", got, c.want)
			}
			if !out.Applied || out.Etag != vault.Etag([]byte(got)) || out.NewEtag != out.Etag || out.OldEtag != etag || out.NewEtag != pre.NewEtag || out.UndoID == "" || !out.Reindexed {
				t.Errorf("result %+v", out)
			}
		})
	}
}

func TestEditNoteConflictsLeaveTheNote(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"n.md": patchNote, "dup.md": "# X\n## Notes\na\n# Y\n## Notes\nb\n"})
	for _, c := range []struct {
		patches, code, detail string
	}{
		{`[{"op":"replace_lines","start_line":18,"end_line":19,"content":"x"}]`, errs.CodeConflict, "total_lines"},
		{`[{"op":"insert_lines","line":21,"content":"x"}]`, errs.CodeConflict, "total_lines"},
		{`[{"op":"replace_text","old_text":"b1","new_text":"z"}]`, errs.CodeConflict, "lines"},
		{`[{"op":"replace_text","old_text":"nowhere","new_text":"z"}]`, errs.CodeConflict, "found"},
		{`[{"op":"append_to_section","heading":"Missing","content":"x"}]`, errs.CodeConflict, "headings"},
		// The first patch applies, the second fails: nothing is written.
		{`[{"op":"set_frontmatter","key":"k","value":1},{"op":"delete_lines","start_line":40}]`, errs.CodeConflict, "patch"},
		{`[{"op":"bogus"}]`, errs.CodeInvalidInput, "allowed"},
		{`[{"op":"replace_lines","start_line":0}]`, errs.CodeInvalidInput, ""},
		{`[{"op":"replace_text","old_text":""}]`, errs.CodeInvalidInput, ""},
		{`[{"op":"add_tags","tags":["has space"]}]`, errs.CodeInvalidInput, ""},
		{`[{"op":"add_tags","tags":["2026"]}]`, errs.CodeInvalidInput, ""},
		{`[]`, errs.CodeInvalidInput, ""},
	} {
		d := opstest.WantCode(t, env, "edit_note", `{"path":"n.md","apply":true,"patches":`+c.patches+`}`, c.code)
		if _, ok := d[c.detail]; c.detail != "" && !ok {
			t.Errorf("%s: details %v lack %s", c.patches, d, c.detail)
		}
	}
	d := opstest.WantCode(t, env, "edit_note", `{"path":"dup.md","apply":true,"patches":[{"op":"append_to_section","heading":"Notes","content":"x"}]}`, errs.CodeConflict)
	if !slices.Equal(toInts(d["lines"]), []int{2, 5}) {
		t.Errorf("ambiguous heading details %v", d)
	}
	opstest.Call[ops.WriteResult](t, env, "edit_note", `{"path":"dup.md","apply":true,"patches":[{"op":"append_to_section","heading":"Y > Notes","content":"c"}]}`)
	if got := opstest.ReadFile(t, env, "dup.md"); got != "# X\n## Notes\na\n# Y\n## Notes\nb\nc\n" {
		t.Errorf("heading path: %q", got)
	}
	if opstest.ReadFile(t, env, "n.md") != patchNote {
		t.Error("a failed edit changed the note")
	}
	if es, _ := opstest.MustWriter(t, env).Journal(); len(es) != 1 {
		t.Errorf("journal: %d entries, want 1", len(es))
	}
}

func toInts(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

// fmCases are frontmatter edits checked against golden files: the output
// must be the golden file byte for byte, and every line outside the edited
// keys' entries must be kept.
var fmCases = []struct {
	name, file, patches string
	keys                []string // keys whose lines may change (nil: lines may only be added)
}{
	{"set_scalar", "obsidian.md", `[{"op":"set_frontmatter","key":"status","value":"done"}]`, []string{"status"}},
	{"set_keeps_quotes_and_comment", "obsidian.md", `[{"op":"set_frontmatter","key":"title","value":"Project: Atlas II"}]`, []string{"title"}},
	{"set_new_key", "obsidian.md", `[{"op":"set_frontmatter","key":"reviewed","value":true}]`, nil},
	{"set_block_list", "obsidian.md", `[{"op":"set_frontmatter","key":"related","value":["[[A]]","[[B]]","plain"]}]`, []string{"related"}},
	{"set_date_unquoted", "obsidian.md", `[{"op":"set_frontmatter","key":"updated","value":"2026-11-20T08:00:00"}]`, []string{"updated"}},
	{"set_map", "obsidian.md", `[{"op":"set_frontmatter","key":"meta","value":{"level":3,"flags":["x"]}}]`, []string{"meta"}},
	{"set_multiline", "obsidian.md", `[{"op":"set_frontmatter","key":"summary","value":"New\nsummary\n"}]`, []string{"summary"}},
	{"set_null_number", "obsidian.md", `[{"op":"set_frontmatter","key":"owner","value":null},{"op":"set_frontmatter","key":"id","value":20261120101530}]`, []string{"owner", "id"}},
	{"delete_middle", "obsidian.md", `[{"op":"delete_frontmatter","key":"meta"}]`, []string{"meta"}},
	{"delete_last", "obsidian.md", `[{"op":"delete_frontmatter","key":"updated"}]`, []string{"updated"}},
	{"add_tags_flow", "obsidian.md", `[{"op":"add_tags","tags":["review","#project"]}]`, []string{"tags"}},
	{"remove_tags_flow", "obsidian.md", `[{"op":"remove_tags","tags":["#project/atlas"]}]`, []string{"tags"}},
	{"crlf_bom_set", "crlf_bom.md", `[{"op":"set_frontmatter","key":"status","value":"draft"}]`, nil},
	{"crlf_bom_add_tags", "crlf_bom.md", `[{"op":"add_tags","tags":["new"]}]`, nil},
	{"crlf_bom_remove_tags", "crlf_bom.md", `[{"op":"remove_tags","tags":["OLD"]}]`, []string{"tags"}},
	{"crlf_bom_body", "crlf_bom.md", `[{"op":"append_to_section","heading":"Windows note","content":"Added line."}]`, nil},
	{"no_frontmatter_set", "no_frontmatter.md", `[{"op":"set_frontmatter","key":"status","value":"new"}]`, nil},
	{"no_frontmatter_add_tags", "no_frontmatter.md", `[{"op":"add_tags","tags":["a","b"]}]`, nil},
	{"no_frontmatter_append", "no_frontmatter.md", `[{"op":"insert_lines","line":4,"content":"Appended."}]`, nil},
	{"indent0_add_tags", "indent0.md", `[{"op":"add_tags","tags":["gamma"]}]`, nil},
	{"indent0_remove_tags", "indent0.md", `[{"op":"remove_tags","tags":["alpha"]}]`, []string{"tag"}},
	{"indent0_set_list", "indent0.md", `[{"op":"set_frontmatter","key":"tag","value":["x","y","z"]}]`, []string{"tag"}},
	{"empty_frontmatter_set", "empty_frontmatter.md", `[{"op":"set_frontmatter","key":"a","value":1}]`, nil},
}

func TestFrontmatterGolden(t *testing.T) {
	for _, c := range fmCases {
		t.Run(c.name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "writes", c.file))
			if err != nil {
				t.Fatal(err)
			}
			env := opstest.WriteEnv(t, map[string]string{"note.md": string(in)})
			opstest.Call[ops.WriteResult](t, env, "edit_note", `{"path":"note.md","apply":true,"patches":`+c.patches+`}`)
			got := []byte(opstest.ReadFile(t, env, "note.md"))
			golden := filepath.Join("testdata", "writes", "golden", c.name+".md")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s:\n%q\nwant\n%q", golden, got, want)
			}
			checkKeptLines(t, in, got, c.keys)
		})
	}
}

// checkKeptLines checks the byte-identity of the untouched part: the file
// keeps its BOM, line endings and final newline, and the only lines removed
// are lines of the edited keys' entries.
func checkKeptLines(t *testing.T, in, out []byte, keys []string) {
	t.Helper()
	fin, fout := vault.DetectFormat(in), vault.DetectFormat(out)
	if fin != fout {
		t.Errorf("format changed: %+v → %+v", fin, fout)
	}
	a, _ := noteedit.SplitLines(fin.Decode(in))
	b, _ := noteedit.SplitLines(fout.Decode(out))
	allowed := map[int]bool{}
	if fm, err := noteedit.ParseFrontmatter(a, "x"); err == nil {
		for _, k := range keys {
			if e := fm.Find(k); e != nil {
				for i := e.Start; i <= e.End; i++ {
					allowed[i] = true
				}
			}
		}
	}
	for _, op := range noteedit.DiffLines(a, b) {
		if op.Kind == '-' && !allowed[op.A] {
			t.Errorf("line %d %q was changed but belongs to no edited key", op.A+1, a[op.A])
		}
	}
}

func TestInvalidUTF8Refused(t *testing.T) {
	bad := "# Bad\n\nLatin-1 caf\xe9\n"
	env := opstest.WriteEnv(t, map[string]string{"bad.md": bad, "ok.md": "[[bad]]\n"})
	w := opstest.MustWriter(t, env)
	for _, c := range []struct{ op, in string }{
		{"edit_note", `{"path":"bad.md","apply":true,"patches":[{"op":"set_frontmatter","key":"a","value":1}]}`},
		{"write_note", `{"path":"bad.md","apply":true,"overwrite":true,"content":"x"}`},
		{"improve_frontmatter", `{"path":"bad.md","apply":true,"required":["id"]}`},
		{"relocate_note", `{"path":"bad.md","to":"moved.md","apply":true}`},
	} {
		code, details := opstest.CallErr(t, env, c.op, c.in)
		if code != errs.CodeInvalidUTF8 || details["path"] != "bad.md" {
			t.Errorf("%s: %s %v", c.op, code, details)
		}
	}
	if opstest.ReadFile(t, env, "bad.md") != bad || opstest.Exists(env, "moved.md") {
		t.Error("the invalid note was touched")
	}
	if es, _ := w.Journal(); len(es) != 0 {
		t.Errorf("journal: %d entries", len(es))
	}
}

func TestCaptureNote(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"Inbox/Meeting Q3 plan.md": "taken\n"})
	in := `{"title":"Meeting: Q3 plan?","content":"First line.\n\nSecond paragraph.","tags":["idea","#Idea","work/q3"],"aliases":["Q3"],"source":"https://example.com/a b","frontmatter":{"status":"new","priority":2}}`
	pre := opstest.Call[ops.WriteResult](t, env, "capture_note", in)
	if pre.Applied || pre.Action != "create" || pre.Path != "Inbox/Meeting Q3 plan 2.md" || opstest.Exists(env, pre.Path) || !strings.HasPrefix(pre.Changes[0].Diff, "--- /dev/null\n+++ b/Inbox/Meeting Q3 plan 2.md\n") {
		t.Fatalf("preview %+v", pre)
	}
	out := opstest.Call[ops.WriteResult](t, env, "capture_note", strings.TrimSuffix(in, "}")+`,"apply":true}`)
	want := "---\nid: 20261120101530\ncreated: 2026-11-20T10:15:30\nupdated: 2026-11-20T10:15:30\naliases:\n  - Q3\ntags:\n  - idea\n  - work/q3\n" +
		"source: https://example.com/a b\npriority: 2\nstatus: new\n---\n# Meeting: Q3 plan?\n\nFirst line.\n\nSecond paragraph.\n"
	if got := opstest.ReadFile(t, env, out.Path); got != want {
		t.Errorf("captured note:\n%s\nwant\n%s", got, want)
	}
	if out.Path != "Inbox/Meeting Q3 plan 2.md" || out.Etag != opstest.EtagOf(t, env, out.Path) || out.OldEtag != "" || !out.Reindexed {
		t.Errorf("result %+v", out)
	}
	// Read-your-writes: the index knows it at once.
	sr := opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"query":"Second paragraph"}`)
	if len(sr.Results) == 0 || sr.Results[0].Path != out.Path {
		t.Errorf("search after capture: %+v", sr.Results)
	}
	// Title from content, a folder, a name no OS refuses.
	out = opstest.Call[ops.WriteResult](t, env, "capture_note", `{"content":"# con: a/b*c\nbody","folder":"Ideas/Sub","apply":true}`)
	if out.Path != "Ideas/Sub/con a b c.md" {
		t.Errorf("path %q", out.Path)
	}
	if got := opstest.ReadFile(t, env, out.Path); !strings.HasSuffix(got, "---\n# con: a/b*c\nbody\n") {
		t.Errorf("content-only capture: %q", got)
	}
	opstest.WantCode(t, env, "capture_note", `{"title":"x","folder":"../out","apply":true}`, errs.CodePathDenied)
	opstest.WantCode(t, env, "capture_note", `{"title":"x","folder":".obsidian","apply":true}`, errs.CodePathDenied)
	opstest.WantCode(t, env, "capture_note", `{}`, errs.CodeInvalidInput)
	env.Writes.Inbox = "Capture"
	out = opstest.Call[ops.WriteResult](t, env, "capture_note", `{"title":"Inbox setting","apply":true}`)
	if out.Path != "Capture/Inbox setting.md" {
		t.Errorf("configured inbox: %q", out.Path)
	}
}

func TestWriteNote(t *testing.T) {
	crlf := "\uFEFF# Old\r\n\r\ntext\r\n"
	env := opstest.WriteEnv(t, map[string]string{"a.md": crlf})
	out := opstest.Call[ops.WriteResult](t, env, "write_note", `{"path":"new/b.md","content":"# B\n","apply":true}`)
	if out.Action != "create" || opstest.ReadFile(t, env, "new/b.md") != "# B\n" {
		t.Errorf("create: %+v", out)
	}
	d := opstest.WantCode(t, env, "write_note", `{"path":"a.md","content":"x","apply":true}`, errs.CodeConflict)
	if d["current_etag"] != vault.Etag([]byte(crlf)) {
		t.Errorf("conflict details %v", d)
	}
	opstest.WantCode(t, env, "write_note", `{"path":"a.md","content":"x","apply":true,"if_match":"`+strings.Repeat("0", 64)+`"}`, errs.CodeEtagMismatch)
	opstest.WantCode(t, env, "write_note", `{"path":"a.md","content":"x","if_match":"nothex"}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "write_note", `{"path":"a.md","content":"x","if_match":"`+strings.Repeat("a", 64)+`","expected_sha256":"`+strings.Repeat("b", 64)+`"}`, errs.CodeInvalidInput)
	// Replace keeps the BOM, CRLF and final newline of the file.
	etag := opstest.EtagOf(t, env, "a.md")
	opstest.Call[ops.WriteResult](t, env, "write_note", `{"path":"a.md","content":"# New\n\nline\n","apply":true,"expected_sha256":"`+strings.ToUpper(etag)+`"}`)
	if got := opstest.ReadFile(t, env, "a.md"); got != "\uFEFF# New\r\n\r\nline\r\n" {
		t.Errorf("replace: %q", got)
	}
	opstest.Call[ops.WriteResult](t, env, "write_note", `{"path":"a.md","content":"blind","apply":true,"overwrite":true}`)
	if got := opstest.ReadFile(t, env, "a.md"); got != "\uFEFFblind\r\n" {
		t.Errorf("overwrite: %q", got)
	}
	opstest.WantCode(t, env, "write_note", `{"path":"gone.md","content":"x","if_match":"`+strings.Repeat("1", 64)+`"}`, errs.CodeEtagMismatch)
	opstest.WantCode(t, env, "write_note", `{"path":"a.txt","content":"x"}`, errs.CodePathDenied)
}

func TestDeleteNoteAndUndo(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"Projects/A.md": "# A\n", "B.md": "See [[A]].\n", ".trash/Projects/A.md": "an older A\n"})
	pre := opstest.Call[ops.WriteResult](t, env, "delete_note", `{"note":"A"}`)
	if pre.Applied || pre.Action != "delete" || !opstest.Exists(env, "Projects/A.md") || len(pre.Warnings) != 1 || !strings.Contains(pre.Warnings[0], "B.md") {
		t.Fatalf("preview %+v", pre)
	}
	out := opstest.Call[ops.WriteResult](t, env, "delete_note", `{"path":"Projects/A.md","apply":true}`)
	if opstest.Exists(env, "Projects/A.md") || opstest.ReadFile(t, env, ".trash/Projects/A 2.md") != "# A\n" || out.Changes[0].TrashPath != ".trash/Projects/A 2.md" || out.Etag != "" {
		t.Fatalf("delete %+v", out)
	}
	if _, err := env.Vaults[0].Index.NoteByPath(context.Background(), "Projects/A.md"); errs.Code(err) != errs.CodeNotFound {
		t.Errorf("index still has the deleted note: %v", err)
	}
	u := opstest.Call[write.UndoOut](t, env, "undo", `{"id":"`+out.UndoID+`","apply":true}`)
	if opstest.ReadFile(t, env, "Projects/A.md") != "# A\n" || opstest.Exists(env, ".trash/Projects/A 2.md") || opstest.ReadFile(t, env, ".trash/Projects/A.md") != "an older A\n" {
		t.Errorf("undo of delete: %+v", u)
	}
	if n, err := env.Vaults[0].Index.NoteByPath(context.Background(), "Projects/A.md"); err != nil || n.Etag != vault.Etag([]byte("# A\n")) {
		t.Errorf("index after undo: %v %v", n, err)
	}
	opstest.WantCode(t, env, "delete_note", `{"path":"missing.md","apply":true}`, errs.CodeNotFound)
}

func TestRelocateNoteRewritesLinks(t *testing.T) {
	files := map[string]string{
		"Projects/Alpha.md":        "---\nid: 1\nupdated: 2026-01-01\n---\n# Alpha\n\nSee [[Alpha#Plan]], [kickoff](../Meetings/Kickoff.md) and ![img](img/diagram.png).\n\n## Plan\n",
		"Projects/img/diagram.png": "png",
		"Meetings/Kickoff.md": "---\nproject: \"[[Alpha]]\"\nrelated:\n  - \"[[Projects/Alpha|the alpha]]\"\n---\n" +
			"Kickoff of [[Alpha#Plan|the plan]], ![[Alpha]], [md](../Projects/Alpha.md#plan), [root](/Projects/Alpha.md) and `[[Alpha]]` in code.\n" +
			"Alias link [[The A]] stays; [[Alphabet]] is another note.\n",
		"Other/Alpha Notes.md": "[[Alpha.md]] and [enc](../Projects/Alpha.md) and <[Alpha](<../Projects/Alpha.md>)>\n",
		"Alphabet.md":          "# Alphabet\n",
		"Alpha2.md":            "---\naliases: [The A]\n---\n",
	}
	env := opstest.WriteEnv(t, files)
	pre := opstest.Call[ops.WriteResult](t, env, "relocate_note", `{"path":"Projects/Alpha.md","to":"Archive/2026/Alpha Project.md"}`)
	if pre.Applied || pre.Action != "move" || pre.Path != "Archive/2026/Alpha Project.md" || opstest.Exists(env, "Archive") {
		t.Fatalf("preview %+v", pre)
	}
	var changed []string
	for _, c := range pre.Changes {
		changed = append(changed, c.Action+" "+c.Path)
		if c.Diff == "" {
			t.Errorf("%s: no diff", c.Path)
		}
	}
	slices.Sort(changed)
	if want := []string{"move Projects/Alpha.md", "update Meetings/Kickoff.md", "update Other/Alpha Notes.md"}; !slices.Equal(changed, want) {
		t.Errorf("changes %v, want %v", changed, want)
	}
	out := opstest.Call[ops.WriteResult](t, env, "relocate_note", `{"path":"Projects/Alpha.md","to":"Archive/2026/Alpha Project.md","apply":true,"if_match":"`+pre.OldEtag+`"}`)
	if opstest.Exists(env, "Projects/Alpha.md") {
		t.Fatal("old path still exists")
	}
	moved := opstest.ReadFile(t, env, "Archive/2026/Alpha Project.md")
	wantMoved := "---\nid: 1\nupdated: 2026-11-20\n---\n# Alpha\n\nSee [[Alpha Project#Plan]], [kickoff](../../Meetings/Kickoff.md) and ![img](../../Projects/img/diagram.png).\n\n## Plan\n"
	if moved != wantMoved {
		t.Errorf("moved note:\n%s\nwant\n%s", moved, wantMoved)
	}
	wantKick := "---\nproject: \"[[Alpha Project]]\"\nrelated:\n  - \"[[Archive/2026/Alpha Project|the alpha]]\"\n---\n" +
		"Kickoff of [[Alpha Project#Plan|the plan]], ![[Alpha Project]], [md](../Archive/2026/Alpha%20Project.md#plan), [root](/Archive/2026/Alpha%20Project.md) and `[[Alpha]]` in code.\n" +
		"Alias link [[The A]] stays; [[Alphabet]] is another note.\n"
	if got := opstest.ReadFile(t, env, "Meetings/Kickoff.md"); got != wantKick {
		t.Errorf("linking note:\n%s\nwant\n%s", got, wantKick)
	}
	if got, want := opstest.ReadFile(t, env, "Other/Alpha Notes.md"), "[[Alpha Project.md]] and [enc](../Archive/2026/Alpha%20Project.md) and <[Alpha](<../Archive/2026/Alpha Project.md>)>\n"; got != want {
		t.Errorf("other note:\n%s\nwant\n%s", got, want)
	}
	// The index resolves every rewritten link to the new path.
	links := opstest.Call[read.GetLinksOut](t, env, "get_links", `{"path":"Archive/2026/Alpha Project.md"}`)
	srcs := map[string]bool{}
	for _, l := range append(links.Backlinks, links.TypedIn...) {
		srcs[l.Source] = true
	}
	if !srcs["Meetings/Kickoff.md"] || !srcs["Other/Alpha Notes.md"] || len(links.Unresolved) != 0 {
		t.Errorf("links after the move: %+v", links)
	}
	broken := opstest.Call[read.FindBrokenLinksOut](t, env, "find_broken_links", `{}`)
	if broken.Total != 0 {
		t.Errorf("broken links after the move: %+v", broken)
	}
	// Undo puts everything back as one unit.
	opstest.Call[write.UndoOut](t, env, "undo", `{"id":"`+out.UndoID+`","apply":true}`)
	for p, body := range files {
		if got := opstest.ReadFile(t, env, p); got != body {
			t.Errorf("after undo %s:\n%s\nwant\n%s", p, got, body)
		}
	}
	if opstest.Exists(env, "Archive/2026/Alpha Project.md") || opstest.Exists(env, ".trash/Archive") {
		t.Error("undo left the moved note behind")
	}
	// Refusals.
	opstest.WantCode(t, env, "relocate_note", `{"path":"Projects/Alpha.md","to":"Alphabet.md","apply":true}`, errs.CodeConflict)
	opstest.WantCode(t, env, "relocate_note", `{"path":"Projects/Alpha.md","to":"../out.md","apply":true}`, errs.CodePathDenied)
	opstest.WantCode(t, env, "relocate_note", `{"path":"Projects/Alpha.md","to":".trash/x.md","apply":true}`, errs.CodePathDenied)
	opstest.WantCode(t, env, "relocate_note", `{"path":"Projects/Alpha.md","to":"Projects/Alpha.md"}`, errs.CodeInvalidInput)
	// A folder ending in / keeps the file name.
	if out := opstest.Call[ops.WriteResult](t, env, "relocate_note", `{"path":"Alphabet.md","to":"Words/"}`); out.Path != "Words/Alphabet.md" {
		t.Errorf("move into a folder: %q", out.Path)
	}
	// Without link updates only the note moves.
	out = opstest.Call[ops.WriteResult](t, env, "relocate_note", `{"path":"Projects/Alpha.md","to":"Projects/Beta.md","update_links":false,"apply":true}`)
	if len(out.Changes) != 1 || opstest.ReadFile(t, env, "Meetings/Kickoff.md") != files["Meetings/Kickoff.md"] {
		t.Errorf("update_links=false: %+v", out.Changes)
	}
}

func TestImproveFrontmatter(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		"a.md": "---\n# keep me\nid: 20261101093000\ncreated: 2026/10/30\nupdated: 2026-11-02 08:00\ntags: \"#one, two\"\naliases: First A, Another\nstatus: x\n---\n# The A\n",
		"b.md": "# Bee\n\ntext\n",
	})
	os.Chtimes(filepath.Join(opstest.Root(env), "b.md"), opstest.Now, opstest.Now)
	out := opstest.Call[write.ImproveFrontmatterOut](t, env, "improve_frontmatter", `{"path":"a.md","fix_identity":true,"required":["title","status","reviewed"],"defaults":{"reviewed":false},"apply":true}`)
	want := "---\n# keep me\nid: 20261101093000\ncreated: 2026-11-01\nupdated: 2026-11-02T08:00:00\ntags:\n  - one\n  - two\naliases:\n  - First A\n  - Another\nstatus: x\ntitle: The A\nreviewed: false\n---\n# The A\n"
	if got := opstest.ReadFile(t, env, "a.md"); got != want {
		t.Errorf("improved:\n%s\nwant\n%s\nfixes %v", got, want, out.Fixes)
	}
	if len(out.Fixes) != 7 {
		t.Errorf("fixes: %q", out.Fixes)
	}
	out = opstest.Call[write.ImproveFrontmatterOut](t, env, "improve_frontmatter", `{"path":"b.md","required":["id","created","tags"],"apply":true}`)
	want = "---\nid: 20261120101530\ncreated: 2026-11-20T10:15:30\ntags: []\n---\n# Bee\n\ntext\n"
	if got := opstest.ReadFile(t, env, "b.md"); got != want {
		t.Errorf("added keys:\n%s\nwant\n%s", got, want)
	}
	again := opstest.Call[write.ImproveFrontmatterOut](t, env, "improve_frontmatter", `{"path":"b.md","required":["id","created","tags"],"apply":true}`)
	if again.Action != "none" || len(again.Fixes) != 0 || again.UndoID != "" {
		t.Errorf("second run must change nothing: %+v", again)
	}
}

// TestImproveFrontmatterIDsAreUnique: ids added from a created date are
// unique: notes created on one day get consecutive seconds after the
// ids already taken, with the index re-synced or not (reindex=false), and
// a preview shows the id its apply will write.
func TestImproveFrontmatterIDsAreUnique(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		"old.md": "---\nid: 20261101000000\n---\n# Old\n",
		"a.md":   "---\ncreated: 2026-11-01\n---\n# A\n",
		"b.md":   "---\ncreated: 2026-11-01\n---\n# B\n",
		"c.md":   "---\ncreated: 2026-11-01\n---\n# C\n",
	})
	idOf := func(p string) string {
		text := opstest.ReadFile(t, env, p)
		_, rest, _ := strings.Cut(text, "id: ")
		id, _, _ := strings.Cut(rest, "\n")
		return id
	}
	opstest.Call[write.ImproveFrontmatterOut](t, env, "improve_frontmatter", `{"path":"a.md","fix_identity":true,"apply":true}`)
	opstest.Call[write.ImproveFrontmatterOut](t, env, "improve_frontmatter", `{"path":"b.md","required":["id"],"apply":true,"reindex":false}`)
	prev := opstest.Call[write.ImproveFrontmatterOut](t, env, "improve_frontmatter", `{"path":"c.md","required":["id"]}`)
	opstest.Call[write.ImproveFrontmatterOut](t, env, "improve_frontmatter", `{"path":"c.md","required":["id"],"apply":true}`)
	got := []string{idOf("a.md"), idOf("b.md"), idOf("c.md")}
	if strings.Join(got, ",") != "20261101000001,20261101000002,20261101000003" {
		t.Errorf("ids %v, want consecutive seconds after old.md's", got)
	}
	if !strings.Contains(prev.Changes[0].Diff, "+id: 20261101000003") {
		t.Errorf("the preview shows another id:\n%s", prev.Changes[0].Diff)
	}
}

func TestUndoSessionsAndGuards(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"n.md": "v0\n"})
	edit := func(session, text string) *ops.WriteResult {
		return opstest.CallAs[ops.WriteResult](t, env, session, "write_note", `{"path":"n.md","content":"`+text+`\n","overwrite":true,"apply":true}`)
	}
	edit("s1", "v1")
	edit("s2", "v2")
	e3 := edit("s1", "v3")
	// Undo of a middle change whose file changed since: refused.
	hist := opstest.Call[write.WriteHistoryOut](t, env, "write_history", `{"path":"n.md"}`)
	if hist.Total != 3 || hist.Entries[0].ID != e3.UndoID || hist.Entries[0].Session != "s1" {
		t.Fatalf("history %+v", hist)
	}
	d := opstest.WantCode(t, env, "undo", `{"id":"`+hist.Entries[1].ID+`","apply":true}`, errs.CodeEtagMismatch)
	if d["path"] != "n.md" || opstest.ReadFile(t, env, "n.md") != "v3\n" {
		t.Errorf("guard details %v", d)
	}
	// The caller's own session: s2's last change is v2, overwritten by s1 → refused.
	res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "mcp", Session: "s2"}, "undo", json.RawMessage(`{"apply":true}`))
	if res.Err == nil || res.Err.Code != errs.CodeEtagMismatch {
		t.Errorf("undo of s2 over s1's later edit: %+v", res.Err)
	}
	// s1 undoes its own last change.
	u := opstest.CallAs[write.UndoOut](t, env, "s1", "undo", `{"apply":true}`)
	if opstest.ReadFile(t, env, "n.md") != "v2\n" || len(u.Undone) != 1 || u.Undone[0] != e3.UndoID {
		t.Fatalf("undo last of s1: %+v", u)
	}
	opstest.WantCode(t, env, "undo", `{"id":"`+e3.UndoID+`","apply":true}`, errs.CodeConflict) // already undone
	// Redo = undo the undo.
	opstest.CallAs[write.UndoOut](t, env, "x", "undo", `{"id":"`+u.UndoID+`","apply":true}`)
	if opstest.ReadFile(t, env, "n.md") != "v3\n" {
		t.Errorf("redo: %q", opstest.ReadFile(t, env, "n.md"))
	}
	// A human edit after the last write blocks its undo.
	os.WriteFile(filepath.Join(opstest.Root(env), "n.md"), []byte("human\n"), 0o644)
	opstest.WantCode(t, env, "undo", `{"session":"s1","apply":true}`, errs.CodeEtagMismatch)
	if opstest.ReadFile(t, env, "n.md") != "human\n" {
		t.Error("undo clobbered a human edit")
	}
	// The last N changes of one session undo together.
	env2 := opstest.WriteEnv(t, map[string]string{"a.md": "a0\n", "b.md": "b0\n"})
	opstest.CallAs[ops.WriteResult](t, env2, "s", "write_note", `{"path":"a.md","content":"a1\n","overwrite":true,"apply":true}`)
	opstest.CallAs[ops.WriteResult](t, env2, "s", "write_note", `{"path":"b.md","content":"b1\n","overwrite":true,"apply":true}`)
	opstest.CallAs[ops.WriteResult](t, env2, "s", "write_note", `{"path":"a.md","content":"a2\n","overwrite":true,"apply":true}`)
	opstest.CallAs[ops.WriteResult](t, env2, "s", "capture_note", `{"title":"New","apply":true}`)
	pre := opstest.CallAs[write.UndoOut](t, env2, "s", "undo", `{"count":4}`)
	if pre.Applied || len(pre.Undone) != 4 || opstest.ReadFile(t, env2, "a.md") != "a2\n" {
		t.Fatalf("undo preview %+v", pre)
	}
	opstest.CallAs[write.UndoOut](t, env2, "s", "undo", `{"count":4,"apply":true}`)
	if opstest.ReadFile(t, env2, "a.md") != "a0\n" || opstest.ReadFile(t, env2, "b.md") != "b0\n" || opstest.Exists(env2, "Inbox/New.md") || !opstest.Exists(env2, ".trash/Inbox/New.md") {
		t.Errorf("undo of 4: a=%q b=%q", opstest.ReadFile(t, env2, "a.md"), opstest.ReadFile(t, env2, "b.md"))
	}
	hist = opstest.Call[write.WriteHistoryOut](t, env2, "write_history", `{"session":"s"}`)
	for _, e := range hist.Entries[1:] {
		if e.UndoneBy != hist.Entries[0].ID {
			t.Errorf("entry %s not marked undone: %+v", e.ID, e)
		}
	}
	opstest.WantCode(t, env2, "undo", `{"id":"20260101T000000.000000000Z-000000"}`, errs.CodeUndoNotFound)
	opstest.WantCode(t, env2, "undo", `{"id":"../../etc"}`, errs.CodeUndoNotFound)
	opstest.WantCode(t, env2, "undo", `{"id":"x","count":2}`, errs.CodeInvalidInput)
}

func TestIdempotency(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"n.md": "# N\n"})
	in := `{"path":"n.md","apply":true,"idempotency_key":"key-1","patches":[{"op":"insert_lines","line":2,"content":"once"}]}`
	first := opstest.Call[ops.WriteResult](t, env, "edit_note", in)
	second := opstest.Call[ops.WriteResult](t, env, "edit_note", in)
	if got := opstest.ReadFile(t, env, "n.md"); got != "# N\nonce\n" {
		t.Fatalf("retried edit applied twice: %q", got)
	}
	if first.Replayed || !second.Replayed || second.UndoID != first.UndoID || second.Etag != first.Etag {
		t.Errorf("replay: first %+v second %+v", first, second)
	}
	d := opstest.WantCode(t, env, "edit_note", strings.Replace(in, "once", "twice", 1), errs.CodeIdempotencyReuse)
	if d["operation"] != "edit_note" {
		t.Errorf("details %v", d)
	}
	opstest.WantCode(t, env, "capture_note", `{"title":"x","apply":true,"idempotency_key":"key-1"}`, errs.CodeIdempotencyReuse)
	// A preview with a key stores nothing; the applied call after it writes.
	opstest.Call[ops.WriteResult](t, env, "capture_note", `{"title":"Y","idempotency_key":"key-2"}`)
	out := opstest.Call[ops.WriteResult](t, env, "capture_note", `{"title":"Y","apply":true,"idempotency_key":"key-2"}`)
	if out.Replayed || !opstest.Exists(env, "Inbox/Y.md") {
		t.Errorf("apply after preview: %+v", out)
	}
	if es, _ := opstest.MustWriter(t, env).Journal(); len(es) != 2 {
		t.Errorf("journal entries %d, want 2", len(es))
	}
}

func TestWriteGating(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{"n.md": "x\n", "Private/p.md": "p\n", "Inbox/i.md": "i\n"})
	for _, op := range opstest.Reg.List() {
		if !op.IsWrite() || op.Toolset == ops.ToolsetAI {
			continue // AI ops propose; their apply is gated in the handler (ai_test.go)
		}
		if op.Toolset != ops.ToolsetWrites {
			t.Errorf("%s writes but is not in the writes toolset", op.Name)
		}
		d := opstest.WantCode(t, env, op.Name, op.Example, errs.CodeWritesDisabled)
		if d["reason"] != "disabled" {
			t.Errorf("%s: %v", op.Name, d)
		}
		if env.Advertised(op) {
			t.Errorf("%s advertised with writes off", op.Name)
		}
	}
	if op, _ := opstest.Reg.Get("write_history"); env.Advertised(op) {
		t.Error("write_history advertised with writes off")
	}
	env.Writes = ops.WriteSettings{Enabled: true, ReadOnly: true}
	if d := opstest.WantCode(t, env, "write_note", `{"path":"n.md","content":"y"}`, errs.CodeWritesDisabled); d["reason"] != "read_only" {
		t.Errorf("read-only: %v", d)
	}
	env.Writes = ops.WriteSettings{Enabled: true, WritePaths: []string{"Inbox/**", "Private/**"}, DenyPaths: []string{"Private/**"}}
	opstest.WantCode(t, env, "write_note", `{"path":"n.md","content":"y","overwrite":true,"apply":true}`, errs.CodePathDenied)
	opstest.WantCode(t, env, "write_note", `{"path":"Private/p.md","content":"y","overwrite":true,"apply":true}`, errs.CodePathDenied)
	opstest.Call[ops.WriteResult](t, env, "write_note", `{"path":"Inbox/i.md","content":"y","overwrite":true,"apply":true}`)
	if opstest.ReadFile(t, env, "n.md") != "x\n" || opstest.ReadFile(t, env, "Private/p.md") != "p\n" || opstest.ReadFile(t, env, "Inbox/i.md") != "y\n" {
		t.Error("policy not applied")
	}
}

func TestReadYourWritesAndAudit(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"n.md": "# N\n\nalpha\n"})
	ctx := context.Background()
	res := opstest.Reg.Call(ctx, env, ops.Caller{Surface: "rest", Session: "sess", Principal: &auth.Principal{Name: "alice", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, Via: auth.ViaToken}}, "edit_note",
		json.RawMessage(`{"path":"n.md","apply":true,"idempotency_key":"k","patches":[{"op":"replace_text","old_text":"alpha","new_text":"zebrafinch"}]}`))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	out := res.Output.(*ops.WriteResult)
	sr := opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"query":"zebrafinch"}`)
	if len(sr.Results) != 1 {
		t.Errorf("the next search does not see the write: %+v", sr)
	}
	n, _ := env.Vaults[0].Index.NoteByPath(ctx, "n.md")
	if n.Etag != out.Etag {
		t.Errorf("index etag %s, note %s", n.Etag, out.Etag)
	}
	// reindex=false leaves the index behind (the next sync catches up).
	opstest.Call[ops.WriteResult](t, env, "edit_note", `{"path":"n.md","apply":true,"reindex":false,"patches":[{"op":"replace_text","old_text":"zebrafinch","new_text":"quokkahop"}]}`)
	if sr := opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"query":"quokkahop"}`); len(sr.Results) != 0 {
		t.Error("reindex=false re-indexed")
	}
	log, err := os.ReadFile(filepath.Join(opstest.Root(env), ".loci", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	var rec vault.WriteRecord
	json.Unmarshal([]byte(lines[0]), &rec)
	if len(lines) != 2 || rec.Surface != "rest" || rec.Session != "sess" || rec.Principal != "alice" || rec.Operation != "edit_note" ||
		rec.IdempotencyKey != "k" || rec.UndoID != out.UndoID || !slices.Equal(rec.Paths, []string{"n.md"}) || rec.Changes[0].NewEtag != out.Etag {
		t.Errorf("audit %d lines: %+v", len(lines), rec)
	}
	if bytes.Contains(log, []byte("zebrafinch")) || bytes.Contains(log, []byte("alpha")) {
		t.Error("the audit log holds note text")
	}
}

// TestWritePathsRefused sends hostile paths to every write operation (found
// in the registry, so operations added later are covered) and checks that
// nothing on disk changed.
func TestWritePathsRefused(t *testing.T) {
	tmp := t.TempDir()
	outside := filepath.Join(tmp, "outside")
	testutil.WriteFiles(t, outside, map[string]string{"secret.md": "secret\n"})
	vroot := filepath.Join(tmp, "vault")
	testutil.WriteFiles(t, vroot, map[string]string{
		"ok.md": "# ok\n", ".obsidian/app.md": "x", ".git/x.md": "x", ".trash/t.md": "x", "notes.txt": "x", "real/r.md": "r\n",
		"graph/logseq/config.edn": "{}", "graph/pages/P.md": "- block\n  id:: 6745a1b2-0000-4000-8000-0000000000aa\n",
	})
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(vroot, "escape.md")); err != nil {
		t.Skip("symlinks unavailable")
	}
	os.Symlink(outside, filepath.Join(vroot, "outdir"))
	os.Symlink(filepath.Join(vroot, "real"), filepath.Join(vroot, "inlink"))
	env := opstest.OpenEnv(t, vroot)
	env.Writes = ops.WriteSettings{Enabled: true}
	hostile := []string{
		"../x.md", "/etc/passwd", "..%2fx.md", "%2e%2e/x.md", `..\x.md`, "a/../../x.md", "escape.md", "outdir/secret.md", "outdir/new.md",
		"inlink/r.md", filepath.Join(outside, "secret.md"), ".obsidian/app.md", ".git/x.md", ".trash/t.md", ".loci/x.md", "notes.txt", "ok", "ok.md\x00.txt",
	}
	snapshot := func() string {
		var b strings.Builder
		filepath.Walk(tmp, func(p string, info os.FileInfo, err error) error {
			if err == nil && !strings.Contains(p, string(filepath.Separator)+".loci") {
				c, _ := os.ReadFile(p)
				fmt.Fprintf(&b, "%s %v %x\n", p, info.Mode(), c)
			}
			return nil
		})
		return b.String()
	}
	before := snapshot()
	tested := map[string]int{}
	for _, op := range opstest.Reg.List() {
		if !op.IsWrite() {
			continue
		}
		var fields []string
		for _, f := range []string{"path", "to", "folder"} {
			if _, ok := op.InputSchema.Properties[f]; ok {
				fields = append(fields, f)
			}
		}
		for _, field := range fields {
			for _, p := range hostile {
				in := map[string]any{}
				json.Unmarshal([]byte(op.Example), &in)
				for _, k := range []string{"note", "name", "page", "parent", "sibling", "position"} {
					delete(in, k)
				}
				in["apply"] = true
				if _, ok := op.InputSchema.Properties["path"]; ok && field != "path" {
					in["path"] = "ok.md"
				}
				if field == "folder" && (strings.HasSuffix(p, ".md") || p == "ok") {
					continue // a folder may be named so
				}
				in[field] = p
				code, _ := opstest.CallErr(t, env, op.Name, opstest.JS(in))
				if code != errs.CodePathDenied {
					t.Errorf("%s %s=%q: %s, want path_denied", op.Name, field, p, code)
				}
				tested[op.Name]++
			}
		}
	}
	for _, name := range []string{"edit_note", "write_note", "delete_note", "relocate_note", "improve_frontmatter", "capture_note", "update_page", "delete_page", "create_block", "move_block"} {
		if tested[name] == 0 {
			t.Errorf("%s was not exercised", name)
		}
	}
	if after := snapshot(); after != before {
		t.Error("a refused write changed files")
	}
}
