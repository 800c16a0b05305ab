package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
)

// TestPagesByPrincipal: the UI shows a principal only what it may use. A
// read-only principal sees the activity but no undo preview link and no
// undo button, and an undo posted anyway is refused by the pipeline; an
// editor sees both for its own change; with server toolsets [write] the
// status page (index_status, read) leaves the menu.
func TestPagesByPrincipal(t *testing.T) {
	_, env := fixture(t)
	store := auth.NewStore(t.TempDir())
	tokens := map[string]string{}
	for name, scopes := range map[string][]auth.Scope{"reader": {auth.ScopeRead}, "editor": {auth.ScopeRead, auth.ScopeWrite}} {
		tok, err := store.Create(auth.Principal{Name: name, Scopes: scopes}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		tokens[name] = tok
	}
	srv := httptest.NewServer(New(catalog.All(), env, Options{Token: token, Auth: auth.NewAuthenticator(token, store, nil)}))
	t.Cleanup(srv.Close)
	loginAs := func(tok string) *http.Client {
		c := client(t)
		if code, body := get(t, c, srv.URL+"/?token="+url.QueryEscape(tok)); code != 200 {
			t.Fatalf("login: %d %s", code, body)
		}
		return c
	}
	editorP, _ := store.Lookup(tokens["editor"])
	res := catalog.All().Call(context.Background(), env, ops.Caller{Surface: "test", Principal: editorP}, "capture_note",
		json.RawMessage(`{"title":"Milk","content":"remember the milk","apply":true}`))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	b, _ := json.Marshal(res.Output)
	var wr struct {
		UndoID string `json:"undo_id"`
	}
	json.Unmarshal(b, &wr)

	reader := loginAs(tokens["reader"])
	code, body := get(t, reader, srv.URL+"/ui/activity")
	if code != 200 || !strings.Contains(body, wr.UndoID) || strings.Contains(body, "?preview=") || !strings.Contains(body, `href="/ui/status"`) {
		t.Fatalf("reader activity: %d\n%s", code, body)
	}
	_, body = get(t, reader, srv.URL+"/ui/activity?preview="+wr.UndoID)
	m := csrfRE.FindStringSubmatch(body)
	if strings.Contains(body, `action="/ui/undo"`) || m == nil {
		t.Fatalf("reader preview shows an undo button (or no csrf):\n%s", body)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ui/undo", strings.NewReader(url.Values{"csrf": {m[1]}, "id": {wr.UndoID}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	reader.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := reader.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther {
		t.Fatal("the reader's undo was applied")
	}
	if _, _, err := env.Vaults[0].Vault.ReadNote("Inbox/Milk.md"); err != nil {
		t.Fatalf("Inbox/Milk.md is gone after the reader's undo: %v", err)
	}

	editor := loginAs(tokens["editor"])
	_, body = get(t, editor, srv.URL+"/ui/activity")
	if !strings.Contains(body, "?preview="+wr.UndoID) {
		t.Fatalf("editor activity has no preview link:\n%s", body)
	}
	_, body = get(t, editor, srv.URL+"/ui/activity?preview="+wr.UndoID)
	if !strings.Contains(body, `action="/ui/undo"`) {
		t.Fatalf("editor preview has no undo button:\n%s", body)
	}

	env.Toolsets = []string{"write"}
	defer func() { env.Toolsets = nil }()
	_, body = get(t, editor, srv.URL+"/ui/activity")
	if strings.Contains(body, `href="/ui/status"`) {
		t.Error("the status link is shown although the server does not offer the read toolset")
	}
}

// TestRevokedTokenEndsSession: a web session started with a token ends at
// the next request once the token is revoked, as the API refuses it.
func TestRevokedTokenEndsSession(t *testing.T) {
	_, env := fixture(t)
	store := auth.NewStore(t.TempDir())
	tok, err := store.Create(auth.Principal{Name: "reader", Scopes: []auth.Scope{auth.ScopeRead}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(catalog.All(), env, Options{Token: token, Auth: auth.NewAuthenticator(token, store, nil)}))
	t.Cleanup(srv.Close)
	c := client(t)
	if code, body := get(t, c, srv.URL+"/?token="+url.QueryEscape(tok)); code != 200 || strings.Contains(body, `name="token"`) {
		t.Fatalf("login: %d %s", code, body)
	}
	if code, body := get(t, c, srv.URL+"/ui/activity"); code != 200 || strings.Contains(body, `name="token"`) {
		t.Fatalf("activity before the revocation: %d %s", code, body)
	}
	if err := store.Revoke("reader"); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, c, srv.URL+"/ui/activity"); !strings.Contains(body, `name="token"`) {
		t.Fatalf("activity after the revocation: not the login page:\n%s", body)
	}
}
