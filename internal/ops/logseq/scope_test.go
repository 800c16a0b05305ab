package logseq_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// TestDeleteBlockScope: deleting a block with children is destructive, a
// leaf block a write.
func TestDeleteBlockScope(t *testing.T) {
	env := logseqEnv(t)
	writer := &auth.Principal{Name: "writer", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, Via: auth.ViaToken}
	call := func(p *auth.Principal, in string) ops.Result {
		return opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "rest", Principal: p}, "delete_block", json.RawMessage(in))
	}
	// S1 has a child (S1a).
	res := call(writer, `{"uuid":"22222222-0000-4000-8000-000000000001","apply":true}`)
	if res.Err == nil || res.Err.Code != errs.CodeForbidden {
		t.Fatalf("recursive delete as a writer: %+v", res.Err)
	}
	// Lifting the children up is no recursive delete.
	if res := call(writer, `{"uuid":"22222222-0000-4000-8000-000000000001","recursive":false}`); res.Err != nil {
		t.Fatalf("delete keeping the children, as a writer: %v", res.Err)
	}
	// S1a is a leaf.
	if res := call(writer, `{"uuid":"22222222-0000-4000-8000-000000000002","apply":true}`); res.Err != nil {
		t.Fatalf("leaf delete: %v", res.Err)
	}
	// Now S1 is a leaf too.
	if res := call(writer, `{"uuid":"22222222-0000-4000-8000-000000000001","apply":true}`); res.Err != nil {
		t.Fatalf("delete of S1 after its child went: %v", res.Err)
	}
	editor := &auth.Principal{Name: "editor", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeDestructive}, Via: auth.ViaToken, Confirm: auth.PolicyConfirm}
	res = call(editor, `{"uuid":"11111111-0000-4000-8000-000000000001","apply":true}`)
	if res.Err == nil || res.Err.Code != errs.CodeConfirmationRequired {
		t.Fatalf("recursive delete with confirm policy: %+v", res.Err)
	}
}
