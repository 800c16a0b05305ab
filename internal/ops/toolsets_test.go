package ops_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// callAs runs name through the pipeline as p and returns its error code
// ("" on success) and details.
func callCode(t *testing.T, env *ops.Env, p *auth.Principal, name, input string) (string, map[string]any) {
	t.Helper()
	res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test", Principal: p}, name, json.RawMessage(input))
	if res.Err == nil {
		return "", nil
	}
	return res.Err.Code, res.Err.Details
}

// TestServerToolsets: Env.Toolsets limits what the server runs for every
// principal, the owner included; a principal's own toolsets narrow
// further; Permits and Offered agree with what the pipeline refuses.
func TestServerToolsets(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"a.md": "# A\n\nalpha\n"})
	editor := &auth.Principal{Name: "editor", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, Via: auth.ViaToken}
	readOnlyTools := &auth.Principal{Name: "narrow", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, Toolsets: []string{"read"}, Via: auth.ViaToken}
	capture := `{"title":"hello","apply":true}`

	// No server toolsets: the owner and the editor may capture.
	for _, p := range []*auth.Principal{nil, auth.Owner(auth.ViaOwnerToken), editor} {
		if code, d := callCode(t, env, p, "capture_note", capture); code != "" {
			t.Errorf("%s: capture_note without server toolsets: %s %v", p.Label(), code, d)
		}
	}
	// The principal's own toolsets narrow: capture_note is in write.
	code, d := callCode(t, env, readOnlyTools, "capture_note", capture)
	if code != errs.CodeForbidden || d["missing_toolset"] != "write" {
		t.Errorf("narrow principal: %s %v, want forbidden naming the write toolset", code, d)
	}

	env.Toolsets = []string{"read"}
	for _, p := range []*auth.Principal{nil, auth.Owner(auth.ViaOwnerToken), auth.Owner(auth.ViaLocal), editor} {
		code, d := callCode(t, env, p, "capture_note", capture)
		if code != errs.CodeForbidden || d["missing_toolset"] != "write" {
			t.Errorf("%s: capture_note with server toolsets [read]: %q %v, want forbidden (missing_toolset write)", p.Label(), code, d)
		}
		if code, d := callCode(t, env, p, "search_notes", `{"query":"alpha"}`); code != "" {
			t.Errorf("%s: search_notes with server toolsets [read]: %s %v", p.Label(), code, d)
		}
	}
	op, _ := opstest.Reg.Get("capture_note")
	if env.Permits(nil, op) == nil || env.Offered(op, nil) {
		t.Error("capture_note is permitted or offered to the owner although the server offers only read")
	}
	search, _ := opstest.Reg.Get("search_notes")
	if env.Permits(nil, search) != nil || !env.Offered(search, readOnlyTools) {
		t.Error("search_notes is not offered under server toolsets [read]")
	}
}

// TestOfferedFollowsScopes: what a principal is offered is exactly what
// its scopes and toolsets let the pipeline run.
func TestOfferedFollowsScopes(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"a.md": "# A\n"})
	reader := &auth.Principal{Name: "reader", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken}
	writer := &auth.Principal{Name: "writer", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, Via: auth.ViaToken}
	var readerOps, writerOps, ownerOps []string
	for _, op := range opstest.Reg.List() {
		if env.Offered(op, reader) {
			readerOps = append(readerOps, op.Name)
		}
		if env.Offered(op, writer) {
			writerOps = append(writerOps, op.Name)
		}
		if env.Offered(op, nil) {
			ownerOps = append(ownerOps, op.Name)
		}
	}
	for _, name := range []string{"search_notes", "read_note", "get_links"} {
		if !slices.Contains(readerOps, name) {
			t.Errorf("reader is not offered %s", name)
		}
	}
	for _, name := range []string{"edit_note", "capture_note", "delete_note", "undo"} {
		if slices.Contains(readerOps, name) {
			t.Errorf("reader is offered %s", name)
		}
	}
	if !slices.Contains(writerOps, "edit_note") || slices.Contains(writerOps, "delete_note") {
		t.Errorf("writer: edit_note offered %v, delete_note offered %v; want true, false",
			slices.Contains(writerOps, "edit_note"), slices.Contains(writerOps, "delete_note"))
	}
	if !slices.Contains(ownerOps, "delete_note") || len(ownerOps) <= len(writerOps) || len(writerOps) <= len(readerOps) {
		t.Errorf("owner %d, writer %d, reader %d operations: want strictly fewer for fewer scopes", len(ownerOps), len(writerOps), len(readerOps))
	}
	// Every operation not offered to the reader is refused when called.
	for _, op := range opstest.Reg.List() {
		if env.Permits(reader, op) == nil {
			continue
		}
		if code, _ := callCode(t, env, reader, op.Name, `{}`); code != errs.CodeForbidden {
			t.Errorf("reader calling hidden %s: %q, want forbidden", op.Name, code)
		}
	}
}

func TestParseToolsets(t *testing.T) {
	got, err := ops.ParseToolsets([]string{"write, read", "READ", "", "ai"})
	if err != nil || !slices.Equal(got, []string{"read", "write", "ai"}) {
		t.Errorf("ParseToolsets: %v %v, want [read write ai]", got, err)
	}
	if _, err := ops.ParseToolsets([]string{"read,writes"}); errs.As(err).Code != errs.CodeInvalidInput {
		t.Errorf("unknown toolset: %v, want validation_failed", err)
	}
	if got, err := ops.ParseToolsets(nil); err != nil || got != nil {
		t.Errorf("no toolsets: %v %v, want nil", got, err)
	}
}
