package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

const token = "test-token-123"

func fixture(t *testing.T) (*httptest.Server, *ops.Env) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "vault")
	testutil.CopyTree(t, testutil.DemoVault(), root)
	env := openEnv(t, root, ops.ReadRules{})
	env.Writes = ops.WriteSettings{Enabled: true}
	return serveEnv(t, env), env
}

// openEnv opens root as the only vault of an Env (index in a temp dir,
// closed at cleanup) under the read rules given; it does not index.
func openEnv(t testing.TB, root string, rules ops.ReadRules) *ops.Env {
	t.Helper()
	vh, err := ops.OpenVault(context.Background(), root, t.TempDir(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	vh.Read = rules
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	t.Cleanup(env.Close)
	return env
}

// serveEnv indexes env's vault (no embeddings) and serves the UI for it,
// with the test token, on a test server closed at cleanup.
func serveEnv(t testing.TB, env *ops.Env) *httptest.Server {
	t.Helper()
	if _, err := env.Sync(context.Background(), env.Vaults[0], index.SyncOptions{NoEmbed: true}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(catalog.All(), env, Options{Token: token}))
	t.Cleanup(srv.Close)
	return srv
}

func client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func login(t *testing.T, srv *httptest.Server) *http.Client {
	t.Helper()
	c := client(t)
	code, body := get(t, c, srv.URL+"/?token="+token)
	if code != 200 || !strings.Contains(body, `id="q"`) {
		t.Fatalf("login: %d %s", code, body)
	}
	return c
}

func TestLoginCookie(t *testing.T) {
	srv, _ := fixture(t)
	// Unauthenticated: the login page with 401, for every UI page.
	for _, p := range []string{"/", "/ui/note?path=Welcome.md", "/ui/status", "/ui/activity"} {
		code, body := get(t, client(t), srv.URL+p)
		if code != http.StatusUnauthorized || !strings.Contains(body, "Log in") || strings.Contains(body, "Welcome") && p != "/" {
			t.Fatalf("%s unauthenticated: %d", p, code)
		}
	}
	// A wrong token is refused.
	if code, _ := get(t, client(t), srv.URL+"/?token=nope"); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	// The right one: cookie (HttpOnly, SameSite=Strict) and a redirect to /.
	c := client(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(srv.URL + "/?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" ||
		!strings.Contains(ck, CookieName+"=") || !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") {
		t.Fatalf("login response: %d %q %q", resp.StatusCode, resp.Header.Get("Location"), ck)
	}
	// Pasting the token in the form works too.
	c2 := client(t)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	resp, err = c2.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, _ := get(t, c2, srv.URL+"/ui/status"); code != 200 {
		t.Fatalf("status after form login: %d", code)
	}
	// A bearer token also opens a page (scripts).
	req, _ = http.NewRequest(http.MethodGet, srv.URL+"/ui/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("bearer: %d", resp.StatusCode)
	}
}

func TestSearchPage(t *testing.T) {
	srv, _ := fixture(t)
	c := login(t, srv)
	code, body := get(t, c, srv.URL+"/?q=zettelkasten&mode=lexical")
	if code != 200 || !strings.Contains(body, `href="/ui/note?path=Ideas%2FZettelkasten.md"`) || !strings.Contains(body, "<mark>") ||
		!strings.Contains(body, "mode lexical") {
		t.Fatalf("search page: %d\n%s", code, body)
	}
	// Markup in a query is escaped.
	_, body = get(t, c, srv.URL+"/?q="+url.QueryEscape(`<script>alert(1)</script>`))
	if strings.Contains(body, "<script>alert") {
		t.Fatal("query not escaped")
	}
}

func TestNotePage(t *testing.T) {
	srv, _ := fixture(t)
	c := login(t, srv)
	code, body := get(t, c, srv.URL+"/ui/note?path="+url.QueryEscape("Ideas/Zettelkasten.md"))
	if code != 200 {
		t.Fatalf("note page: %d\n%s", code, body)
	}
	for _, want := range []string{"Backlinks (", `id="backlinks"`, `href="/ui/note?path=Welcome.md"`, "<h1", "Outgoing ("} {
		if !strings.Contains(body, want) {
			t.Errorf("note page lacks %q", want)
		}
	}
	// Code blocks are left alone.
	if strings.Contains(body, "/ui/note?note=not") {
		t.Errorf("a link inside a code block was rewritten")
	}
	// Wikilinks in the body point to the note view.
	_, body = get(t, c, srv.URL+"/ui/note?path=Welcome.md")
	if !regexp.MustCompile(`<a class="wikilink" href="/ui/note\?note=[^"]+">`).MatchString(body) {
		t.Errorf("no wikilink rendered as a link:\n%s", body)
	}
	// Following a wikilink by name resolves it.
	code, body = get(t, c, srv.URL+"/ui/note?note=Zettelkasten")
	if code != 200 || !strings.Contains(body, "Ideas/Zettelkasten.md") {
		t.Fatalf("note by name: %d", code)
	}
	if code, _ := get(t, c, srv.URL+"/ui/note?path=nope.md"); code != http.StatusNotFound {
		t.Fatalf("missing note: %d", code)
	}
	code, body = get(t, c, srv.URL+"/ui/status")
	if code != 200 || !strings.Contains(body, "Index status") || !strings.Contains(body, `id="watcher-state">off`) {
		t.Fatalf("status page: %d\n%s", code, body)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func TestActivityUndo(t *testing.T) {
	srv, env := fixture(t)
	c := login(t, srv)
	res := catalog.All().Call(context.Background(), env, ops.Caller{Surface: "test"}, "capture_note",
		json.RawMessage(`{"title":"Milk","content":"remember the milk","apply":true}`))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	b, _ := json.Marshal(res.Output)
	var wr struct {
		UndoID string `json:"undo_id"`
		Path   string `json:"path"`
	}
	json.Unmarshal(b, &wr)
	code, body := get(t, c, srv.URL+"/ui/activity")
	if code != 200 || !strings.Contains(body, wr.UndoID) || !strings.Contains(body, "capture_note") {
		t.Fatalf("activity: %d\n%s", code, body)
	}
	code, body = get(t, c, srv.URL+"/ui/activity?preview="+wr.UndoID)
	m := csrfRE.FindStringSubmatch(body)
	if code != 200 || m == nil || !strings.Contains(body, "Undo this change") || !strings.Contains(body, "<h3>delete "+wr.Path) {
		t.Fatalf("preview: %d\n%s", code, body)
	}
	post := func(csrf, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ui/undo", strings.NewReader(url.Values{"csrf": {csrf}, "id": {wr.UndoID}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("bad", srv.URL); code != http.StatusForbidden {
		t.Fatalf("wrong csrf: %d", code)
	}
	if code := post(m[1], "http://127.0.0.1:1"); code != http.StatusForbidden {
		t.Fatalf("cross-origin: %d", code)
	}
	if code := post(m[1], srv.URL); code != http.StatusSeeOther {
		t.Fatalf("undo: %d", code)
	}
	if _, _, err := env.Vaults[0].Vault.ReadNote(wr.Path); err == nil {
		t.Fatalf("%s still there after undo", wr.Path)
	}
}

// TestNotePageRendersQueries: the note view shows each embedded query's
// table under the note, every cell escaped (a value holding markup shows
// as text), and a failing query as its error.
func TestNotePageRendersQueries(t *testing.T) {
	srv, env := fixture(t)
	testutil.WriteFiles(t, env.Vaults[0].Vault.Root, map[string]string{
		"Dash.md":    "# Dash\n\n```dataview\nTABLE status FROM #dashq\n```\n\n```dataview\nLIST WHERE (\n```\n",
		"Evil.md":    "---\nstatus: \"<script>alert(1)</script>\"\ntags: [dashq]\n---\n# Evil\n",
		"Regular.md": "---\nstatus: fine\ntags: [dashq]\n---\n# Regular\n",
	})
	if _, err := env.Sync(context.Background(), env.Vaults[0], index.SyncOptions{NoEmbed: true}); err != nil {
		t.Fatal(err)
	}
	c := login(t, srv)
	code, body := get(t, c, srv.URL+"/ui/note?path=Dash.md")
	if code != 200 {
		t.Fatalf("note: %d", code)
	}
	for _, want := range []string{"Queries (2)", `id="query-3"`, "TABLE status FROM #dashq", `href="/ui/note?path=Evil.md">Evil.md</a>`,
		"&lt;script&gt;alert(1)&lt;/script&gt;", "<td>fine</td>", "2 row(s)", "validation_failed: "} {
		if !strings.Contains(body, want) {
			t.Errorf("note page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Error("a query cell is not escaped")
	}
}
