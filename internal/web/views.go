package web

// The views of the UI beyond search and the note page: the link graph
// (/ui/graph, drawn in the browser by views.js from /ui/graph.json, the
// get_graph operation), the tag pane (/ui/tags, list_tags; ?tag= lists its
// notes with search_notes) and the file tree (/ui/files, get_vault_tree).
// Every one calls its operation through the registry, so read fences and
// scopes apply as on every other surface.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/search"
)

func init() {
	funcs["base"] = path.Base           // the file tree's names
	funcs["add"] = func(n ...int) int { // the search page's "results 21-40"
		t := 0
		for _, x := range n {
			t += x
		}
		return t
	}
}

// serveView serves the pages of this file and live.go; false when the
// request is for none of them.
func (h *Handler) serveView(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) bool {
	if !isGet(r) {
		return false
	}
	switch r.URL.Path {
	case "/":
		h.searchView(ctx, w, r, s)
	case "/ui/graph":
		h.graphPage(ctx, w, r, s)
	case "/ui/graph.json":
		h.graphJSON(ctx, w, r)
	case "/ui/tags":
		h.tagsPage(ctx, w, r, s)
	case "/ui/files":
		h.filesPage(ctx, w, r, s)
	case "/ui/events":
		h.events(ctx, w, r, s)
	case "/ui/status.json":
		h.statusJSON(ctx, w)
	default:
		return false
	}
	return true
}

// atoi reads a whole-number parameter; anything else is -1, which the
// operation refuses as invalid_input.
func atoi(s string) int {
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// graphInput is get_graph's input from the query string: path or note,
// depth, limit.
func graphInput(q url.Values) map[string]any {
	in := map[string]any{}
	if p := q.Get("path"); p != "" {
		in["path"] = p
	} else if n := q.Get("note"); n != "" {
		in["note"] = n
	}
	if d := atoi(q.Get("depth")); d != 0 {
		in["depth"] = d
	}
	if l := atoi(q.Get("limit")); l != 0 {
		in["limit"] = l
	}
	return in
}

type graphData struct {
	Src    string // the JSON the script draws
	Center string // local graph: the note asked for (path or name)
	Depth  int
	Limit  int
	Depths []int
	Limits []int
}

func (h *Handler) graphPage(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	p := page{Title: "Graph", Nav: "graph", Session: s}
	in := graphInput(q)
	d := graphData{Depths: []int{1, 2, 3}, Limits: []int{50, 100, 200, 500, 1000, 2000}, Limit: 200, Depth: 1}
	if v, ok := in["limit"].(int); ok {
		d.Limit = v
	}
	if v, ok := in["depth"].(int); ok {
		d.Depth = v
	}
	for _, k := range []string{"path", "note"} {
		if v, ok := in[k].(string); ok {
			d.Center = v
			p.Title = "Graph of " + path.Base(v)
		}
	}
	d.Src = "/ui/graph.json?" + r.URL.RawQuery
	p.Data = d
	h.render(w, "graph", p)
}

// graphJSON answers get_graph's output, or {"error": ...} with the status
// of its code.
func (h *Handler) graphJSON(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	out, err := call[read.GetGraphOut](ctx, h, "get_graph", graphInput(r.URL.Query()))
	if err != nil {
		writeJSON(w, api.HTTPStatus(err.Code), map[string]any{"error": err})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// pageSize is the number of notes per page of a tag's list and of search
// results.
const pageSize = 20

type tagsData struct {
	Tags  []index.TagCount
	Tag   string
	Notes []search.Result
	Pager pager
}

// pager links the pages of a list: page n of the URL base (with its other
// parameters).
type pager struct {
	Page      int
	Prev      string
	Next      string
	FirstItem int
}

func newPager(base url.Values, route string, pageNo int, more bool) pager {
	pg := pager{Page: pageNo, FirstItem: (pageNo-1)*pageSize + 1}
	link := func(n int) string {
		v := url.Values{}
		for k, vs := range base {
			v[k] = vs
		}
		v.Del("page")
		if n > 1 {
			v.Set("page", strconv.Itoa(n))
		}
		return route + "?" + v.Encode()
	}
	if pageNo > 1 {
		pg.Prev = link(pageNo - 1)
	}
	if more {
		pg.Next = link(pageNo + 1)
	}
	return pg
}

// pageNumber reads ?page= (1 when absent or not a page number).
func pageNumber(q url.Values) int {
	n := atoi(q.Get("page"))
	if n < 1 || n > 10000 {
		return 1
	}
	return n
}

func (h *Handler) tagsPage(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	tag := strings.TrimPrefix(strings.TrimSpace(q.Get("tag")), "#")
	p := page{Title: "Tags", Nav: "tags", Session: s}
	d := tagsData{Tag: tag}
	if tag == "" {
		out, err := call[read.ListTagsOut](ctx, h, "list_tags", map[string]any{})
		if err != nil {
			p.Error = err.Message
		} else {
			d.Tags = out.Tags
		}
	} else {
		p.Title = "#" + tag
		n := pageNumber(q)
		in := map[string]any{"tags": []string{tag}, "sort": "title", "limit": pageSize, "cursor": ops.EncodeCursor((n - 1) * pageSize)}
		out, err := call[read.SearchNotesOut](ctx, h, "search_notes", in)
		if err != nil {
			p.Error = err.Message
		} else {
			d.Notes = out.Results
			d.Pager = newPager(url.Values{"tag": {tag}}, "/ui/tags", n, out.NextCursor != "")
		}
	}
	p.Data = d
	h.render(w, "tags", p)
}

// folder is one folder of the file tree, with its notes and subfolders.
type folder struct {
	Name    string
	Path    string
	Count   int
	Folders []*folder
	Notes   []read.TreeEntry
	Open    bool
}

type filesData struct {
	Root      *folder
	Truncated bool
}

func (h *Handler) filesPage(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Files", Nav: "files", Session: s}
	in := map[string]any{"depth": 20, "limit": 5000}
	start := strings.Trim(r.URL.Query().Get("path"), "/")
	if start != "" {
		in["path"] = start
		p.Title = "Files: " + start
	}
	out, err := call[read.TreeOut](ctx, h, "get_vault_tree", in)
	if err != nil {
		p.Error = err.Message
		h.render(w, "files", p)
		return
	}
	p.Data = filesData{Root: buildTree(out), Truncated: out.Truncated}
	h.render(w, "files", p)
}

// buildTree nests get_vault_tree's depth-first list: each entry goes into
// the folder of its parent path (folders first, each list in the order
// given, which is alphabetical).
func buildTree(out *read.TreeOut) *folder {
	root := &folder{Name: out.Path, Path: out.Path, Count: out.NoteCount, Open: true}
	byPath := map[string]*folder{out.Path: root}
	parentOf := func(p string) *folder {
		dir := path.Dir(p)
		if dir == "." {
			dir = ""
		}
		if f := byPath[dir]; f != nil {
			return f
		}
		return root
	}
	for _, e := range out.Entries {
		par := parentOf(e.Path)
		if e.Type == "folder" {
			f := &folder{Name: path.Base(e.Path), Path: e.Path, Count: e.NoteCount, Open: e.Depth == 1 && out.NoteCount <= 200}
			byPath[e.Path] = f
			par.Folders = append(par.Folders, f)
			continue
		}
		par.Notes = append(par.Notes, e)
	}
	return root
}
