package aiops_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// TestAIScopeHonoursReadFences: a note the caller's read fence hides never
// reaches a prompt, whichever way the scope would bring it in (glob, tag,
// query, a linked note, the vault's tag list), and naming it is
// note_not_found.
func TestAIScopeHonoursReadFences(t *testing.T) {
	files := map[string]string{
		"HR/Pay.md":       "# Pay\n\nHR-SECRET-PAY atlas figures #money\n",
		"Private/Plan.md": "# Plan\n\nPRIVATE-PLAN-TEXT atlas #planning\n",
		"Public/Atlas.md": "# Atlas\n\nAtlas figures, see [[Pay]] and [[Plan]]. #project\n",
		"Public/Notes.md": "# Notes\n\nMore about atlas. #project\n",
	}
	env, srv := aiEnvWith(t, files, func(s *ai.Settings) { s.DenyGlobs = nil })
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"HR/**"}}
	srv.Handler = func(aitest.Request) aitest.Reply {
		return aitest.Reply{Content: `{"supported": false, "answer": "", "citations": [], "notes": []}`}
	}
	p := &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeAI}, ReadPaths: []string{"Public/**"}, Via: auth.ViaToken}
	call := func(who *auth.Principal, name, in string) *errs.Error {
		res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test", Principal: who}, name, json.RawMessage(in))
		return res.Err
	}
	for _, in := range []string{
		`{"question": "atlas figures?", "glob": "**"}`,
		`{"question": "atlas figures?", "query": "atlas figures pay plan"}`,
		`{"question": "atlas figures?", "note": "Public/Atlas.md", "include_linked": 2}`,
	} {
		if e := call(p, "ai_ask", in); e != nil {
			t.Fatalf("ai_ask %s: %v", in, e)
		}
	}
	call(p, "ai_tag", `{"glob": "Public/**"}`) // its prompt holds the vault's tags; the answer does not matter
	if e := call(p, "ai_ask", `{"question": "pay?", "paths": ["HR/Pay.md"]}`); e == nil || e.Code != errs.CodeNotFound {
		t.Errorf("ai_ask naming a fenced note = %v", e)
	}
	if len(srv.Requests) < 4 {
		t.Fatalf("%d requests", len(srv.Requests))
	}
	for _, r := range srv.Requests {
		for _, m := range r.Messages {
			for _, w := range []string{"HR-SECRET", "PRIVATE-PLAN", "HR/Pay.md", "Private/Plan.md", "money", "planning"} {
				if strings.Contains(m.Content, w) {
					t.Errorf("a fenced note reached the provider (%q): %s", w, m.Content)
				}
			}
		}
	}
	// The owner (vault fence only) still reaches Private, never HR.
	n := len(srv.Requests)
	if e := call(nil, "ai_ask", `{"question": "atlas?", "glob": "**"}`); e != nil {
		t.Fatal(e)
	}
	var all strings.Builder
	for _, r := range srv.Requests[n:] {
		for _, m := range r.Messages {
			all.WriteString(m.Content)
		}
	}
	if s := all.String(); !strings.Contains(s, "PRIVATE-PLAN") || strings.Contains(s, "HR-SECRET") {
		t.Errorf("owner prompt: private %v, hr %v", strings.Contains(s, "PRIVATE-PLAN"), strings.Contains(s, "HR-SECRET"))
	}
}
