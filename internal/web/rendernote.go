package web

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/logseq"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/vault"
	"github.com/loci-dev/loci/internal/web/render"
)

// noteCSP is the note view's Content-Security-Policy: the UI's (with
// connect-src 'self' for views.js: the local graph, the Pending count), plus the
// vault's media (audio, video, PDF frames) and the bundled KaTeX fonts,
// all from this server. Scripts stay 'self' only; mermaid's diagrams
// carry their own <style>, so a page that draws one allows inline styles.
const (
	noteCSP        = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; media-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	noteCSPMermaid = "default-src 'none'; style-src 'self' 'unsafe-inline'; script-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; media-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// noteResolver finds a rendered note's embeds through the registry and the
// vault's confinement, as the session's principal may see them.
type noteResolver struct {
	h   *Handler
	ctx context.Context
	vh  *ops.VaultHandle
}

func (h *Handler) resolver(ctx context.Context) *noteResolver {
	vh, err := h.env.Vault("")
	if err != nil {
		return nil
	}
	return &noteResolver{h: h, ctx: ctx, vh: vh}
}

// Note reads an embedded note with read_note (its name resolution, read
// fence and permission).
func (rv *noteResolver) Note(from, target, heading string) (string, string, bool, error) {
	in := map[string]any{"note": target, "max_chars": 200000}
	if heading != "" {
		// [[Note#Parent#Child]] is a heading path.
		in["heading"] = strings.Join(strings.Split(heading, "#"), " > ")
	}
	out, err := call[read.ReadNoteOut](rv.ctx, rv.h, "read_note", in)
	if err != nil {
		return "", "", false, err
	}
	outline, _ := rv.vh.Vault.LogseqFile(out.Path)
	return out.Path, out.Content, outline, nil
}

// Block finds a Logseq block with get_block (fenced as every read): its
// text, then its children as an outline (what {{embed ((uuid))}} shows).
func (rv *noteResolver) Block(uuid string) (string, string) {
	out, err := call[logseq.GetBlockOut](rv.ctx, rv.h, "get_block", map[string]any{"uuid": uuid})
	if err != nil {
		return "", ""
	}
	if len(out.Children) == 0 {
		return out.Page, out.Content
	}
	var b strings.Builder
	b.WriteString(out.Content + "\n\n")
	outlineMD(&b, out.Children, 0)
	return out.Page, b.String()
}

// outlineMD writes blocks as a Markdown outline.
func outlineMD(b *strings.Builder, nodes []logseq.BlockNode, depth int) {
	ind := strings.Repeat("  ", depth)
	for _, n := range nodes {
		lines := strings.Split(n.Content, "\n")
		b.WriteString(ind + "- " + lines[0] + "\n")
		for _, l := range lines[1:] {
			b.WriteString(ind + "  " + l + "\n")
		}
		outlineMD(b, n.Children, depth+1)
	}
}

// Media resolves an attachment as Obsidian does: a vault-relative path,
// then relative to the note's folder, then by file name anywhere (the
// shortest path wins).
func (rv *noteResolver) Media(from, target string) string {
	target = strings.TrimPrefix(strings.TrimSpace(target), "/")
	if target == "" {
		return ""
	}
	for _, c := range []string{target, path.Join(path.Dir(from), target)} {
		if rel, err := rv.h.mediaFile(rv.ctx, rv.vh, c); err == nil {
			return rel
		}
	}
	for _, c := range mediaByName(rv.vh.Vault, path.Base(target)) {
		if rel, err := rv.h.mediaFile(rv.ctx, rv.vh, c); err == nil {
			return rel
		}
	}
	return ""
}

// mediaFile checks that rel is an attachment the call may read: a clean
// vault-relative path (no "..", not absolute), a media extension, no
// hidden or ignored folder, inside the read fence, and a regular file
// reached without following a symbolic link at any component. It returns
// the canonical path.
func (h *Handler) mediaFile(ctx context.Context, vh *ops.VaultHandle, rel string) (string, error) {
	clean, err := vault.CleanRel(rel)
	if err != nil {
		return "", err
	}
	if render.MediaKind(clean) == "" {
		return "", errs.New(errs.CodePathDenied, "%s is not an image, PDF, audio or video file", clean).With("path", clean)
	}
	for _, seg := range strings.Split(clean, "/") {
		if strings.HasPrefix(seg, ".") {
			return "", errs.New(errs.CodePathDenied, "hidden files and folders are not served").With("path", clean)
		}
	}
	if vh.Vault.Excluded(clean) {
		return "", errs.New(errs.CodePathDenied, "%s is excluded", clean).With("path", clean)
	}
	if op, ok := h.reg.Get("read_note"); !ok || h.env.Permits(ops.CallerFrom(ctx).Principal, op) != nil {
		return "", errs.New(errs.CodePathDenied, "reading notes is not allowed")
	}
	if !ops.FenceFor(ctx, vh).Allows(clean) {
		return "", ops.NotFound(clean)
	}
	st, err := vh.Vault.FS().Lstat(clean)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", errs.New(errs.CodePathDenied, "%s is not a regular file", clean).With("path", clean)
	}
	return clean, nil
}

var mediaTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".svg": "image/svg+xml", ".bmp": "image/bmp", ".avif": "image/avif", ".ico": "image/x-icon",
	".pdf": "application/pdf",
	".mp3": "audio/mpeg", ".wav": "audio/wav", ".m4a": "audio/mp4", ".ogg": "audio/ogg", ".oga": "audio/ogg",
	".flac": "audio/flac", ".opus": "audio/ogg", ".aac": "audio/aac", ".3gp": "audio/3gpp",
	".mp4": "video/mp4", ".webm": "video/webm", ".ogv": "video/ogg", ".mov": "video/quicktime", ".mkv": "video/x-matroska",
}

// media serves an attachment of the vault (/ui/media?path=…): the checks
// of mediaFile, then the file opened without following links, with its
// own Content-Type (never sniffed). Anything refused is a 404 that does
// not tell what exists.
func (h *Handler) media(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	vh, err := h.env.Vault("")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	ctx = ops.WithCaller(ctx, ops.Caller{Surface: "web", Principal: s.principal})
	clean, err := h.mediaFile(ctx, vh, r.URL.Query().Get("path"))
	if err != nil {
		h.log.Debug("web: media refused", "path", r.URL.Query().Get("path"), "error", err)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	f, err := vh.Vault.FS().OpenFile(clean, os.O_RDONLY, 0)
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", mediaTypes[strings.ToLower(path.Ext(clean))])
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "private, no-cache")
	if render.MediaKind(clean) == "pdf" {
		// The note view shows a PDF in a frame of its own origin.
		hd.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'self'")
		hd.Set("X-Frame-Options", "SAMEORIGIN")
	} else {
		// An SVG opened on its own runs nothing.
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox")
	}
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// mediaIndex lists the vault's attachments by lower-cased file name, for
// ![[name.png]] embeds that give no folder. It is rebuilt when older than
// mediaIndexAge.
type mediaIndex struct {
	mu     sync.Mutex
	built  time.Time
	byName map[string][]string
}

const (
	mediaIndexAge = 15 * time.Second
	maxMediaFiles = 200000
)

var mediaIndexes sync.Map // vault root → *mediaIndex

func mediaByName(v *vault.Vault, name string) []string {
	x, _ := mediaIndexes.LoadOrStore(v.Root, &mediaIndex{})
	mi := x.(*mediaIndex)
	mi.mu.Lock()
	defer mi.mu.Unlock()
	if mi.byName == nil || time.Since(mi.built) > mediaIndexAge {
		mi.byName = walkMedia(v)
		mi.built = time.Now()
	}
	return mi.byName[strings.ToLower(name)]
}

// walkMedia walks the vault for media files, never following a link and
// skipping hidden and ignored folders.
func walkMedia(v *vault.Vault) map[string][]string {
	out := map[string][]string{}
	n := 0
	filepath.WalkDir(v.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if p != v.Root && strings.HasPrefix(name, ".") || d.IsDir() && name == "node_modules" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || render.MediaKind(name) == "" {
			return nil
		}
		rel, err := filepath.Rel(v.Root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		k := strings.ToLower(name)
		out[k] = append(out[k], rel)
		if n++; n > maxMediaFiles {
			return filepath.SkipAll
		}
		return nil
	})
	for _, l := range out {
		sort.Slice(l, func(i, j int) bool {
			if len(l[i]) != len(l[j]) {
				return len(l[i]) < len(l[j])
			}
			return l[i] < l[j]
		})
	}
	return out
}

// chip is one frontmatter value as shown: text, and a link when the value
// is a [[wikilink]], a web address or a tag.
type chip struct {
	Text, Href string
}

// fmChips turns a frontmatter value into chips: a list gives one chip per
// item (never Go's "[a b]"), tags link to the tag page, wikilinks to the
// note view, http(s) addresses to themselves.
func fmChips(key string, v any) []chip {
	var out []chip
	var add func(v any)
	add = func(v any) {
		switch x := v.(type) {
		case nil:
		case []any:
			for _, e := range x {
				add(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				out = append(out, chip{Text: k + ": " + fmt.Sprint(flat(x[k]))})
			}
		case string:
			out = append(out, strChips(key, x)...)
		default:
			out = append(out, chip{Text: fmt.Sprint(x)})
		}
	}
	add(v)
	return out
}

func flat(v any) any {
	if l, ok := v.([]any); ok {
		s := make([]string, len(l))
		for i, e := range l {
			s[i] = fmt.Sprint(flat(e))
		}
		return strings.Join(s, ", ")
	}
	return v
}

func strChips(key, s string) []chip {
	s = strings.TrimSpace(s)
	k := strings.ToLower(key)
	if k == "tags" || k == "tag" {
		var out []chip
		for _, t := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
			t = strings.TrimPrefix(t, "#")
			if t != "" {
				out = append(out, chip{Text: "#" + t, Href: render.TagURL(t)})
			}
		}
		return out
	}
	if strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]]") && !strings.Contains(s[2:len(s)-2], "]]") {
		target, display, _ := strings.Cut(s[2:len(s)-2], "|")
		name, _, _ := strings.Cut(target, "#")
		if display == "" {
			display = target
		}
		if strings.TrimSpace(name) != "" {
			return []chip{{Text: display, Href: render.NoteURL(strings.TrimSpace(name))}}
		}
	}
	if (strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")) && !strings.ContainsAny(s, " \t\n\"<>") {
		return []chip{{Text: s, Href: s}}
	}
	return []chip{{Text: s}}
}
