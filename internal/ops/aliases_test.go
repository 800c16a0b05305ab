package ops_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

const uuid1 = "11111111-0000-4000-8000-000000000001"

// aliasCases: each seed alias, an input using it, and the input in loci's
// own names it must decode to.
var aliasCases = []struct {
	op, alias, in, want string
}{
	{"get_page", "page_name", `{"page_name":"Loci"}`, `{"name":"Loci"}`},
	{"update_page", "page_name", `{"page_name":"Loci","append":["x"]}`, `{"name":"Loci","append":["x"]}`},
	{"delete_page", "page_name", `{"page_name":"Loci"}`, `{"name":"Loci"}`},
	{"create_block", "page_name", `{"page_name":"Loci","content":"x"}`, `{"page":"Loci","content":"x"}`},
	{"get_block", "block_uuid", `{"block_uuid":"` + uuid1 + `"}`, `{"uuid":"` + uuid1 + `"}`},
	{"update_block", "block_uuid", `{"block_uuid":"` + uuid1 + `","content":"x"}`, `{"uuid":"` + uuid1 + `","content":"x"}`},
	{"delete_block", "block_uuid", `{"block_uuid":"` + uuid1 + `"}`, `{"uuid":"` + uuid1 + `"}`},
	{"move_block", "block_uuid", `{"block_uuid":"` + uuid1 + `","page":"Loci"}`, `{"uuid":"` + uuid1 + `","page":"Loci"}`},
	{"get_block", "include_children", `{"uuid":"` + uuid1 + `","include_children":true}`, `{"uuid":"` + uuid1 + `"}`},
	{"get_block", "include_children", `{"uuid":"` + uuid1 + `","include_children":false}`, `{"uuid":"` + uuid1 + `","depth":1}`},
	{"get_page", "include_blocks", `{"name":"Loci","include_blocks":true}`, `{"name":"Loci"}`},
	{"get_page", "include_blocks", `{"name":"Loci","include_blocks":false}`, `{"name":"Loci","depth":1}`},
	{"search_notes", "include_blocks", `{"query":"x","include_blocks":true}`, `{"query":"x","group_by":"section"}`},
	{"search_notes", "include_blocks", `{"query":"x","include_blocks":false}`, `{"query":"x"}`},
	{"update_block", "replace_content", `{"uuid":"` + uuid1 + `","content":"x","replace_content":true}`, `{"uuid":"` + uuid1 + `","content":"x"}`},
	{"delete_page", "force", `{"name":"Loci","force":true}`, `{"name":"Loci"}`},
	{"write_note", "reindex_after_apply", `{"path":"a.md","content":"x","reindex_after_apply":false}`, `{"path":"a.md","content":"x","reindex":false}`},
	{"edit_note", "reindex_after_apply", `{"path":"a.md","patches":[{"op":"delete_lines","start_line":1}],"reindex_after_apply":true}`, `{"path":"a.md","patches":[{"op":"delete_lines","start_line":1}],"reindex":true}`},
	{"capture_note", "reindex_after_apply", `{"content":"x","reindex_after_apply":false}`, `{"content":"x","reindex":false}`},
	{"relocate_note", "reindex_after_apply", `{"path":"a.md","to":"b.md","reindex_after_apply":false}`, `{"path":"a.md","to":"b.md","reindex":false}`},
	{"improve_frontmatter", "reindex_after_apply", `{"path":"a.md","reindex_after_apply":false}`, `{"path":"a.md","reindex":false}`},
	{"relocate_note", "overwrite", `{"path":"a.md","to":"b.md","overwrite":false}`, `{"path":"a.md","to":"b.md"}`},
	{"edit_note", "lines", `{"path":"a.md","patches":[{"op":"insert_lines","line":1,"lines":["a","b"]}]}`, `{"path":"a.md","patches":[{"op":"insert_lines","line":1,"content":"a\nb"}]}`},
	{"edit_note", "lines", `{"path":"a.md","patches":[{"op":"replace_lines","start_line":1,"lines":"one"}]}`, `{"path":"a.md","patches":[{"op":"replace_lines","start_line":1,"content":"one"}]}`},
	{"ai_metadata", "key", `{"paths":["a.md"],"fields":[{"key":"status","type":"string"}]}`, `{"paths":["a.md"],"fields":[{"name":"status","type":"string"}]}`},
	{"ai_metadata", "apply_mode", `{"paths":["a.md"],"fields":[{"name":"s","type":"string"}],"apply_mode":"overwrite"}`, `{"paths":["a.md"],"fields":[{"name":"s","type":"string"}],"mode":"overwrite"}`},
	{"ai_tag", "apply_mode", `{"paths":["a.md"],"apply_mode":"replace"}`, `{"paths":["a.md"],"mode":"replace"}`},
	{"ai_metadata", "scope", `{"scope":{"kind":"paths","paths":["a.md"]},"fields":[{"name":"s","type":"string"}]}`, `{"paths":["a.md"],"fields":[{"name":"s","type":"string"}]}`},
	{"ai_ask", "scope", `{"question":"q","scope":{"kind":"glob","path_glob":"Specs/**"}}`, `{"question":"q","glob":"Specs/**"}`},
	{"ai_ask", "scope", `{"question":"q","scope":{"kind":"tag","tag":"x"}}`, `{"question":"q","tag":"x"}`},
	{"ai_ask", "scope", `{"question":"q","scope":{"kind":"query","q":"foo","limit":5}}`, `{"question":"q","query":"foo","max_notes":5}`},
	{"ai_ask", "scope", `{"question":"q","scope":{"kind":"note","path":"a.md","include_linked":1}}`, `{"question":"q","note":"a.md","include_linked":1}`},
}

// TestAliasesMap checks each alias through the real decoder: the input
// using it decodes to the same value as the input in loci's names, and
// every alias in the registry is covered here.
func TestAliasesMap(t *testing.T) {
	reg := catalog.All()
	covered := map[string]bool{}
	for _, c := range aliasCases {
		op, ok := reg.Get(c.op)
		if !ok {
			t.Fatalf("no op %s", c.op)
		}
		got, err := op.Decode(json.RawMessage(c.in))
		if err != nil {
			t.Errorf("%s %s: %v", c.op, c.in, err)
			continue
		}
		want, err := op.Decode(json.RawMessage(c.want))
		if err != nil {
			t.Fatalf("%s %s (canonical): %v", c.op, c.want, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s decodes to %+v, want %+v", c.op, c.in, got, want)
		}
		covered[c.op+"."+c.alias] = true
	}
	for _, op := range reg.List() {
		for _, a := range op.Aliases {
			if !covered[op.Name+"."+a.Name] && !strings.HasPrefix(op.Name, "ai_") && a.Name != "reindex_after_apply" {
				t.Errorf("alias %s of %s has no case", a.Name, op.Name)
			}
			if _, clash := op.InputSchema.Properties[a.Name]; clash && a.Within == "" {
				t.Errorf("alias %s of %s is also a field", a.Name, op.Name)
			}
			for c := range strings.SplitSeq(a.Canonical, ", ") {
				if c == "" || a.Within != "" {
					continue
				}
				if _, has := op.InputSchema.Properties[c]; !has {
					t.Errorf("alias %s of %s maps to %s, which it lacks", a.Name, op.Name, c)
				}
			}
		}
		// The advertised schema keeps loci's names only.
		for name := range op.InputSchema.Properties {
			for _, a := range op.Aliases {
				if a.Name == name && a.Within == "" {
					t.Errorf("%s advertises alias %s", op.Name, name)
				}
			}
		}
	}
	// Every AI op with a scope takes the indx scope object.
	for _, name := range []string{"ai_ask", "ai_extract", "ai_metadata"} {
		op, _ := reg.Get(name)
		if !hasAlias(op, "scope") {
			t.Errorf("%s lacks the scope alias", name)
		}
	}
	// recursive is a field of its own (delete_block), never an alias here.
	for _, op := range reg.List() {
		if hasAlias(op, "recursive") {
			t.Errorf("%s: recursive must not be an alias", op.Name)
		}
	}
}

func hasAlias(op *ops.Op, name string) bool {
	for _, a := range op.Aliases {
		if a.Name == name {
			return true
		}
	}
	return false
}

// TestAliasRefusals: an alias and its canonical field disagreeing, values
// loci cannot honour, and unknown parameters are all validation_failed.
func TestAliasRefusals(t *testing.T) {
	reg := catalog.All()
	cases := []struct{ op, in, want string }{
		{"get_page", `{"page_name":"A","name":"B"}`, "page_name (an alias of name) and name disagree"},
		{"get_block", `{"block_uuid":"` + uuid1 + `","uuid":"22222222-0000-4000-8000-000000000001"}`, "block_uuid (an alias of uuid) and uuid disagree"},
		{"get_block", `{"uuid":"` + uuid1 + `","include_children":false,"depth":3}`, "include_children (an alias of depth) and depth disagree"},
		{"write_note", `{"path":"a.md","content":"x","reindex_after_apply":false,"reindex":true}`, "reindex_after_apply (an alias of reindex) and reindex disagree"},
		{"edit_note", `{"path":"a.md","patches":[{"op":"insert_lines","line":1,"lines":["a"],"content":"b"}]}`, "patches[0]: lines (an alias of content) and content disagree"},
		{"ai_metadata", `{"paths":["a.md"],"fields":[{"key":"a","name":"b","type":"string"}]}`, "key (an alias of name) and name disagree"},
		{"ai_ask", `{"question":"q","glob":"a/**","scope":{"kind":"glob","path_glob":"b/**"}}`, "scope (an alias of glob) and glob disagree"},
		{"ai_ask", `{"question":"q","scope":{"kind":"everything"}}`, `scope kind "everything" is not one of`},
		{"ai_ask", `{"question":"q","scope":{"kind":"query","q":"x","mode":"hybrid"}}`, "scope kind query does not take mode"},
		{"ai_ask", `{"question":"q","scope":"a.md"}`, "scope must be an object"},
		{"update_block", `{"uuid":"` + uuid1 + `","content":"x","replace_content":false}`, "replace_content: false is not supported"},
		{"relocate_note", `{"path":"a.md","to":"b.md","overwrite":true}`, "overwrite: true is not supported"},
		{"edit_note", `{"path":"a.md","patches":[{"op":"insert_lines","line":1,"lines":[1]}]}`, "lines must be a list of strings"},
		{"get_block", `{"uuid":"` + uuid1 + `","include_children":"yes"}`, "expected a boolean"},
		// Unknown parameters are still refused, aliases or not.
		{"get_page", `{"page_title":"A"}`, "page_title"},
		{"read_note", `{"page_name":"A"}`, "page_name"},
		{"edit_note", `{"path":"a.md","patches":[{"op":"insert_lines","line":1,"text":"a"}]}`, "text"},
	}
	for _, c := range cases {
		op, _ := reg.Get(c.op)
		_, err := op.Decode(json.RawMessage(c.in))
		e := errs.As(err)
		if e == nil || e.Code != errs.CodeInvalidInput || !strings.Contains(e.Message, c.want) {
			t.Errorf("%s %s: got %v, want validation_failed with %q", c.op, c.in, err, c.want)
		}
	}
}

// TestAliasesThroughDispatch runs aliased calls end to end on a Logseq
// graph and an Obsidian note: reads answer as with loci's names, and a
// write with AILSS's names changes the note.
func TestAliasesThroughDispatch(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		"graph/logseq/config.edn": "{:meta/version 1}\n",
		"graph/pages/Loci.md":     "- Top\n  id:: " + uuid1 + "\n\t- Child\n\t\t- Grandchild\n",
		"Note.md":                 "# Note\n\nbody\n",
	})
	type page struct {
		Path   string `json:"path"`
		Blocks []struct {
			Children []any `json:"children"`
		} `json:"blocks"`
	}
	var p page
	res := opstest.Reg.Call(t.Context(), env, ops.Caller{Surface: "test"}, "get_page", json.RawMessage(`{"page_name":"loci","include_blocks":false}`))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	b, _ := json.Marshal(res.Output)
	json.Unmarshal(b, &p)
	if p.Path != "graph/pages/Loci.md" || len(p.Blocks) != 1 || len(p.Blocks[0].Children) != 0 {
		t.Errorf("get_page by page_name, include_blocks false: %s", b)
	}
	res = opstest.Reg.Call(t.Context(), env, ops.Caller{Surface: "test"}, "get_block", json.RawMessage(`{"block_uuid":"`+uuid1+`"}`))
	if res.Err != nil || !strings.Contains(jsonOf(res.Output), "Grandchild") {
		t.Errorf("get_block by block_uuid: %v %s", res.Err, jsonOf(res.Output))
	}
	w := opstest.Call[ops.WriteResult](t, env, "edit_note", `{"path":"Note.md","patches":[{"op":"insert_lines","line":4,"lines":["one","two"]}],"apply":true,"reindex_after_apply":false}`)
	if got := opstest.ReadFile(t, env, "Note.md"); got != "# Note\n\nbody\none\ntwo\n" || !w.Applied {
		t.Errorf("edit_note with lines: %q %+v", got, w)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
