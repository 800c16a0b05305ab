package ops_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

func confirming(name string, scopes ...auth.Scope) *auth.Principal {
	p := agent(name, scopes...)
	p.Confirm = auth.PolicyConfirm
	return p
}

var editorScopes = []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeDestructive}

// events records the confirmation events of the bus.
type events struct {
	mu    sync.Mutex
	kinds []string
}

func (e *events) add(ev ops.Event) {
	if !strings.HasPrefix(ev.Kind, "confirmation.") {
		return
	}
	e.mu.Lock()
	e.kinds = append(e.kinds, ev.Kind+":"+fmt.Sprint(ev.Data["state"]))
	e.mu.Unlock()
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.kinds, " ")
}

// TestConfirmationFlow: a destructive call of a principal whose policy is
// confirm waits for a human, then runs exactly once.
func TestConfirmationFlow(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"Inbox/Old.md": "# Old\n", "Links.md": "see [[Old]]\n"})
	clk := newClock()
	env.Confirmations = ops.NewConfirmations(clk.Now)
	var evs events
	defer env.SubscribeEvents(evs.add)()
	editor := confirming("editor", editorScopes...)
	del := `{"path":"Inbox/Old.md","apply":true}`

	// A preview needs no confirmation.
	wantOK(t, callAs(env, editor, "delete_note", `{"path":"Inbox/Old.md"}`))
	// Applying does: an id, when it expires, what will happen, the diff.
	d := wantErr(t, callAs(env, editor, "delete_note", del), errs.CodeConfirmationRequired)
	id, _ := d["confirmation_id"].(string)
	if !strings.HasPrefix(id, "cf_") || len(id) != 35 {
		t.Fatalf("confirmation_id %q", id)
	}
	if d["expires_at"] != clk.Now().Add(5*time.Minute).Format(time.RFC3339) {
		t.Errorf("expires_at %v", d["expires_at"])
	}
	sum, _ := d["summary"].(string)
	if !strings.Contains(sum, "editor asks to run delete_note") || !strings.Contains(sum, "move Inbox/Old.md to the trash (.trash/Inbox/Old.md)") ||
		!strings.Contains(sum, "Links.md") {
		t.Errorf("summary: %s", sum)
	}
	prev, _ := d["preview"].(map[string]any)
	if ch, _ := prev["changes"].([]any); len(ch) != 1 || prev["applied"] != false || ch[0].(map[string]any)["action"] != "delete" {
		t.Errorf("preview: %v", prev)
	}
	if !opstest.Exists(env, "Inbox/Old.md") {
		t.Fatal("the note went before a human confirmed")
	}
	// Asking again before a decision gives the same id; so does the
	// retry with the id.
	if d := wantErr(t, callAs(env, editor, "delete_note", del), errs.CodeConfirmationRequired); d["confirmation_id"] != id {
		t.Errorf("second ask: %v, want the same id", d["confirmation_id"])
	}
	withID := `{"path":"Inbox/Old.md","apply":true,"confirmation_id":"` + id + `"}`
	if d := wantErr(t, callAs(env, editor, "delete_note", withID), errs.CodeConfirmationRequired); d["confirmation_id"] != id || d["state"] != "pending" {
		t.Errorf("retry before a decision: %v", d)
	}
	// Only a principal with admin lists or decides; never the one that asked.
	if _, err := env.ListConfirmations(editor, false); err == nil || err.Code != errs.CodeForbidden {
		t.Errorf("editor lists: %v", err)
	}
	list, err := env.ListConfirmations(nil, false)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Principal != "editor" || list[0].Operation != "delete_note" || list[0].Changes[0].Path != "Inbox/Old.md" {
		t.Fatalf("list: %+v %v", list, err)
	}
	selfAdmin := confirming("editor", append(editorScopes, auth.ScopeAdmin)...)
	if _, err := env.DecideConfirmation(selfAdmin, id, ops.DecisionConfirm); err == nil || err.Code != errs.CodeForbidden {
		t.Errorf("the requester confirmed its own call: %v", err)
	}
	if _, err := env.DecideConfirmation(nil, id, "maybe"); err == nil || err.Code != errs.CodeInvalidInput {
		t.Errorf("decision maybe: %v", err)
	}
	cf, err := env.DecideConfirmation(nil, id, ops.DecisionConfirm)
	if err != nil || cf.State != ops.ConfirmConfirmed || cf.DecidedBy != "owner" {
		t.Fatalf("confirm: %+v %v", cf, err)
	}
	if _, err := env.DecideConfirmation(nil, id, ops.DecisionDeny); err == nil || err.Code != errs.CodeConfirmationInvalid {
		t.Errorf("decided twice: %v", err)
	}

	// The id is bound to the principal, the operation and the arguments.
	other := confirming("other", editorScopes...)
	if d := wantErr(t, callAs(env, other, "delete_note", withID), errs.CodeConfirmationInvalid); d["reason"] != "mismatch" || d["mismatch"] != "principal" {
		t.Errorf("another principal: %v", d)
	}
	sameNameJWT := confirming("editor", editorScopes...)
	sameNameJWT.Via = auth.ViaJWT
	if d := wantErr(t, callAs(env, sameNameJWT, "delete_note", withID), errs.CodeConfirmationInvalid); d["mismatch"] != "principal" {
		t.Errorf("same name by JWT: %v", d)
	}
	if d := wantErr(t, callAs(env, editor, "delete_note", `{"path":"Links.md","apply":true,"confirmation_id":"`+id+`"}`), errs.CodeConfirmationInvalid); d["mismatch"] != "arguments" {
		t.Errorf("other arguments: %v", d)
	}
	if d := wantErr(t, callAs(env, editor, "relocate_note", `{"path":"Inbox/Old.md","to":"Archive/","apply":true,"confirmation_id":"`+id+`"}`), errs.CodeConfirmationInvalid); d["mismatch"] != "operation" {
		t.Errorf("other operation: %v", d)
	}
	// The mismatches did not use it up: the confirmed call runs once.
	wantOK(t, callAs(env, editor, "delete_note", withID))
	if opstest.Exists(env, "Inbox/Old.md") || !opstest.Exists(env, ".trash/Inbox/Old.md") {
		t.Fatal("the confirmed delete did not run")
	}
	if d := wantErr(t, callAs(env, editor, "delete_note", withID), errs.CodeConfirmationInvalid); d["reason"] != "used" {
		t.Errorf("second use: %v", d)
	}
	if d := wantErr(t, callAs(env, editor, "delete_note", `{"path":"Inbox/Old.md","apply":true,"confirmation_id":"cf_nope"}`), errs.CodeConfirmationInvalid); d["reason"] != "unknown" {
		t.Errorf("unknown id: %v", d)
	}
	if got := evs.String(); got != "confirmation.pending:pending confirmation.decided:confirmed" {
		t.Errorf("events: %s", got)
	}
	if list, _ := env.ListConfirmations(nil, false); len(list) != 0 {
		t.Errorf("still pending: %+v", list)
	}
}

// TestConfirmationExpiryAndDenial: five minutes on the injected clock;
// a denied call never runs.
func TestConfirmationExpiryAndDenial(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"A.md": "# A\n", "B.md": "# B\n"})
	clk := newClock()
	env.Confirmations = ops.NewConfirmations(clk.Now)
	editor := confirming("editor", editorScopes...)
	ask := func(path string) string {
		d := wantErr(t, callAs(env, editor, "delete_note", `{"path":"`+path+`","apply":true}`), errs.CodeConfirmationRequired)
		return d["confirmation_id"].(string)
	}
	retry := func(path, id string) ops.Result {
		return callAs(env, editor, "delete_note", `{"path":"`+path+`","apply":true,"confirmation_id":"`+id+`"}`)
	}

	// Confirmed in time, retried too late.
	a := ask("A.md")
	clk.Add(4 * time.Minute)
	if _, err := env.DecideConfirmation(nil, a, ops.DecisionConfirm); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	if d := wantErr(t, retry("A.md", a), errs.CodeConfirmationInvalid); d["reason"] != "expired" {
		t.Errorf("retry at 5 min: %v", d)
	}
	// Not decided in time: a human can no longer confirm it.
	b := ask("B.md")
	clk.Add(5*time.Minute + time.Second)
	if _, err := env.DecideConfirmation(nil, b, ops.DecisionConfirm); err == nil || err.Details["reason"] != "expired" {
		t.Errorf("confirm after expiry: %v", err)
	}
	if list, _ := env.ListConfirmations(nil, false); len(list) != 0 {
		t.Errorf("expired ones listed as pending: %+v", list)
	}
	// Asking anew gives a new id; denied, it never runs.
	b2 := ask("B.md")
	if b2 == b {
		t.Error("an expired id was handed out again")
	}
	if _, err := env.DecideConfirmation(nil, b2, ops.DecisionDeny); err != nil {
		t.Fatal(err)
	}
	if d := wantErr(t, retry("B.md", b2), errs.CodeConfirmationInvalid); d["reason"] != "denied" {
		t.Errorf("denied: %v", d)
	}
	if !opstest.Exists(env, "A.md") || !opstest.Exists(env, "B.md") {
		t.Error("a note went without a valid confirmation")
	}
	// Long after, the ids are forgotten.
	clk.Add(time.Hour)
	if d := wantErr(t, retry("B.md", b2), errs.CodeConfirmationInvalid); d["reason"] != "unknown" {
		t.Errorf("an hour later: %v", d)
	}
	if all, _ := env.ListConfirmations(nil, true); len(all) != 0 {
		t.Errorf("kept: %+v", all)
	}
}

// TestConfirmationPolicy: principals whose policy is allow, and the owner,
// apply at once; a principal cannot flood the pending list.
func TestConfirmationPolicy(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"A.md": "# A\n", "B.md": "# B\n"})
	env.Confirmations = ops.NewConfirmations(newClock().Now)
	allow := agent("trusted", editorScopes...)
	allow.Confirm = auth.PolicyAllow
	wantOK(t, callAs(env, allow, "delete_note", `{"path":"A.md","apply":true}`))
	wantOK(t, callAs(env, nil, "delete_note", `{"path":"B.md","apply":true}`))
	if opstest.Exists(env, "A.md") || opstest.Exists(env, "B.md") {
		t.Error("allow and owner deletes did not apply")
	}
	// A preview that fails is answered as such, with no confirmation.
	editor := confirming("editor", editorScopes...)
	wantErr(t, callAs(env, editor, "delete_note", `{"path":"Gone.md","apply":true}`), errs.CodeNotFound)
	flood := confirming("flood", editorScopes...)
	for i := range 16 {
		wantErr(t, callAs(env, flood, "write_note", fmt.Sprintf(`{"path":"N%d.md","content":"x","overwrite":true,"apply":true}`, i)), errs.CodeConfirmationRequired)
	}
	d := wantErr(t, callAs(env, flood, "write_note", `{"path":"N99.md","content":"x","overwrite":true,"apply":true}`), errs.CodeRateLimited)
	if d["reason"] != "confirmations" || d["pending"] != 16.0 {
		t.Errorf("flood: %v", d)
	}
	// Others still get through.
	wantErr(t, callAs(env, editor, "write_note", `{"path":"E.md","content":"x","overwrite":true,"apply":true}`), errs.CodeConfirmationRequired)
}

// TestScopeRaisedPerCall: write_note that replaces a note and undo of
// another principal's change need destructive; creating a note and undoing
// one's own change need write.
func TestScopeRaisedPerCall(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"A.md": "# A\n"})
	writer := agent("writer", auth.ScopeRead, auth.ScopeWrite)
	other := agent("other", auth.ScopeRead, auth.ScopeWrite)

	wantOK(t, callAs(env, writer, "write_note", `{"path":"New.md","content":"# New\n","apply":true}`))
	for _, in := range []string{
		`{"path":"A.md","content":"gone","if_match":"` + opstest.EtagOf(t, env, "A.md") + `","apply":true}`,
		`{"path":"A.md","content":"gone","overwrite":true}`,
		`{"path":"Fresh.md","content":"x","overwrite":true,"apply":true}`,
	} {
		d := wantErr(t, callAs(env, writer, "write_note", in), errs.CodeForbidden)
		if fmt.Sprint(d["missing_scopes"]) != "[destructive]" {
			t.Errorf("%s: %v", in, d)
		}
	}
	if got := opstest.ReadFile(t, env, "A.md"); got != "# A\n" {
		t.Errorf("A.md replaced: %q", got)
	}
	// Undo: one's own change is a write, another's is destructive.
	var out struct {
		UndoID string `json:"undo_id"`
	}
	res := callAs(env, writer, "write_note", `{"path":"Mine.md","content":"x","apply":true}`)
	wantOK(t, res)
	out.UndoID = res.Output.(*ops.WriteResult).UndoID
	d := wantErr(t, callAs(env, other, "undo", `{"id":"`+out.UndoID+`","apply":true}`), errs.CodeForbidden)
	if fmt.Sprint(d["missing_scopes"]) != "[destructive]" {
		t.Errorf("undo of another's change: %v", d)
	}
	wantOK(t, callAs(env, writer, "undo", `{"id":"`+out.UndoID+`","apply":true}`))
	if opstest.Exists(env, "Mine.md") {
		t.Error("own undo did not apply")
	}
	// The owner's changes (the CLI's) are another principal's too.
	res = callAs(env, nil, "write_note", `{"path":"Owners.md","content":"x","apply":true}`)
	wantOK(t, res)
	wantErr(t, callAs(env, writer, "undo", `{"id":"`+res.Output.(*ops.WriteResult).UndoID+`","apply":true}`), errs.CodeForbidden)
	// With destructive and the confirm policy, undoing another's change
	// waits for a human.
	editor := confirming("editor", editorScopes...)
	wantErr(t, callAs(env, editor, "undo", `{"id":"`+res.Output.(*ops.WriteResult).UndoID+`","apply":true}`), errs.CodeConfirmationRequired)
}

// TestConfirmationUsedOnceUnderRace: two retries with one confirmed id at
// the same moment: one runs, the other is confirmation_invalid (used).
func TestConfirmationUsedOnceUnderRace(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"A.md": "# A\n"})
	env.Confirmations = ops.NewConfirmations(newClock().Now)
	editor := confirming("editor", editorScopes...)
	d := wantErr(t, callAs(env, editor, "write_note", `{"path":"A.md","content":"new","overwrite":true,"apply":true}`), errs.CodeConfirmationRequired)
	id := d["confirmation_id"].(string)
	if _, err := env.DecideConfirmation(nil, id, ops.DecisionConfirm); err != nil {
		t.Fatal(err)
	}
	in := `{"path":"A.md","content":"new","overwrite":true,"apply":true,"confirmation_id":"` + id + `"}`
	results := make(chan ops.Result, 8)
	var start sync.WaitGroup
	start.Add(1)
	for range 8 {
		go func() {
			start.Wait()
			results <- callAs(env, editor, "write_note", in)
		}()
	}
	start.Done()
	ok, used := 0, 0
	for range 8 {
		res := <-results
		switch {
		case res.Err == nil:
			ok++
		case res.Err.Code == errs.CodeConfirmationInvalid && res.Err.Details["reason"] == ops.ReasonUsed:
			used++
		default:
			t.Errorf("unexpected: %s %v", res.Err.Code, res.Err.Details)
		}
	}
	if ok != 1 || used != 7 {
		t.Errorf("%d ran, %d refused as used", ok, used)
	}
	if got := opstest.ReadFile(t, env, "A.md"); got != "new\n" {
		t.Errorf("A.md: %q", got)
	}
	w := opstest.MustWriter(t, env)
	if entries, _ := w.Journal(); len(entries) != 1 {
		t.Errorf("journal entries: %d, want 1", len(entries))
	}
}
