package write_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
)

// TestCaptureIDsAreUnique: two captures in the same second (the clock is
// pinned) get different ids, and so does a capture whose second is taken
// by a note already in the vault; frontmatter_validate reports notes that
// share an id.
func TestCaptureIDsAreUnique(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{
		// A note already holds the id the pinned clock would give.
		"Old.md": "---\nid: 20261120101530\n---\n# Old\n",
	})
	var ids []string
	for _, title := range []string{"First", "Second", "Third"} {
		res := opstest.Call[ops.WriteResult](t, env, "capture_note", opstest.JS(map[string]any{"title": title, "apply": true}))
		text := opstest.ReadFile(t, env, res.Path)
		id, _, _ := strings.Cut(strings.TrimPrefix(text, "---\nid: "), "\n")
		ids = append(ids, id)
	}
	seen := map[string]bool{"20261120101530": true}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("ids %v repeat (or reuse Old.md's)", ids)
		}
		seen[id] = true
	}
	if ids[0] != "20261120101531" || ids[1] != "20261120101532" {
		t.Errorf("ids = %v, want consecutive seconds after the taken one", ids)
	}
	// A preview does not use up its id: preview then apply show the same.
	prev := opstest.Call[ops.WriteResult](t, env, "capture_note", opstest.JS(map[string]any{"title": "Fourth"}))
	app := opstest.Call[ops.WriteResult](t, env, "capture_note", opstest.JS(map[string]any{"title": "Fourth", "apply": true}))
	if prev.Changes[0].Diff == "" || !strings.Contains(prev.Changes[0].Diff, "id: 20261120101534") || !strings.Contains(opstest.ReadFile(t, env, app.Path), "id: 20261120101534") {
		t.Errorf("preview and apply disagree:\n%s\n%s", prev.Changes[0].Diff, opstest.ReadFile(t, env, app.Path))
	}

	// Two notes with one id are both reported.
	os.WriteFile(filepath.Join(opstest.Root(env), "Copy.md"), []byte("---\nid: 20261120101530\n---\n# Copy\n"), 0o644)
	env.Sync(context.Background(), env.Vaults[0], index.SyncOptions{})
	out := opstest.Call[read.ValidateOut](t, env, "frontmatter_validate", `{}`)
	if out.Counts["duplicate_id"] != 2 {
		t.Fatalf("duplicate_id count = %d, issues %+v", out.Counts["duplicate_id"], out.Issues)
	}
	var dup []string
	for _, is := range out.Issues {
		if is.Rule == "duplicate_id" {
			dup = append(dup, is.Path+": "+is.Message)
		}
	}
	if strings.Join(dup, "|") != "Copy.md: id 20261120101530 is also the id of Old.md|Old.md: id 20261120101530 is also the id of Copy.md" {
		t.Errorf("duplicate_id issues: %v", dup)
	}
}

// TestNewNamesMustBePortable: a folder named like a note, a Windows device
// name or a name of spaces is refused with path_denied before anything is
// created, by capture_note's folder and by every path a write creates.
// Existing folders with such names stay writable, by capture_note too.
func TestNewNamesMustBePortable(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"Home.md": "# Home\n", "Legacy./Old.md": "# Old\n"})
	for _, folder := range []string{"Home.md", "Away.md", "Inbox/notes.MD", "CON", "aux", "lpt1.txt", "   ", "Inbox/ ", "Trailing.", "/Notes", "/Notes/"} {
		code, details := opstest.CallErr(t, env, "capture_note", opstest.JS(map[string]any{"title": "X", "folder": folder, "apply": true}))
		if code != errs.CodePathDenied || details["reason"] == nil {
			t.Errorf("capture folder %q: %s %v, want path_denied with a reason", folder, code, details)
		}
	}
	// Refused as a folder named like a note, not for another reason.
	if _, d := opstest.CallErr(t, env, "capture_note", `{"title":"X","folder":"Away.md","apply":true}`); !strings.Contains(fmt.Sprint(d["reason"]), "named like a note") {
		t.Errorf("folder Away.md: %v", d)
	}
	// Captured into an existing folder whatever its name (as write_note
	// writes there), with or without a trailing slash.
	for _, folder := range []string{"Legacy.", "Legacy./", `Legacy.\`} {
		res := opstest.Call[ops.WriteResult](t, env, "capture_note", opstest.JS(map[string]any{"title": "New " + folder, "folder": folder, "apply": true}))
		if !strings.HasPrefix(res.Path, "Legacy./New Legacy") {
			t.Errorf("capture into %q: %s", folder, res.Path)
		}
	}
	for _, p := range []string{"Home.md/x.md", "CON.md", "nul/x.md", "A /x.md", "x./y.md"} {
		code, _ := opstest.CallErr(t, env, "write_note", opstest.JS(map[string]any{"path": p, "content": "x", "apply": true}))
		if code != errs.CodePathDenied {
			t.Errorf("write_note %q: %s, want path_denied", p, code)
		}
	}
	entries, _ := os.ReadDir(opstest.Root(env))
	for _, e := range entries {
		if e.IsDir() && e.Name() != "Legacy." && !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a folder was created: %s", e.Name())
		}
	}
	// A title that is a device name (with an extension, or a superscript
	// digit) still gives a note: the file name is made acceptable.
	for title, want := range map[string]string{"CON.txt": "Inbox/CON_.txt.md", "aux.notes": "Inbox/aux_.notes.md", "COM¹": "Inbox/COM¹_.md"} {
		res := opstest.Call[ops.WriteResult](t, env, "capture_note", opstest.JS(map[string]any{"title": title, "apply": true}))
		if res.Path != want || !opstest.Exists(env, want) {
			t.Errorf("capture %q: %s, want %s", title, res.Path, want)
		}
	}
	// What exists already can still be edited.
	opstest.Call[ops.WriteResult](t, env, "write_note", opstest.JS(map[string]any{"path": "Legacy./Old.md", "content": "# Old\nmore\n", "if_match": opstest.EtagOf(t, env, "Legacy./Old.md"), "apply": true}))

	// A folder named like a note (made by hand) is a folder, not a 500.
	os.MkdirAll(filepath.Join(opstest.Root(env), "Dir.md"), 0o755)
	code, _ := opstest.CallErr(t, env, "read_note", `{"path":"Dir.md"}`)
	if code != errs.CodeNotFound {
		t.Errorf("read_note of a folder: %s, want note_not_found", code)
	}
}

// TestGuardErrorsNameTheFieldPassed: a bad expected_sha256 is reported as
// expected_sha256 with the value sent, not as an empty if_match.
func TestGuardErrorsNameTheFieldPassed(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"A.md": "a\n"})
	res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, "write_note", json.RawMessage(`{"path":"A.md","content":"b","expected_sha256":"deadbeef","apply":true}`))
	if res.Err == nil || res.Err.Code != errs.CodeInvalidInput {
		t.Fatalf("got %v", res.Err)
	}
	if !strings.Contains(res.Err.Message, `expected_sha256 "deadbeef"`) || res.Err.Details["expected_sha256"] != "deadbeef" || res.Err.Details["field"] != "expected_sha256" {
		t.Errorf("message %q details %v", res.Err.Message, res.Err.Details)
	}
	res = opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, "write_note", json.RawMessage(`{"path":"A.md","if_match":"xyz","content":"c"}`))
	if res.Err == nil || !strings.Contains(res.Err.Message, `if_match "xyz"`) {
		t.Errorf("if_match: %v", res.Err)
	}
}
