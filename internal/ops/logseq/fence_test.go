package logseq_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// TestLogseqReadFences: a fenced page is not listed, not found by name or
// path, its blocks are not found by uuid, and its references to a visible
// block are not listed.
func TestLogseqReadFences(t *testing.T) {
	env := opstest.DemoEnv(t)
	call := func(name, in string) (string, *errs.Error) {
		res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, name, json.RawMessage(in))
		if res.Err != nil {
			return res.Err.Message, res.Err
		}
		b, _ := json.Marshal(res.Output)
		return string(b), nil
	}
	// Unfenced, the journal references the Loci block.
	if js, _ := call("get_block", `{"uuid": "`+lociUUID+`"}`); !strings.Contains(js, "journals/2026_11_20.md") {
		t.Fatalf("get_block without fences = %s", js)
	}
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"graph/journals/**"}}
	js, _ := call("list_pages", `{"include_journals": true}`)
	if strings.Contains(js, "journals/") || !strings.Contains(js, "Loci") {
		t.Errorf("list_pages = %s", js)
	}
	for _, in := range []string{`{"name": "2026-11-20"}`, `{"name": "Nov 20th, 2026"}`, `{"path": "graph/journals/2026_11_20.md"}`} {
		if js, e := call("get_page", in); e == nil || e.Code != errs.CodeNotFound || (strings.Contains(js, "journals/") && !strings.Contains(in, "journals/")) {
			t.Errorf("get_page %s = %s %v", in, js, e)
		}
	}
	js, e := call("get_block", `{"uuid": "`+lociUUID+`"}`)
	if e != nil || strings.Contains(js, "journals/") || !strings.Contains(js, "graph/pages/Loci.md") {
		t.Errorf("get_block = %s %v", js, e)
	}
	// A block of a fenced page is not there.
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"graph/pages/Loci.md"}}
	if js, e := call("get_block", `{"uuid": "`+lociUUID+`"}`); e == nil || e.Code != errs.CodeBlockNotFound {
		t.Errorf("get_block of a fenced page = %s %v", js, e)
	}
}
