package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/search"
)

type searchViewData struct {
	Results []search.Result
	Mode    string // the mode the search used
	Asked   string // the mode asked for ("" is auto), for the filter form
	Modes   []string
	Ran     bool
	// Filters: a tag (nested tags match) and a folder (path glob
	// folder/**); with no words they list the notes that pass, by title.
	Tag     string
	Folder  string
	Folders []string
	Pager   pager
}

// searchView is / : the search box's results, with filters (mode, tag,
// folder) and pages of 20 (?page=).
func (h *Handler) searchView(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	qv := r.URL.Query()
	q := strings.TrimSpace(qv.Get("q"))
	mode := qv.Get("mode")
	tag := strings.TrimPrefix(strings.TrimSpace(qv.Get("tag")), "#")
	dir := strings.Trim(strings.TrimSpace(qv.Get("folder")), "/")
	p := page{Title: "Search", Nav: "search", Session: s, Query: q, Mode: mode}
	d := searchViewData{Modes: modes, Mode: mode, Asked: mode, Tag: tag, Folder: dir}
	if tree, err := call[read.TreeOut](ctx, h, "get_vault_tree", map[string]any{"depth": 1}); err == nil {
		for _, e := range tree.Entries {
			if e.Type == "folder" {
				d.Folders = append(d.Folders, e.Path)
			}
		}
	}
	if q != "" || tag != "" || dir != "" {
		n := pageNumber(qv)
		in := map[string]any{"query": q, "limit": pageSize, "cursor": ops.EncodeCursor((n - 1) * pageSize)}
		if mode != "" {
			in["mode"] = mode
		}
		if tag != "" {
			in["tags"] = []string{tag}
		}
		if dir != "" {
			in["path_glob"] = globQuote.Replace(dir) + "/**"
		}
		if q == "" {
			in["sort"] = "title"
			delete(in, "mode")
		}
		out, err := call[read.SearchNotesOut](ctx, h, "search_notes", in)
		if err != nil {
			p.Error = err.Message
		} else {
			d.Results, d.Mode, d.Ran = out.Results, out.Mode, true
			base := url.Values{}
			for k, v := range map[string]string{"q": q, "mode": mode, "tag": tag, "folder": dir} {
				if v != "" {
					base.Set(k, v)
				}
			}
			d.Pager = newPager(base, "/", n, out.NextCursor != "")
		}
	}
	p.Data = d
	h.render(w, "search", p)
}

// globQuote escapes doublestar's special characters, so that a folder
// named "Notes [old]" or "Star*" filters to itself.
var globQuote = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`, "{", `\{`, "}", `\}`)
