package write

import (
	"context"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// RelocateNoteIn is the input of relocate_note.
type RelocateNoteIn struct {
	Path        string `json:"path,omitempty" jsonschema:"vault-relative path of the note to move (or use note)"`
	Note        string `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	To          string `json:"to" jsonschema:"the new vault-relative path of the note (a .md file), or a folder ending in / to keep the file name; missing folders are created"`
	UpdateLinks *bool  `json:"update_links,omitempty" jsonschema:"rewrite the wikilinks and Markdown links of other notes that point at the note, and the moved note's own relative links (default true)"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks the note and the target.
func (in *RelocateNoteIn) Validate() error {
	if err := ops.EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if strings.TrimSpace(in.To) == "" {
		return errs.New(errs.CodeInvalidInput, "to is empty: pass the new path")
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// RelocateNote is the relocate_note operation.
func RelocateNote() ops.Def[RelocateNoteIn, ops.WriteResult] {
	return ops.Def[RelocateNoteIn, ops.WriteResult]{
		Name:  "relocate_note",
		Title: "Move or rename a note",
		Description: "Move and/or rename a note. Creates missing folders, never overwrites an existing note, updates the updated frontmatter key when there is one, " +
			"and rewrites every wikilink, embed and Markdown link in other notes that points at it (keeping headings, block ids and display text), " +
			"plus the moved note's own relative links. The preview lists every affected note with its diff; applied, each file is written atomically and " +
			"the whole move undoes as one unit.",
		Annotations: ops.Annotations{Destructive: true},
		Scope:       auth.ScopeDestructive,
		CLI:         ops.CLI{Use: "mv", Args: []string{"path", "to"}, Text: ops.TextWrite, Short: "Move or rename a note and fix the links to it (preview; --apply does it)"},
		Errors:      ops.WithErrors(errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeInvalidUTF8),
		Example:     `{"path": "Inbox/Unsorted.md", "to": "Areas/Sorted.md"}`,
		Toolset:     ops.ToolsetWrites,
		Handler:     relocateNote,
	}
}

func relocateNote(ctx context.Context, env *ops.Env, in *RelocateNoteIn) (*ops.WriteResult, error) {
	vh, w, err := ops.WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	rel, err := ops.WriteTarget(ctx, vh, w, in.Path, in.Note)
	if err != nil {
		return nil, err
	}
	to := strings.ReplaceAll(strings.TrimSpace(in.To), "\\", "/")
	if strings.HasSuffix(to, "/") {
		to += path.Base(rel)
	}
	to, err = w.Target(to)
	if err != nil {
		return nil, err
	}
	if to == rel {
		return nil, errs.New(errs.CodeInvalidInput, "%s is already at that path", rel).With("path", rel)
	}
	want, _ := in.Etag()
	update := in.UpdateLinks == nil || *in.UpdateLinks
	// Notes linking to it, from the index (locked and re-read below).
	var sources []string
	if update {
		if links, err := vh.Index.LinksOf(ctx, rel); err == nil {
			seen := map[string]bool{rel: true}
			// Notes the caller may not read are not there for it: their
			// links are left as they are.
			fence := env.ReadFence(ctx, vh)
			for _, l := range append(links.Backlinks, links.TypedIn...) {
				if !seen[l.Source] && fence.Allows(l.Source) {
					seen[l.Source] = true
					sources = append(sources, l.Source)
				}
			}
			sort.Strings(sources)
		}
	}
	return ops.Idempotent(ctx, env, vh, "relocate_note", in, &in.WriteOpts, func() (*ops.WriteResult, error) {
		var locks []string
		for _, p := range append([]string{rel, to}, sources...) {
			if _, err := w.Target(p); err == nil {
				locks = append(locks, p)
			}
		}
		return ops.RunWrite(ctx, env, ops.WriteSpec{Op: "relocate_note", Vault: vh, Opts: &in.WriteOpts, Locks: locks, GuardPath: rel, GuardEtag: want, Build: func(s *ops.Stage) error {
			f, err := s.ReadGuarded(rel, want)
			if err != nil {
				return err
			}
			dst, err := s.Read(to)
			if err != nil {
				return err
			}
			if dst.Exists {
				return errs.New(errs.CodeConflict, "%s already exists; relocate_note never overwrites a note", to).With("path", to).With("current_etag", dst.Etag)
			}
			res, err := vh.Index.CachedResolver(ctx)
			if err != nil {
				return err
			}
			mv := &mover{env: env, vh: vh, res: res, from: rel, to: to}
			text := f.Text
			outline, _ := vh.Vault.LogseqFile(rel)
			d := noteedit.NewDoc(rel, text, outline)
			if v, e, err := noteedit.GetKey(d.Lines, rel, "updated"); err == nil && e != nil {
				if lines, err := noteedit.SetKey(d.Lines, rel, e.Key, formatLike(v, env.Clock())); err == nil {
					d.Lines = lines
				}
			}
			text = d.Text()
			if update {
				text = mv.rewrite(rel, text, outline, true)
			}
			s.Main = rel
			s.Move(f, to, text)
			for _, src := range sources {
				sf, err := s.ReadText(src)
				if err != nil {
					if errs.Code(err) == errs.CodeInvalidUTF8 || errs.Code(err) == errs.CodeNotFound || errs.Code(err) == errs.CodePathDenied {
						s.Warnings = append(s.Warnings, "links in "+src+" were not updated: "+errs.As(err).Message)
						continue
					}
					return err
				}
				srcOutline, _ := vh.Vault.LogseqFile(src)
				if nt := mv.rewrite(src, sf.Text, srcOutline, false); nt != sf.Text {
					s.Put(sf, nt)
				}
			}
			s.Warnings = append(s.Warnings, mv.skipped...)
			return nil
		}})
	})
}

// formatLike renders t in the format of an existing date value.
func formatLike(old any, t time.Time) string {
	if _, withTime, zone, ok := parseDateValue(old); ok {
		return formatDate(t, withTime, zone)
	}
	return t.Format("2006-01-02T15:04:05")
}

// mover rewrites links when a note moves from one path to another.
type mover struct {
	env      *ops.Env
	vh       *ops.VaultHandle
	res      *index.Resolver
	from, to string
	skipped  []string
}

// rewrite returns text (of the note at src; self=true for the moved note
// itself, whose text will live at mv.to) with every link to the moved note
// pointing at its new path.
func (mv *mover) rewrite(src, text string, outline, self bool) string {
	doc := markdown.Parse([]byte(text), markdown.Options{Path: src, Logseq: outline})
	lines, eol := noteedit.SplitLines(text)
	cand := map[int]bool{}
	for _, l := range doc.Links {
		switch l.Kind {
		case markdown.LinkWiki, markdown.LinkEmbed, markdown.LinkMarkdown, markdown.LinkTyped, markdown.LinkTagRef:
			cand[l.Line-1] = true
		}
	}
	// Typed links in YAML carry the key's line: look at every frontmatter line.
	if fm, err := noteedit.ParseFrontmatter(lines, src); err == nil && fm.Present {
		for i := fm.Open + 1; i < fm.Close; i++ {
			cand[i] = true
		}
	}
	changed := false
	for i := range lines {
		if !cand[i] {
			continue
		}
		if nl := mv.rewriteLine(src, lines[i], self); nl != lines[i] {
			lines[i], changed = nl, true
		}
	}
	if !changed {
		return text
	}
	out := strings.Join(lines, "\n")
	if eol {
		out += "\n"
	}
	return out
}

func (mv *mover) rewriteLine(src, line string, self bool) string {
	spans := scanLinkSpans(line)
	for k := len(spans) - 1; k >= 0; k-- {
		sp := spans[k]
		var repl string
		switch sp.kind {
		case "wikilink":
			repl = mv.wikiTarget(src, sp.target)
		case "markdown":
			repl = mv.markdownTarget(src, sp, self)
		}
		if repl != "" && repl != line[sp.tStart:sp.tEnd] {
			line = line[:sp.tStart] + repl + line[sp.tEnd:]
		}
	}
	return line
}

// pointsAtMoved reports whether a link target written in src resolves to
// the moved note.
func (mv *mover) pointsAtMoved(src, kind, target string) bool {
	if mv.res == nil {
		return false
	}
	if id := mv.res.Resolve(src, kind, target); id != 0 {
		return mv.res.Path(id) == mv.from
	}
	return false
}

func stem(p string) string {
	b := path.Base(p)
	return strings.TrimSuffix(b, path.Ext(b))
}

func noExt(p string) string { return strings.TrimSuffix(p, path.Ext(p)) }

// wikiTarget returns the new note part of a [[wikilink]] that points at the
// moved note ("" to leave it): the new file name when no other note has it,
// else the new path; a Logseq page name for pages; links through an alias
// or a title stay as they are.
func (mv *mover) wikiTarget(src, target string) string {
	t := strings.TrimSpace(target)
	if t == "" || !mv.pointsAtMoved(src, "wikilink", t) {
		return ""
	}
	withExt := strings.EqualFold(path.Ext(t), ".md")
	key := strings.ToLower(strings.TrimPrefix(noExt(strings.ReplaceAll(t, "\\", "/")), "/"))
	if outline, _ := mv.vh.Vault.LogseqFile(mv.from); outline {
		if strings.EqualFold(key, markdown.LogseqPageName(mv.from)) {
			if newOutline, _ := mv.vh.Vault.LogseqFile(mv.to); newOutline {
				return markdown.LogseqPageName(mv.to)
			}
			return noExt(mv.to)
		}
	}
	ext := ""
	if withExt {
		ext = path.Ext(mv.to)
	}
	switch {
	case key == strings.ToLower(stem(mv.from)):
		if mv.uniqueStem() {
			return stem(mv.to) + ext
		}
		return noExt(mv.to) + ext
	case key == strings.ToLower(noExt(mv.from)) || strings.HasSuffix(strings.ToLower(noExt(mv.from)), "/"+key):
		return noExt(mv.to) + ext
	}
	return "" // an alias or a title: still valid after the move
}

// uniqueStem reports whether no note other than the moved one has its new
// file name.
func (mv *mover) uniqueStem() bool {
	for _, c := range mv.res.Candidates("", "wikilink", stem(mv.to)) {
		if c.Match == "filename" && c.Path != mv.from {
			return false
		}
	}
	return true
}

// markdownTarget returns the new destination of a Markdown link ("" to
// leave it): links to the moved note follow it in the form they had
// (relative to the linking note, from the vault root, or a bare file name);
// the moved note's own relative links are re-based on its new folder.
func (mv *mover) markdownTarget(src string, sp linkSpan, self bool) string {
	dest := sp.target
	if mv.pointsAtMoved(src, "markdown", dest) {
		return encodeDest(mv.newDest(src, dest, self), sp)
	}
	if !self || path.Dir(mv.from) == path.Dir(mv.to) || strings.HasPrefix(dest, "/") {
		return ""
	}
	// The moved note's own relative link to something else.
	srcDir := path.Dir(mv.from)
	abs := path.Clean(path.Join(srcDir, dest))
	if strings.HasPrefix(abs, "../") || abs == ".." {
		return ""
	}
	if _, err := os.Stat(filepath.Join(mv.vh.Vault.Root, filepath.FromSlash(abs))); err != nil {
		return ""
	}
	return encodeDest(relPath(path.Dir(mv.to), abs), sp)
}

// newDest is the destination of a link to the moved note written in src
// (which, for the moved note itself, will live at mv.to).
func (mv *mover) newDest(src, dest string, self bool) string {
	withExt := strings.EqualFold(path.Ext(dest), ".md")
	ext := ""
	if withExt {
		ext = ".md"
	}
	srcDir := path.Dir(src)
	if self {
		srcDir = path.Dir(mv.to)
	}
	switch {
	case strings.HasPrefix(dest, "/"):
		return "/" + noExt(mv.to) + ext
	case strings.EqualFold(noExt(path.Clean(path.Join(path.Dir(src), dest))), noExt(mv.from)):
		return noExt(relPath(srcDir, mv.to)) + ext
	case strings.EqualFold(noExt(dest), noExt(mv.from)):
		return noExt(mv.to) + ext
	case !strings.Contains(dest, "/"):
		if mv.uniqueStem() {
			return stem(mv.to) + ext
		}
		return noExt(mv.to) + ext
	}
	return noExt(mv.to) + ext
}

// relPath is the slash path of target relative to folder dir ("." = root).
func relPath(dir, target string) string {
	if dir == "." || dir == "" {
		return target
	}
	r, err := filepath.Rel(filepath.FromSlash(dir), filepath.FromSlash(target))
	if err != nil {
		return target
	}
	return filepath.ToSlash(r)
}

// encodeDest writes a destination the way the original link was written:
// inside <...> as is, else with spaces (and parentheses) percent-encoded
// unless the original had raw spaces.
func encodeDest(d string, sp linkSpan) string {
	if sp.angle {
		return d
	}
	if strings.Contains(sp.raw, " ") && !strings.Contains(sp.raw, "%") {
		return d
	}
	r := strings.NewReplacer("%", "%25", " ", "%20", "(", "%28", ")", "%29")
	return r.Replace(d)
}

// linkSpan is a link found in a line of text.
type linkSpan struct {
	kind       string // wikilink (also embeds) or markdown
	target     string // wikilink: the note part; markdown: the decoded destination without #fragment
	raw        string // the destination as written (markdown)
	tStart     int    // byte range of the part to replace (note part / destination path)
	tEnd       int
	angle      bool // markdown destination in <...>
	hasFrag    bool
	fragOffset int
}

// scanLinkSpans finds [[wikilinks]], ![[embeds]], [text](dest) and
// ![alt](dest) in one line, outside `code spans`.
func scanLinkSpans(line string) []linkSpan {
	var out []linkSpan
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '`':
			n := 0
			for i+n < len(line) && line[i+n] == '`' {
				n++
			}
			fence := strings.Repeat("`", n)
			if j := strings.Index(line[i+n:], fence); j >= 0 {
				i += n + j + n - 1
			} else {
				i += n - 1
			}
		case strings.HasPrefix(line[i:], "[["):
			j := strings.Index(line[i+2:], "]]")
			if j < 0 {
				return out
			}
			inner := line[i+2 : i+2+j]
			name := inner
			if k := strings.IndexAny(name, "|#"); k >= 0 {
				// An escaped pipe inside a table: [[Note\|alias]].
				if name[k] == '|' && k > 0 && name[k-1] == '\\' {
					k--
				}
				name = name[:k]
			}
			if strings.TrimSpace(name) != "" {
				lead := len(name) - len(strings.TrimLeft(name, " "))
				trimmed := strings.TrimSpace(name)
				out = append(out, linkSpan{kind: "wikilink", target: trimmed, tStart: i + 2 + lead, tEnd: i + 2 + lead + len(trimmed)})
			}
			i += 2 + j + 1
		case line[i] == ']' && strings.HasPrefix(line[i:], "]("):
			k := i + 2
			for k < len(line) && line[k] == ' ' {
				k++
			}
			sp := linkSpan{kind: "markdown"}
			if k < len(line) && line[k] == '<' {
				e := strings.IndexByte(line[k+1:], '>')
				if e < 0 {
					continue
				}
				sp.angle, sp.tStart, sp.tEnd = true, k+1, k+1+e
			} else {
				depth, e := 0, k
				for e < len(line) {
					c := line[e]
					if c == '(' {
						depth++
					} else if c == ')' {
						if depth == 0 {
							break
						}
						depth--
					} else if c == ' ' || c == '\t' {
						break
					}
					e++
				}
				sp.tStart, sp.tEnd = k, e
			}
			raw := line[sp.tStart:sp.tEnd]
			if h := strings.IndexByte(raw, '#'); h >= 0 {
				sp.hasFrag = true
				sp.tEnd = sp.tStart + h
				raw = raw[:h]
			}
			sp.raw = raw
			if raw == "" || strings.Contains(raw, "://") || strings.HasPrefix(raw, "mailto:") {
				continue
			}
			dec := raw
			if u, err := url.PathUnescape(raw); err == nil {
				dec = u
			}
			sp.target = strings.TrimSpace(dec)
			out = append(out, sp)
			i = sp.tEnd - 1
		}
	}
	return out
}
