package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/ops/write"
	"github.com/loci-dev/loci/internal/search"
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

type searchData struct {
	Results []search.Result
	Mode    string
	Modes   []string
	Ran     bool
}

func (h *Handler) searchPage(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	mode := r.URL.Query().Get("mode")
	p := page{Title: "Search", Nav: "search", Session: s, Query: q, Mode: mode}
	d := searchData{Modes: modes, Mode: mode}
	if q != "" {
		in := map[string]any{"query": q, "limit": 20}
		if mode != "" {
			in["mode"] = mode
		}
		out, err := call[read.SearchNotesOut](ctx, h, "search_notes", in)
		if err != nil {
			p.Error = err.Message
		} else {
			d.Results, d.Mode, d.Ran = out.Results, out.Mode, true
		}
	}
	p.Data = d
	h.render(w, "search", p)
}

type fmRow struct {
	Key   string
	Value string
}

type noteData struct {
	Note    *read.ReadNoteOut
	Body    template.HTML
	FM      []fmRow
	Links   *index.Links
	LinkErr string
}

var frontmatterRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)\A---\r?\n.*?\r?\n(---|\.\.\.)\r?\n?`) })

// wikilinkRE matches [[target#heading|display]] and ![[embed]].
var wikilinkRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`!?\[\[([^\]\|#]*)(#[^\]\|]*)?(?:\|([^\]]*))?\]\]`) })

var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

// renderMarkdown renders note text for display: frontmatter dropped (it is
// shown as a table), wikilinks turned into links to the note view. Raw HTML
// in notes is not rendered (goldmark's default), so a note cannot script
// the page.
func renderMarkdown(src string) template.HTML {
	src = frontmatterRE().ReplaceAllString(src, "")
	src = outsideCode(src, wikilinks)
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	return template.HTML(b.String())
}

// outsideCode applies fn to the text outside fenced code blocks and inline
// code spans.
func outsideCode(src string, fn func(string) string) string {
	lines := strings.SplitAfter(src, "\n")
	var b strings.Builder
	fence := ""
	for _, line := range lines {
		t := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			b.WriteString(line)
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			b.WriteString(line)
			continue
		}
		parts := strings.Split(line, "`")
		for i, p := range parts {
			if i > 0 {
				b.WriteString("`")
			}
			if i%2 == 0 || i == len(parts)-1 {
				p = fn(p)
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

func wikilinks(src string) string {
	return wikilinkRE().ReplaceAllStringFunc(src, func(m string) string {
		sm := wikilinkRE().FindStringSubmatch(m)
		target, heading, display := strings.TrimSpace(sm[1]), sm[2], sm[3]
		if display == "" {
			display = target + heading
			if target == "" {
				display = strings.TrimPrefix(heading, "#")
			}
		}
		if target == "" {
			return escapeMD(display)
		}
		return "[" + escapeMD(display) + "](<" + "/ui/note?note=" + url.QueryEscape(target) + ">)"
	})
}

func escapeMD(s string) string {
	return strings.NewReplacer(`[`, `\[`, `]`, `\]`, `*`, `\*`, `_`, `\_`, "`", "\\`", `<`, `\<`).Replace(s)
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
	d := noteData{Note: note, Body: renderMarkdown(note.Content)}
	p.Title = note.Title
	keys := make([]string, 0, len(note.Frontmatter))
	for k := range note.Frontmatter {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.FM = append(d.FM, fmRow{Key: k, Value: fmt.Sprint(note.Frontmatter[k])})
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
