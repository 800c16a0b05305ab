package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/testutil"
)

// viewsFixture is a small vault with known links, tags and folders, a
// fenced HR folder (deny_read_paths) and 25 notes tagged #many for paging.
func viewsFixture(t testing.TB) (*httptest.Server, *ops.Env) {
	t.Helper()
	files := map[string]string{
		"A.md":             "---\ntags: [alpha]\n---\n# A\n\n[[B]] and [[C]] #beta\n",
		"B.md":             "# B\n\n[[A]] #alpha/sub\n",
		"Sub/C.md":         "# C\n\n[[D]] #beta\n",
		"Sub/Deep/D.md":    "# D\n\nplain\n",
		"HR/Salaries.md":   "# Salaries\n\nhushword [[A]] #hush\n",
		"HR/Reviews.md":    "# Reviews\n\nhushword\n",
		"Inbox/Note 1.md":  "# Note one\n\nfirst\n",
		"Inbox/Note 12.md": "# Note twelve\n\nsecond\n",
	}
	for i := 1; i <= 25; i++ {
		files[fmt.Sprintf("Many/n%02d.md", i)] = fmt.Sprintf("# N%02d\n\nmanyword %d #many\n", i, i)
	}
	root := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, root, files)
	env := openEnv(t, root, ops.ReadRules{DenyReadPaths: []string{"HR/**"}})
	return serveEnv(t, env), env
}

func getJSON[T any](t *testing.T, c *http.Client, u string, wantCode int) *T {
	t.Helper()
	code, body := get(t, c, u)
	if code != wantCode {
		t.Fatalf("%s: %d %s", u, code, body)
	}
	var out T
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("%s: %v: %s", u, err, body)
	}
	return &out
}

// titlesIn lists the result titles of a results list, in order.
func titlesIn(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<span class="title">([^<]*)</span>`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestGraphView(t *testing.T) {
	srv, _ := viewsFixture(t)
	c := login(t, srv)

	code, body := get(t, c, srv.URL+"/ui/graph?limit=3")
	if code != 200 || !strings.Contains(body, `id="graph" data-src="/ui/graph.json?limit=3"`) || !strings.Contains(body, `<script src="/ui/static/views.js" defer>`) ||
		!strings.Contains(body, `href="/ui/graph" aria-current="page">Graph</a>`) {
		t.Fatalf("graph page: %d %s", code, body)
	}
	// The whole graph, cut at 3: A and C have two linked notes each, B one
	// (HR, fenced, links to A but is not counted); 31 visible notes.
	g := getJSON[read.GetGraphOut](t, c, srv.URL+"/ui/graph.json?limit=3", 200)
	var nodes, edges []string
	for _, n := range g.Nodes {
		nodes = append(nodes, fmt.Sprintf("%s:%d", n.Path, n.Degree))
	}
	for _, e := range g.Edges {
		edges = append(edges, e.Source+">"+e.Target)
	}
	if !slices.Equal(nodes, []string{"A.md:2", "Sub/C.md:2", "B.md:1"}) || !slices.Equal(edges, []string{"A.md>B.md", "A.md>Sub/C.md", "B.md>A.md"}) ||
		g.Total != 31 || !g.Truncated {
		t.Errorf("graph = %v %v total %d truncated %v", nodes, edges, g.Total, g.Truncated)
	}
	// A local graph by name, two hops: A, then B and C, then D.
	g = getJSON[read.GetGraphOut](t, c, srv.URL+"/ui/graph.json?note=A&depth=2", 200)
	nodes = nil
	for _, n := range g.Nodes {
		nodes = append(nodes, fmt.Sprintf("%s:%d", n.Path, n.Distance))
	}
	if !slices.Equal(nodes, []string{"A.md:0", "B.md:1", "Sub/C.md:1", "Sub/Deep/D.md:2"}) || g.Center != "A.md" || g.Total != 4 {
		t.Errorf("local graph = %v center %q total %d", nodes, g.Center, g.Total)
	}
	code, body = get(t, c, srv.URL+"/ui/graph?path=A.md&depth=2")
	if code != 200 || !strings.Contains(body, `Graph of <a href="/ui/note?path=A.md">A.md</a>`) || !strings.Contains(body, `<option value="2" selected>`) {
		t.Errorf("local graph page: %d %s", code, body)
	}
	// A fenced note is not found, like a missing one; bad numbers are
	// invalid input; nothing of HR leaks into the whole graph.
	for u, want := range map[string]int{"/ui/graph.json?path=HR/Salaries.md": 404, "/ui/graph.json?path=Nope.md": 404,
		"/ui/graph.json?depth=x&path=A.md": 400, "/ui/graph.json?limit=5000": 400, "/ui/graph.json?depth=2": 400, "/ui/graph.json?path=../../etc/passwd": 403} {
		code, body := get(t, c, srv.URL+u)
		if code != want || !strings.Contains(body, `"error"`) || strings.Contains(body, "Salaries\"") && want != 404 {
			t.Errorf("%s: %d %s, want %d", u, code, body, want)
		}
	}
	_, body = get(t, c, srv.URL+"/ui/graph.json?limit=2000")
	if strings.Contains(body, "HR/") || strings.Contains(body, "Salaries") {
		t.Errorf("the graph leaks HR: %s", body)
	}
	// Without a session: the login page, no graph.
	if code, body := get(t, client(t), srv.URL+"/ui/graph.json"); code != 401 || strings.Contains(body, "A.md") {
		t.Errorf("unauthenticated graph.json: %d", code)
	}
}

func TestTagsView(t *testing.T) {
	srv, _ := viewsFixture(t)
	c := login(t, srv)
	code, body := get(t, c, srv.URL+"/ui/tags")
	if code != 200 || !strings.Contains(body, `<a class="tag" href="/ui/tags?tag=many">#many</a> <span class="count">25</span>`) ||
		!strings.Contains(body, `<a class="tag" href="/ui/tags?tag=beta">#beta</a> <span class="count">2</span>`) || strings.Contains(body, "hush") {
		t.Fatalf("tags: %d %s", code, body)
	}
	// A tag's notes by title, 20 a page; a nested tag counts for its parent.
	_, body = get(t, c, srv.URL+"/ui/tags?tag=many")
	if got := titlesIn(body); len(got) != 20 || got[0] != "N01" || got[19] != "N20" || !strings.Contains(body, `<a rel="next" href="/ui/tags?page=2&amp;tag=many">`) || strings.Contains(body, `rel="prev"`) {
		t.Errorf("page 1: %v %s", got, body)
	}
	_, body = get(t, c, srv.URL+"/ui/tags?tag=many&page=2")
	if got := titlesIn(body); !slices.Equal(got, []string{"N21", "N22", "N23", "N24", "N25"}) || !strings.Contains(body, `<ol class="results" id="results" start="21">`) ||
		!strings.Contains(body, `<a rel="prev" href="/ui/tags?tag=many">`) || strings.Contains(body, `rel="next"`) {
		t.Errorf("page 2: %v", got)
	}
	_, body = get(t, c, srv.URL+"/ui/tags?tag=%23alpha")
	if got := titlesIn(body); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("#alpha (and alpha/sub) = %v", got)
	}
	_, body = get(t, c, srv.URL+"/ui/tags?tag=hush")
	if got := titlesIn(body); len(got) != 0 || !strings.Contains(body, "No note carries #hush") || strings.Contains(body, "Salaries") {
		t.Errorf("a fenced tag = %v", got)
	}
	_, body = get(t, c, srv.URL+"/ui/tags?tag=%3Cscript%3E")
	if strings.Contains(body, "<script>") {
		t.Errorf("tag not escaped")
	}
}

func TestFilesView(t *testing.T) {
	srv, _ := viewsFixture(t)
	c := login(t, srv)
	code, body := get(t, c, srv.URL+"/ui/files")
	if code != 200 || !strings.Contains(body, `<span class="count">31 notes</span>`) || strings.Contains(body, "HR") || strings.Contains(body, "Salaries") {
		t.Fatalf("files: %d %s", code, body)
	}
	// Nested: Sub holds C.md and the Deep folder, which holds D.md.
	re := regexp.MustCompile(`(?s)<summary>Sub <span class="count">2</span>.*?<summary>Deep <span class="count">1</span>.*?href="/ui/note\?path=Sub%2FDeep%2FD.md">D.md</a>.*?</details></li>\s*<li class="file"><a href="/ui/note\?path=Sub%2FC.md">C.md</a>`)
	if !re.MatchString(body) {
		t.Errorf("tree nesting: %s", body)
	}
	// Root notes after the folders; folders alphabetical.
	if i, j, k := strings.Index(body, "<summary>Inbox"), strings.Index(body, "<summary>Many"), strings.Index(body, ">A.md</a>"); i < 0 || j < i || k < j {
		t.Errorf("order: Inbox %d Many %d A.md %d", i, j, k)
	}
	code, body = get(t, c, srv.URL+"/ui/files?path=Sub")
	if code != 200 || !strings.Contains(body, "Files: Sub") || !strings.Contains(body, `<span class="count">2 notes</span>`) || strings.Contains(body, "A.md") {
		t.Errorf("files of Sub: %d %s", code, body)
	}
	for _, p := range []string{"../..", "HR"} {
		_, body = get(t, c, srv.URL+"/ui/files?path="+p)
		if !strings.Contains(body, `class="error"`) || strings.Contains(body, "Salaries") {
			t.Errorf("files?path=%s: %s", p, body)
		}
	}
}

func TestSearchFiltersAndPages(t *testing.T) {
	srv, _ := viewsFixture(t)
	c := login(t, srv)
	// A tag alone lists its notes by title; a folder alone the notes under it.
	_, body := get(t, c, srv.URL+"/?tag=beta")
	if got := titlesIn(body); !slices.Equal(got, []string{"A", "C"}) || !strings.Contains(body, `<input name="tag" value="beta"`) {
		t.Errorf("tag beta = %v", got)
	}
	_, body = get(t, c, srv.URL+"/?folder=Sub/")
	if got := titlesIn(body); !slices.Equal(got, []string{"C", "D"}) {
		t.Errorf("folder Sub = %v", got)
	}
	// Words with a folder: only matches inside it.
	_, body = get(t, c, srv.URL+"/?q=manyword&mode=lexical&folder=Many")
	if got := titlesIn(body); len(got) != 20 || !strings.Contains(body, `rel="next" href="/?folder=Many&amp;mode=lexical&amp;page=2&amp;q=manyword"`) ||
		!strings.Contains(body, "results 1–20 · mode lexical · in Many/") {
		t.Errorf("page 1 = %d results: %s", len(got), body)
	}
	_, body = get(t, c, srv.URL+"/?q=manyword&mode=lexical&folder=Many&page=2")
	if got := titlesIn(body); len(got) != 5 || !strings.Contains(body, "results 21–25") || !strings.Contains(body, `rel="prev"`) || strings.Contains(body, `rel="next"`) {
		t.Errorf("page 2 = %v", got)
	}
	// The filter form keeps the mode asked for: auto stays auto.
	_, body = get(t, c, srv.URL+"/?q=manyword")
	if !strings.Contains(body, `<label>Mode <select name="mode"><option value="">auto</option><option value="hybrid" >hybrid</option><option value="lexical" >lexical</option>`) {
		t.Errorf("auto not kept: %s", body)
	}
	_, body = get(t, c, srv.URL+"/?q=manyword&folder=Inbox")
	if got := titlesIn(body); len(got) != 0 || !strings.Contains(body, "Nothing found") {
		t.Errorf("manyword in Inbox = %v", got)
	}
	// The folder list offers the top folders, not the fenced one.
	if !strings.Contains(body, `<option value="Many">`) || strings.Contains(body, `<option value="HR">`) {
		t.Errorf("folder list: %s", body)
	}
	// A fenced folder finds nothing; a bad mode is an error message.
	_, body = get(t, c, srv.URL+"/?q=hushword&folder=HR")
	if strings.Contains(body, "Salaries") {
		t.Errorf("fenced search leaks")
	}
	_, body = get(t, c, srv.URL+"/?q=x&mode=bogus")
	if !strings.Contains(body, `class="error"`) {
		t.Errorf("bad mode: %s", body)
	}
}

// TestSearchFolderNamedLikeAGlob: a folder whose name holds glob
// characters filters to itself, not to what the glob would match.
func TestSearchFolderNamedLikeAGlob(t *testing.T) {
	srv, env := viewsFixture(t)
	vh := env.Vaults[0]
	testutil.WriteFiles(t, vh.Vault.Root, map[string]string{
		"Odd [x]/E.md": "# E\n\noddword\n", "Odd x/F.md": "# F\n\noddword\n", "Star*/G.md": "# G\n\noddword\n",
		"Starry/H.md": "# H\n\noddword\n",
	})
	if _, err := env.Sync(context.Background(), vh, index.SyncOptions{NoEmbed: true}); err != nil {
		t.Fatal(err)
	}
	c := login(t, srv)
	for folder, want := range map[string][]string{"Odd [x]": {"E"}, "Star*": {"G"}, "Odd x": {"F"}} {
		for _, q := range []string{"", "oddword"} {
			_, body := get(t, c, srv.URL+"/?mode=lexical&folder="+url.QueryEscape(folder)+"&q="+q)
			if got := titlesIn(body); !slices.Equal(got, want) {
				t.Errorf("folder %q, q %q = %v, want %v", folder, q, got, want)
			}
		}
	}
}

// readEvents reads SSE records from r until one of kind until arrives,
// returning the "event: data" pairs seen.
func readEvents(t *testing.T, sc *bufio.Scanner, until string) []string {
	t.Helper()
	var out []string
	kind := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, kind+" "+strings.TrimPrefix(line, "data: "))
			if kind == until {
				return out
			}
		}
	}
	t.Fatalf("stream ended before %s: %v (%v)", until, out, sc.Err())
	return nil
}

func TestLiveEvents(t *testing.T) {
	srv, env := viewsFixture(t)
	c := login(t, srv)
	// CSP lets the pages' scripts talk to this server only (the note page
	// too: its local graph, the Pending badge and the event stream).
	for _, p := range []string{"/ui/status", "/ui/note?path=A.md", "/ui/graph"} {
		resp, err := c.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "script-src 'unsafe") {
			t.Errorf("%s: CSP = %q", p, csp)
		}
	}
	_, body := get(t, c, srv.URL+"/ui/status")
	if !strings.Contains(body, `<progress id="sync-bar" max="31" value="31">`) || !strings.Contains(body, `id="embed-bar"`) {
		t.Errorf("status page bars: %s", body)
	}
	st := getJSON[map[string]any](t, c, srv.URL+"/ui/status.json", 200)
	if (*st)["notes"] != float64(31) || (*st)["watcher_lag_ms"] != float64(0) {
		t.Errorf("status.json = %v", *st)
	}

	// Without a session the stream is the login page.
	if code, _ := get(t, client(t), srv.URL+"/ui/events"); code != 401 {
		t.Errorf("unauthenticated events: %d", code)
	}
	resp, err := c.Get(srv.URL + "/ui/events?kinds=index,note")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	// The opening comment comes once the stream is subscribed.
	for sc.Scan() && !strings.HasPrefix(sc.Text(), ": loci events") {
	}
	root := env.Vaults[0].Vault.Root
	os.WriteFile(filepath.Join(root, "New.md"), []byte("# New\n\nfresh [[A]]\n"), 0o644)
	os.WriteFile(filepath.Join(root, "HR", "Bonus.md"), []byte("# Bonus\n\nhushword\n"), 0o644)
	if _, err := env.Sync(context.Background(), env.Vaults[0], index.SyncOptions{NoEmbed: true}); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, sc, ops.EventSyncFinished)
	var kinds []string
	var progress []map[string]any
	for _, e := range evs {
		kind, data, _ := strings.Cut(e, " ")
		kinds = append(kinds, kind)
		if strings.Contains(data, "Bonus") || strings.Contains(data, "HR/") {
			t.Errorf("a fenced note's event reached the page: %s", e)
		}
		if kind == ops.EventSyncProgress {
			var ev ops.Event
			json.Unmarshal([]byte(data), &ev)
			progress = append(progress, ev.Data)
		}
	}
	if kinds[0] != ops.EventSyncStarted || !slices.Contains(kinds, ops.EventNoteCreated) || len(progress) < 2 {
		t.Fatalf("events: %v", evs)
	}
	// 35 files on disk (the fenced ones are indexed too): 33 unchanged, then all 35.
	first, last := progress[0], progress[len(progress)-1]
	if first["done"] != float64(33) || first["total"] != float64(35) || last["done"] != float64(35) || last["total"] != float64(35) {
		t.Errorf("progress %v .. %v", first, last)
	}
	if !strings.Contains(strings.Join(evs, "\n"), `"path":"New.md"`) {
		t.Errorf("no note.created for New.md: %v", evs)
	}
}

func TestViewsStaticAssets(t *testing.T) {
	srv, _ := viewsFixture(t)
	c := login(t, srv)
	for _, p := range []string{"/ui/static/views.js", "/ui/static/views.css"} {
		resp, err := c.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || (!strings.Contains(resp.Header.Get("Content-Type"), "javascript") && !strings.Contains(resp.Header.Get("Content-Type"), "css")) {
			t.Errorf("%s: %d %s", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	// No page carries an inline script or an outside address.
	for _, p := range []string{"/", "/ui/graph", "/ui/tags", "/ui/files", "/ui/status", "/?tag=many"} {
		_, body := get(t, c, srv.URL+p)
		if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`).MatchString(body) || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("%s has an inline script or an outside address", p)
		}
	}
}

// FuzzViewParams: any query string on the view pages and their JSON is
// answered without a server error (a typed error page or JSON instead),
// and never shows a fenced note.
func FuzzViewParams(f *testing.F) {
	srv, _ := viewsFixture(f)
	c := client(nil)
	if resp, err := c.Get(srv.URL + "/?token=" + token); err != nil {
		f.Fatal(err)
	} else {
		resp.Body.Close()
	}
	for _, seed := range []string{"", "path=A.md&depth=2", "note=%5B%5BA%5D%5D", "limit=-1", "depth=99999999999999999999", "tag=%00", "folder=../..", "page=0",
		"q=manyword&page=3&mode=lexical", "path=HR%2FSalaries.md", "tag=many&page=-2", "folder=%2F%2F&tag=%23", "q=%22&folder=*"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, p := range []string{"/", "/ui/graph", "/ui/graph.json", "/ui/tags", "/ui/files"} {
			resp, err := c.Get(srv.URL + p + "?" + raw)
			if err != nil {
				return // not a URL the client will send
			}
			b := make([]byte, 1<<20)
			n, _ := io.ReadFull(resp.Body, b)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Errorf("%s?%s: %d %s", p, raw, resp.StatusCode, b[:n])
			}
			// (A name in the input may be echoed back, as for a missing note.)
			echoed := strings.Contains(strings.ToLower(raw+"|"+mustUnescape(raw)), "salar")
			if strings.Contains(string(b[:n]), "hushword") || !echoed && strings.Contains(string(b[:n]), "Salaries") {
				t.Errorf("%s?%s shows a fenced note", p, raw)
			}
		}
	})
}

func mustUnescape(s string) string {
	u, err := url.QueryUnescape(s)
	if err != nil {
		return s
	}
	return u
}
