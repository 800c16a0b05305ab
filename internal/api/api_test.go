package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

// fixture is a copy of the demo vault, indexed, served by the REST handler
// on a real 127.0.0.1 listener.
type fixture struct {
	url     string
	vault   string
	outside string
	reg     *ops.Registry

	mu    sync.Mutex
	audit []ops.AuditRecord
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "vault")
	testutil.CopyTree(t, testutil.DemoVault(), dir)
	// A secret outside the vault and symlinks inside the vault pointing at it.
	outside := filepath.Join(tmp, "outside")
	testutil.WriteFiles(t, outside, map[string]string{"secret.md": "# Secret\n\nnever served\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, "Inbox", "link.md")); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, dir, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{vault: dir, outside: outside, reg: catalog.All()}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}, Writes: ops.WriteSettings{Enabled: true}, Audit: func(r ops.AuditRecord) {
		f.mu.Lock()
		f.audit = append(f.audit, r)
		f.mu.Unlock()
	}}
	t.Cleanup(env.Close)
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	h := api.New(f.reg, env, api.Options{Version: "test", MaxBodyBytes: 64 << 10})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Name: "tester", Scopes: auth.AllScopes, Via: auth.ViaToken})))
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// reply is a decoded response envelope.
type reply struct {
	Status int
	Header http.Header
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

func (f *fixture) do(t *testing.T, method, path, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r reply
	if method != http.MethodHead {
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s %s: response is not JSON: %v\n%s", method, path, err, b)
		}
	}
	r.Status, r.Header = resp.StatusCode, resp.Header
	if ct := resp.Header.Get("Content-Type"); method != http.MethodHead && !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	// The envelope invariant: ok with a result and 200, or an error whose
	// status is the code's.
	switch {
	case method == http.MethodHead:
	case r.OK && (r.Status != 200 || r.Error != nil):
		t.Errorf("%s %s: ok=true with status %d / error %v", method, path, r.Status, r.Error)
	case !r.OK && (r.Error == nil || r.Error.Code == "" || r.Error.Message == ""):
		t.Errorf("%s %s: ok=false without a code and message: %s", method, path, b)
	case !r.OK && r.Status != api.HTTPStatus(r.Error.Code):
		t.Errorf("%s %s: status %d for code %s (want %d)", method, path, r.Status, r.Error.Code, api.HTTPStatus(r.Error.Code))
	}
	return r
}

func (r reply) into(t *testing.T, v any) {
	t.Helper()
	if !r.OK {
		t.Fatalf("expected success, got %d %+v", r.Status, r.Error)
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		t.Fatalf("result: %v\n%s", err, r.Result)
	}
}

func (r reply) wantErr(t *testing.T, status int, code string) {
	t.Helper()
	if r.OK || r.Status != status || r.Error == nil || r.Error.Code != code {
		t.Errorf("want %d %s, got %d %+v (result %s)", status, code, r.Status, r.Error, r.Result)
	}
}

type searchOut struct {
	Results []struct {
		Path        string   `json:"path"`
		Title       string   `json:"title"`
		HeadingPath []string `json:"heading_path"`
		Line        int      `json:"line"`
		Snippet     string   `json:"snippet"`
	} `json:"results"`
	Mode       string `json:"mode"`
	NextCursor string `json:"next_cursor"`
}

type noteOut struct {
	Path        string         `json:"path"`
	Title       string         `json:"title"`
	Etag        string         `json:"etag"`
	Content     string         `json:"content"`
	Frontmatter map[string]any `json:"frontmatter"`
	StartLine   int            `json:"start_line"`
	EndLine     int            `json:"end_line"`
}

type linksOut struct {
	Path      string `json:"path"`
	Outgoing  []map[string]any
	Backlinks []struct {
		Source string `json:"source"`
		Line   int    `json:"line"`
	} `json:"backlinks"`
	TypedOutgoing []struct {
		Key      string `json:"key"`
		Resolved string `json:"resolved"`
	} `json:"typed_outgoing"`
}

type tagsOut struct {
	Tags []struct {
		Tag   string `json:"tag"`
		Notes int    `json:"notes"`
	} `json:"tags"`
}

type statusOut struct {
	Notes             int   `json:"notes"`
	SchemaVersion     int   `json:"schema_version"`
	FrontmatterErrors []any `json:"frontmatter_errors"`
}

var etagRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestCatalog(t *testing.T) {
	f := newFixture(t)
	var cat struct {
		Operations []api.OpInfo `json:"operations"`
	}
	f.do(t, "GET", "/v1/ops", "").into(t, &cat)
	var names []string
	for _, o := range cat.Operations {
		names = append(names, o.Name)
		if o.Title == "" || o.Description == "" || o.InputSchema == nil || o.OutputSchema == nil || o.Endpoint != "/v1/ops/"+o.Name {
			t.Errorf("incomplete catalog entry: %+v", o)
		}
	}
	var want []string
	for _, op := range f.reg.List() {
		want = append(want, op.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("catalog %v, registry %v", names, want)
	}
	var one api.OpInfo
	f.do(t, "GET", "/v1/ops/search_notes", "").into(t, &one)
	if one.CLI == nil || one.CLI.Usage != "loci search <query>" || one.Alias != "GET /v1/search" || !one.Annotations.ReadOnly {
		t.Errorf("search_notes entry: %+v %+v", one, one.CLI)
	}
	f.do(t, "GET", "/v1/ops/nope", "").wantErr(t, 404, errs.CodeUnknownOp)
	var routes map[string]any
	f.do(t, "GET", "/v1/", "").into(t, &routes)
	if routes["call"] != "POST /v1/ops/{name}" {
		t.Errorf("GET /v1: %v", routes)
	}
}

func TestOperations(t *testing.T) {
	f := newFixture(t)

	var sr searchOut
	f.do(t, "POST", "/v1/ops/search_notes", `{"query":"spaced repetition","limit":2}`).into(t, &sr)
	if len(sr.Results) != 2 || sr.Results[0].Path != "Ideas/Spaced repetition.md" || sr.Mode != "hybrid" || sr.Results[0].Snippet == "" {
		t.Errorf("search_notes: %+v", sr)
	}
	var filtered searchOut
	f.do(t, "POST", "/v1/ops/search_notes", `{"query":"note","tags":["learning"],"path_glob":"Ideas/**"}`).into(t, &filtered)
	if len(filtered.Results) == 0 {
		t.Error("filtered search found nothing")
	}
	for _, r := range filtered.Results {
		if !strings.HasPrefix(r.Path, "Ideas/") {
			t.Errorf("filtered search returned %s", r.Path)
		}
	}
	var cjk searchOut
	f.do(t, "POST", "/v1/ops/search_notes", `{"query":"知识"}`).into(t, &cjk)
	if len(cjk.Results) == 0 {
		t.Error("CJK search found nothing")
	}

	var note noteOut
	f.do(t, "POST", "/v1/ops/read_note", `{"path":"Ideas/Zettelkasten.md"}`).into(t, &note)
	if note.Path != "Ideas/Zettelkasten.md" || !strings.HasPrefix(note.Content, "---\naliases: [slip box]") || !etagRe.MatchString(note.Etag) || note.Frontmatter == nil {
		t.Errorf("read_note: %+v", note)
	}
	var section noteOut
	f.do(t, "POST", "/v1/ops/read_note", `{"path":"Ideas/Spaced repetition.md","heading":"Why it works"}`).into(t, &section)
	if !strings.HasPrefix(section.Content, "## Why it works") || strings.Contains(section.Content, "## Tools") {
		t.Errorf("read_note heading: %q", section.Content)
	}

	var links linksOut
	f.do(t, "POST", "/v1/ops/get_links", `{"path":"Projects/Project Atlas.md"}`).into(t, &links)
	if links.Path != "Projects/Project Atlas.md" || len(links.Backlinks) != 4 {
		t.Errorf("get_links: %+v", links)
	}
	owner := false
	for _, l := range links.TypedOutgoing {
		owner = owner || (l.Key == "owner" && l.Resolved == "People/Ada Lovelace.md")
	}
	if !owner {
		t.Errorf("get_links: no typed owner link: %+v", links.TypedOutgoing)
	}

	var tags tagsOut
	f.do(t, "POST", "/v1/ops/list_tags", ``).into(t, &tags)
	var tagNames []string
	for _, tg := range tags.Tags {
		tagNames = append(tagNames, strings.TrimPrefix(tg.Tag, "#"))
	}
	if !slices.Contains(tagNames, "learning/memory") || !slices.Contains(tagNames, "知识") {
		t.Errorf("list_tags: %v", tagNames)
	}
	var prefixed tagsOut
	f.do(t, "POST", "/v1/ops/list_tags", `{"prefix":"learning"}`).into(t, &prefixed)
	if len(prefixed.Tags) == 0 || len(prefixed.Tags) >= len(tags.Tags) {
		t.Errorf("list_tags prefix: %d of %d", len(prefixed.Tags), len(tags.Tags))
	}

	var st statusOut
	f.do(t, "POST", "/v1/ops/index_status", `{}`).into(t, &st)
	var q struct {
		Columns []string `json:"columns"`
		Rows    []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		} `json:"rows"`
	}
	f.do(t, "POST", "/v1/ops/query", `{"query":"TASK FROM \"Projects\" WHERE !completed"}`).into(t, &q)
	if len(q.Columns) != 3 || len(q.Rows) == 0 || q.Rows[0].Path != "Projects/Project Atlas.md" || q.Rows[0].Line == 0 {
		t.Errorf("query: %+v", q)
	}
	if st.Notes != 16 || st.SchemaVersion < 1 || len(st.FrontmatterErrors) != 1 {
		t.Errorf("index_status: %+v", st)
	}

	// Every operation in the registry answers through POST /v1/ops/<name>
	// with a well-formed envelope (do checks it), including those added
	// after this test was written: they get an input made of their required
	// fields.
	for _, op := range f.reg.List() {
		f.do(t, "POST", "/v1/ops/"+op.Name, minimalInput(t, op, nil))
	}

	// The calls went through the dispatch pipeline as the REST surface, with
	// the subject the server authenticated.
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.audit) == 0 {
		t.Fatal("no audit records")
	}
	for _, r := range f.audit {
		if r.Surface != "rest" || r.Principal != "tester" {
			t.Fatalf("audit record %+v", r)
		}
	}
}

// minimalInput builds a JSON input holding the op's required fields (plus
// set), with placeholder values of the right type.
func minimalInput(t *testing.T, op *ops.Op, set map[string]any) string {
	t.Helper()
	in := map[string]any{}
	for _, name := range op.InputSchema.Required {
		ps := op.InputSchema.Properties[name]
		typ := ps.Type
		if typ == "" && len(ps.Types) > 0 {
			typ = ps.Types[len(ps.Types)-1]
		}
		switch typ {
		case "integer", "number":
			in[name] = 1
		case "boolean":
			in[name] = false
		case "array":
			in[name] = []any{}
		case "object":
			in[name] = map[string]any{}
		default:
			in[name] = "x"
		}
		if name == "query" {
			in[name] = "note"
		}
		if name == "path" {
			in[name] = "Welcome.md"
		}
	}
	for k, v := range set {
		in[k] = v
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAliases(t *testing.T) {
	f := newFixture(t)

	// An alias answers exactly what the operation answers.
	post := f.do(t, "POST", "/v1/ops/search_notes", `{"query":"spaced repetition","limit":2}`)
	get := f.do(t, "GET", "/v1/search?q=spaced+repetition&limit=2", "")
	if !get.OK || string(get.Result) != string(post.Result) {
		t.Errorf("GET /v1/search differs from POST:\n%s\n%s", get.Result, post.Result)
	}
	var sr searchOut
	f.do(t, "GET", "/v1/search?q=note&tag=learning&path_glob="+url.QueryEscape("Ideas/**"), "").into(t, &sr)
	if len(sr.Results) == 0 {
		t.Error("GET /v1/search with tag and path_glob found nothing")
	}
	for _, r := range sr.Results {
		if !strings.HasPrefix(r.Path, "Ideas/") {
			t.Errorf("path_glob ignored: %s", r.Path)
		}
	}
	var two searchOut
	f.do(t, "GET", "/v1/search?q=note&tag=learning&tag=learning/memory", "").into(t, &two)
	var page searchOut
	f.do(t, "GET", "/v1/search?query=note&limit=1", "").into(t, &page)
	if len(page.Results) != 1 || page.NextCursor == "" {
		t.Errorf("paging: %+v", page)
	}
	var next searchOut
	f.do(t, "GET", "/v1/search?q=note&limit=1&cursor="+page.NextCursor, "").into(t, &next)
	if len(next.Results) != 1 || next.Results[0].Path == page.Results[0].Path {
		t.Errorf("second page: %+v", next)
	}
	f.do(t, "GET", "/v1/search?q=x&limit=abc", "").wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "GET", "/v1/search?q=x&limit=1&limit=2", "").wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "GET", "/v1/search?q=x&bogus=1", "").wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "GET", "/v1/search", "").wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "GET", "/v1/search?q=x&vault=nope", "").wantErr(t, 404, errs.CodeVaultNotFound)
	f.do(t, "POST", "/v1/search?q=x", `{}`).wantErr(t, 405, errs.CodeMethodNotAllowed)

	var note noteOut
	f.do(t, "GET", "/v1/notes/Ideas/Zettelkasten.md", "").into(t, &note)
	if note.Path != "Ideas/Zettelkasten.md" || !strings.HasPrefix(note.Content, "---\naliases: [slip box]") {
		t.Errorf("GET /v1/notes: %+v", note)
	}
	var cafe noteOut
	f.do(t, "GET", "/v1/notes/Notes/Caf%C3%A9%20culture.md?start_line=1&end_line=2", "").into(t, &cafe)
	if cafe.Path != "Notes/Café culture.md" || cafe.StartLine != 1 || cafe.EndLine != 2 {
		t.Errorf("GET /v1/notes with a range: %+v", cafe)
	}
	var sec noteOut
	f.do(t, "GET", "/v1/notes/Ideas/Spaced%20repetition.md?heading="+url.QueryEscape("Why it works"), "").into(t, &sec)
	if !strings.HasPrefix(sec.Content, "## Why it works") {
		t.Errorf("GET /v1/notes?heading: %q", sec.Content)
	}
	f.do(t, "GET", "/v1/notes/Nope.md", "").wantErr(t, 404, errs.CodeNotFound)
	f.do(t, "GET", "/v1/notes/Welcome.md?path=Other.md", "").wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "GET", "/v1/notes/", "").wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "DELETE", "/v1/notes/Welcome.md", "").wantErr(t, 405, errs.CodeMethodNotAllowed)

	var links linksOut
	f.do(t, "GET", "/v1/links/Projects/Project%20Atlas.md", "").into(t, &links)
	if len(links.Backlinks) != 4 {
		t.Errorf("GET /v1/links: %+v", links)
	}
	var tags tagsOut
	f.do(t, "GET", "/v1/tags?prefix=learning", "").into(t, &tags)
	if len(tags.Tags) == 0 {
		t.Error("GET /v1/tags?prefix found nothing")
	}
	var st statusOut
	f.do(t, "GET", "/v1/status", "").into(t, &st)
	if st.Notes != 16 {
		t.Errorf("GET /v1/status: %+v", st)
	}
	vaultName := filepath.Base(f.vault)
	f.do(t, "GET", "/v1/status?vault="+vaultName, "").into(t, &st)
	f.do(t, "GET", "/v1/status?vault=other", "").wantErr(t, 404, errs.CodeVaultNotFound)
	if r := f.do(t, "HEAD", "/v1/status", ""); r.Status != 200 {
		t.Errorf("HEAD /v1/status: %d", r.Status)
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t)
	f.do(t, "POST", "/v1/ops/nope", `{}`).wantErr(t, 404, errs.CodeUnknownOp)
	f.do(t, "POST", "/v1/ops/search_notes", `not json`).wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "POST", "/v1/ops/search_notes", `["query"]`).wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "POST", "/v1/ops/search_notes", `{"query":"x","bogus":1}`).wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "POST", "/v1/ops/search_notes", `{"query":"x","limit":"ten"}`).wantErr(t, 400, errs.CodeInvalidInput)
	f.do(t, "POST", "/v1/ops/search_notes", `{"query":"x","limit":1000}`).wantErr(t, 400, errs.CodeInvalidInput)
	r := f.do(t, "POST", "/v1/ops/read_note", `{"path":"Nope.md"}`)
	r.wantErr(t, 404, errs.CodeNotFound)
	if r.Error != nil && r.Error.Details["path"] != "Nope.md" {
		t.Errorf("details: %v", r.Error.Details)
	}
	f.do(t, "POST", "/v1/ops/read_note", `{"path":".obsidian/app.json"}`).wantErr(t, 403, errs.CodePathDenied)
	f.do(t, "POST", "/v1/ops/index_status", `{"vault":"nope"}`).wantErr(t, 404, errs.CodeVaultNotFound)
	f.do(t, "POST", "/v1/ops/query", `{"query":"TABLE a * 2"}`).wantErr(t, 400, errs.CodeUnsupportedQuery)
	f.do(t, "PUT", "/v1/ops/search_notes", `{}`).wantErr(t, 405, errs.CodeMethodNotAllowed)
	f.do(t, "POST", "/v1/ops", `{}`).wantErr(t, 405, errs.CodeMethodNotAllowed)
	if r := f.do(t, "DELETE", "/v1/ops/search_notes", ""); r.Header.Get("Allow") != "GET, POST" {
		t.Errorf("Allow: %q", r.Header.Get("Allow"))
	}
	f.do(t, "GET", "/v1/nope", "").wantErr(t, 404, errs.CodeRouteNotFound)
	f.do(t, "GET", "/v1/ops/a/b", "").wantErr(t, 404, errs.CodeUnknownOp)
	f.do(t, "POST", "/v1/ops/search_notes", `{"query":"`+strings.Repeat("a", 70<<10)+`"}`).wantErr(t, 413, errs.CodeTooLarge)
}

// TestPathTraversal sends hostile paths to every operation taking a path
// (found in the catalog, so operations added later are covered) and to the
// path aliases.
func TestPathTraversal(t *testing.T) {
	f := newFixture(t)
	var cat struct {
		Operations []api.OpInfo `json:"operations"`
	}
	f.do(t, "GET", "/v1/ops", "").into(t, &cat)
	hostile := []string{
		"../secret.md", "/etc/passwd", "..%2fsecret.md", "%2e%2e/secret.md", "Inbox/../../secret.md",
		`..\secret.md`, "Inbox/link.md", "escape/secret.md", f.outside + "/secret.md", ".git/config", "Welcome.md\x00.txt",
	}
	nfd := norm.NFD.String("Notes/Café culture.md")
	if nfd == "Notes/Café culture.md" {
		t.Fatal("NFD variant equals NFC")
	}
	tested := 0
	for _, op := range cat.Operations {
		if _, ok := op.InputSchema.Properties["path"]; !ok {
			continue
		}
		tested++
		o, _ := f.reg.Get(op.Name)
		input := func(p string) string {
			if !o.IsWrite() {
				return minimalInput(t, o, map[string]any{"path": p})
			}
			// A write: its example (a valid call), previewed, on that path.
			in := map[string]any{}
			if err := json.Unmarshal([]byte(o.Example), &in); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"note", "name", "page", "parent", "sibling", "position", "apply"} {
				delete(in, k) // path names the target instead
			}
			in["path"] = p
			b, _ := json.Marshal(in)
			return string(b)
		}
		for _, p := range hostile {
			r := f.do(t, "POST", "/v1/ops/"+op.Name, input(p))
			if r.Status != 403 || r.Error == nil || r.Error.Code != errs.CodePathDenied {
				t.Errorf("%s path %q: %d %+v", op.Name, p, r.Status, r.Error)
			}
			if strings.Contains(string(r.Result), "never served") {
				t.Errorf("%s path %q leaked the secret", op.Name, p)
			}
		}
		r := f.do(t, "POST", "/v1/ops/"+op.Name, input(nfd))
		if r.Error != nil && r.Error.Code == errs.CodePathDenied {
			t.Errorf("%s NFD path denied: %+v", op.Name, r.Error)
		}
		if op.Annotations.ReadOnly && r.OK {
			var out struct {
				Path string `json:"path"`
			}
			r.into(t, &out)
			if out.Path != "" && out.Path != "Notes/Café culture.md" {
				t.Errorf("%s NFD path answered as %q, want the NFC note", op.Name, out.Path)
			}
		}
	}
	for _, name := range []string{"read_note", "get_links"} {
		r := f.do(t, "POST", "/v1/ops/"+name, `{"path":"`+nfd+`"}`)
		if !r.OK {
			t.Errorf("%s with an NFD path: %+v", name, r.Error)
		}
	}
	if tested < 2 {
		t.Errorf("only %d operations take a path", tested)
	}

	// The same through the URL of the path aliases: encoded slashes and dots
	// are decoded once and then refused by the confinement check.
	for _, route := range []string{"/v1/notes/", "/v1/links/"} {
		for _, p := range []string{"..%2fsecret.md", "%2e%2e/secret.md", "%2e%2e%2fsecret.md", "%2Fetc%2Fpasswd", "%252e%252e/secret.md",
			"Inbox/link.md", "escape/secret.md", "Inbox/%2e%2e/%2e%2e/secret.md", "%2E%2E%5Csecret.md"} {
			r := f.do(t, "GET", route+p, "")
			if r.Status != 403 || r.Error == nil || r.Error.Code != errs.CodePathDenied {
				t.Errorf("GET %s%s: %d %+v", route, p, r.Status, r.Error)
			}
		}
		var out struct {
			Path string `json:"path"`
		}
		f.do(t, "GET", route+(&url.URL{Path: nfd}).EscapedPath(), "").into(t, &out)
		if out.Path != "Notes/Café culture.md" {
			t.Errorf("GET %s<NFD>: path %q", route, out.Path)
		}
	}
}

func TestOpenAPI(t *testing.T) {
	f := newFixture(t)
	resp, err := http.Get(f.url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("openapi.json: %d %v", resp.StatusCode, err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi version %v", doc["openapi"])
	}
	paths := doc["paths"].(map[string]any)
	for _, op := range f.reg.List() {
		p, ok := paths["/v1/ops/"+op.Name].(map[string]any)
		if !ok {
			t.Errorf("no path for %s", op.Name)
			continue
		}
		post := p["post"].(map[string]any)
		if post["operationId"] != op.Name {
			t.Errorf("%s operationId %v", op.Name, post["operationId"])
		}
		resps := post["responses"].(map[string]any)
		for _, st := range []string{"200", "400", "401", "403", "404", "413", "500", "503"} {
			if _, ok := resps[st]; !ok {
				t.Errorf("%s lacks response %s", op.Name, st)
			}
		}
	}
	for _, p := range []string{"/v1/ops", "/v1/search", "/v1/notes/{path}", "/v1/links/{path}", "/v1/tags", "/v1/status", "/healthz"} {
		if _, ok := paths[p]; !ok {
			t.Errorf("no path %s", p)
		}
	}
	comp := doc["components"].(map[string]any)
	bearer := comp["securitySchemes"].(map[string]any)["bearer"].(map[string]any)
	if bearer["type"] != "http" || bearer["scheme"] != "bearer" {
		t.Errorf("security scheme %v", bearer)
	}
	// Every $ref points inside the document.
	schemas := comp["schemas"].(map[string]any)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				name, found := strings.CutPrefix(ref, "#/components/schemas/")
				if _, ok := schemas[name]; !found || !ok {
					t.Errorf("dangling $ref %s", ref)
				}
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(doc)
	// The search alias documents its short parameter names.
	get := paths["/v1/search"].(map[string]any)["get"].(map[string]any)
	var params []string
	for _, p := range get["parameters"].([]any) {
		params = append(params, p.(map[string]any)["name"].(string))
	}
	if !slices.Contains(params, "q") || !slices.Contains(params, "tag") || !slices.Contains(params, "limit") {
		t.Errorf("/v1/search parameters: %v", params)
	}
}

// TestStatusTableDocumented keeps docs/api.md's status table in sync with
// HTTPStatus.
func TestStatusTableDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, e := range api.StatusTable() {
		row := "| `" + e.Code + "` | " + strconv.Itoa(e.Status) + " |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/api.md lacks the row %q", row)
		}
	}
	if api.HTTPStatus("some_future_code") != 500 {
		t.Error("unknown codes must map to 500")
	}
	for code, want := range map[string]int{
		errs.CodeInvalidInput: 400, errs.CodeUnauthorized: 401, errs.CodeForbidden: 403, errs.CodePathDenied: 403,
		errs.CodeNotFound: 404, errs.CodeVaultNotFound: 404, errs.CodeBlockNotFound: 404, errs.CodeUnknownOp: 404,
		errs.CodeAmbiguous: 409, errs.CodeTooLarge: 413, errs.CodeRateLimited: 429, errs.CodeIndexBusy: 503,
		errs.CodeIndexMissing: 503, errs.CodeInternal: 500,
	} {
		if got := api.HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%s) = %d, want %d", code, got, want)
		}
	}
}

// TestIdempotencyKeyHeader: the Idempotency-Key header is the input's
// idempotency_key: a retry of a write with the same header is answered
// from the first result (one note, one journal entry); the same key with
// another body is idempotency_key_reused; a header that contradicts the
// body's key is validation_failed. Reads, which take no key, ignore it.
func TestIdempotencyKeyHeader(t *testing.T) {
	f := newFixture(t)
	call := func(key, body string) reply {
		t.Helper()
		req, _ := http.NewRequest("POST", f.url+"/v1/ops/capture_note", strings.NewReader(body))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r reply
		json.NewDecoder(resp.Body).Decode(&r)
		r.Status = resp.StatusCode
		return r
	}
	body := `{"title": "Header key", "content": "once", "apply": true}`
	first := call("hk-1", body)
	again := call("hk-1", body)
	if first.Status != 200 || again.Status != 200 || string(first.Result) == "" {
		t.Fatalf("first %+v again %+v", first, again)
	}
	var a, b struct {
		Changes []struct {
			Path string `json:"path"`
		} `json:"changes"`
		UndoID string `json:"undo_id"`
	}
	json.Unmarshal(first.Result, &a)
	json.Unmarshal(again.Result, &b)
	if a.UndoID == "" || a.UndoID != b.UndoID {
		t.Errorf("the retry wrote again: %s / %s", first.Result, again.Result)
	}
	matches, _ := filepath.Glob(filepath.Join(f.vault, "Inbox", "*Header key*"))
	if len(matches) != 1 {
		t.Errorf("notes written: %v", matches)
	}
	if r := call("hk-1", `{"title": "Header key", "content": "twice", "apply": true}`); r.Status != 422 || r.Error.Code != "idempotency_key_reused" {
		t.Errorf("reused: %+v", r)
	}
	if r := call("hk-2", `{"title": "Other", "content": "x", "apply": true, "idempotency_key": "hk-3"}`); r.Status != 400 || r.Error.Code != "validation_failed" {
		t.Errorf("contradicting: %+v", r)
	}
	if r := call("hk-4", `{"title": "Same", "content": "x", "apply": true, "idempotency_key": "hk-4"}`); r.Status != 200 {
		t.Errorf("agreeing: %+v", r)
	}
	req, _ := http.NewRequest("POST", f.url+"/v1/ops/search_notes", strings.NewReader(`{"query": "atlas"}`))
	req.Header.Set("Idempotency-Key", "read-1")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("a read with the header: %v %v", resp.StatusCode, err)
	}
}

// TestSeedAliasesOverREST: the seeds' parameter names work on the REST
// surface (AILSS's reindex_after_apply, the Logseq skill's page_name), and
// an alias disagreeing with its field is validation_failed.
func TestSeedAliasesOverREST(t *testing.T) {
	f := newFixture(t)
	var w ops.WriteResult
	f.do(t, "POST", "/v1/ops/write_note", `{"path":"Inbox/alias.md","content":"# Alias\n","apply":true,"reindex_after_apply":false}`).into(t, &w)
	if !w.Applied {
		t.Errorf("write_note with reindex_after_apply: %+v", w)
	}
	r := f.do(t, "POST", "/v1/ops/write_note", `{"path":"Inbox/alias2.md","content":"x","reindex_after_apply":false,"reindex":true}`)
	r.wantErr(t, 400, errs.CodeInvalidInput)
	if r.Error == nil || !strings.Contains(r.Error.Message, "reindex_after_apply (an alias of reindex) and reindex disagree") {
		t.Errorf("conflict message: %+v", r.Error)
	}
	f.do(t, "POST", "/v1/ops/write_note", `{"path":"Inbox/alias3.md","content":"x","reindex_afterapply":false}`).wantErr(t, 400, errs.CodeInvalidInput)
}
