package web

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/ops/write"
	"github.com/loci-dev/loci/internal/web/render"
)

var funcs = template.FuncMap{
	"noteURL": func(p string) string { return "/ui/note?path=" + url.QueryEscape(p) },
	"snippet": snippetHTML,
	"join":    strings.Join,
	"fmtv":    func(v any) string { return fmt.Sprint(v) },
	"cell":    ops.QueryCell,
}

// snippetHTML escapes a snippet and turns its **match** markers into <mark>.
func snippetHTML(s string) template.HTML {
	parts := strings.Split(s, "**")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			b.WriteString("<mark>" + template.HTMLEscapeString(p) + "</mark>")
			continue
		}
		if i%2 == 1 {
			b.WriteString("**")
		}
		b.WriteString(template.HTMLEscapeString(p))
	}
	return template.HTML(b.String())
}

var modes = []string{"hybrid", "lexical", "semantic"}

type fmRow struct {
	Key    string
	Values []chip
}

type noteData struct {
	Note    *read.ReadNoteOut
	Body    template.HTML
	FM      []fmRow
	Links   *index.Links
	LinkErr string
	// Math and Mermaid load the bundled KaTeX and mermaid scripts.
	Math, Mermaid bool
}

func (h *Handler) notePage(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	qv := r.URL.Query()
	// The note's embedded queries are run for the reader (their tables are
	// shown under the note; html/template escapes every cell).
	in := map[string]any{"render_queries": true}
	if n := qv.Get("note"); n != "" {
		in["note"] = n
	} else {
		in["path"] = qv.Get("path")
	}
	p := page{Title: "Note", Nav: "note", Session: s}
	note, err := call[read.ReadNoteOut](ctx, h, "read_note", in)
	if err != nil {
		w.WriteHeader(http.StatusNotFound)
		p.Error = err.Message
		h.render(w, "error", p)
		return
	}
	// The note is rendered as Obsidian's reading view shows it
	// (internal/web/render); its embeds are read through the registry
	// with this session's principal, so its read fence holds for them.
	rctx := ops.WithCaller(ctx, ops.Caller{Surface: "web", Principal: s.principal})
	ro := render.Options{Path: note.Path}
	if rv := h.resolver(rctx); rv != nil {
		ro.Resolver = rv
		ro.Logseq, _ = rv.vh.Vault.LogseqFile(note.Path)
	}
	res := render.Render([]byte(note.Content), ro)
	d := noteData{Note: note, Body: template.HTML(res.HTML), Math: res.Math, Mermaid: res.Mermaid}
	if res.Mermaid {
		w.Header().Set("Content-Security-Policy", noteCSPMermaid)
	} else {
		w.Header().Set("Content-Security-Policy", noteCSP)
	}
	p.Title = note.Title
	keys := make([]string, 0, len(note.Frontmatter))
	for k := range note.Frontmatter {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.FM = append(d.FM, fmRow{Key: k, Values: fmChips(k, note.Frontmatter[k])})
	}
	if links, err := call[read.GetLinksOut](ctx, h, "get_links", map[string]any{"path": note.Path}); err == nil {
		d.Links = &links.Links
	} else {
		d.LinkErr = err.Message
	}
	p.Data = d
	h.render(w, "note", p)
}

func (h *Handler) statusPage(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Index status", Nav: "status", Session: s}
	out, err := call[read.IndexStatusOut](ctx, h, "index_status", map[string]any{})
	if err != nil {
		p.Error = err.Message
	} else {
		p.Data = out
	}
	h.render(w, "status", p)
}

type activityData struct {
	Entries []write.HistoryEntry
	Preview *write.UndoOut
	ID      string
}

func (h *Handler) activityPage(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Recent activity", Nav: "activity", Session: s, Notice: r.URL.Query().Get("done")}
	d := activityData{}
	out, err := call[write.WriteHistoryOut](ctx, h, "write_history", map[string]any{"limit": 30})
	if err != nil {
		p.Error = err.Message
	} else {
		d.Entries = out.Entries
	}
	// ?preview=<id> shows what undoing that change would write (its diff).
	if id := r.URL.Query().Get("preview"); id != "" {
		d.ID = id
		prev, err := call[write.UndoOut](ctx, h, "undo", map[string]any{"id": id})
		if err != nil {
			p.Error = err.Message
		} else {
			d.Preview = prev
		}
	}
	p.Data = d
	h.render(w, "activity", p)
}

// undo applies an undo from the activity page: same origin and CSRF token
// required; if a file changed since the write, the undo operation refuses
// with etag_mismatch.
func (h *Handler) undo(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	if !h.sameOrigin(r) || !h.csrfOK(s, r) {
		w.WriteHeader(http.StatusForbidden)
		h.render(w, "error", page{Title: "Forbidden", Session: s, Error: "This form did not come from this page (cross-site request or stale session); reload the page and try again."})
		return
	}
	id := r.PostFormValue("id")
	// The undo operation is etag-guarded itself: it reverts only if every
	// file still has the etag the change left.
	in := map[string]any{"id": id, "apply": true}
	out, err := call[write.UndoOut](ctx, h, "undo", in)
	if err != nil {
		w.WriteHeader(http.StatusConflict)
		h.render(w, "error", page{Title: "Undo failed", Session: s, Error: err.Code + ": " + err.Message})
		return
	}
	http.Redirect(w, r, "/ui/activity?done="+url.QueryEscape("Undone: "+strings.Join(out.Undone, ", ")), http.StatusSeeOther)
}
