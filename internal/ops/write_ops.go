package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/vault"
)

// CaptureNoteIn is the input of capture_note.
type CaptureNoteIn struct {
	Title       string         `json:"title,omitempty" jsonschema:"the note's title: it becomes the file name (made safe for every OS) and the note's # heading; default: the first line of content"`
	Content     string         `json:"content,omitempty" jsonschema:"the note's text in Markdown, below the heading"`
	Folder      string         `json:"folder,omitempty" jsonschema:"vault-relative folder for the note (default: the configured inbox, Inbox/)"`
	Tags        []string       `json:"tags,omitempty" cli:"tag" jsonschema:"tags for the frontmatter, with or without #"`
	Aliases     []string       `json:"aliases,omitempty" cli:"alias" jsonschema:"other names of the note (frontmatter aliases)"`
	Source      string         `json:"source,omitempty" jsonschema:"where the content comes from (a URL, a book, a conversation); stored as frontmatter source"`
	Frontmatter map[string]any `json:"frontmatter,omitempty" jsonschema:"more frontmatter keys and values (they override the generated ones)"`
	WriteOpts
}

// Validate checks that there is something to capture.
func (in *CaptureNoteIn) Validate() error {
	if strings.TrimSpace(in.Title) == "" && strings.TrimSpace(in.Content) == "" {
		return errs.New(errs.CodeInvalidInput, "pass a title or some content")
	}
	for _, t := range in.Tags {
		if err := noteedit.ValidTag(noteedit.NormTag(t)); err != nil {
			return err
		}
	}
	if strings.ContainsAny(in.Title, "\r\n") {
		return errs.New(errs.CodeInvalidInput, "title spans lines")
	}
	if f := strings.Trim(strings.ReplaceAll(in.Folder, "\\", "/"), "/"); f != "" {
		clean, err := vault.CleanRel(f)
		if err != nil {
			return err // traversal, NUL, ignored folders: path_denied
		}
		for _, seg := range strings.Split(clean, "/") {
			if why := vault.NameProblem(seg, true); why != "" {
				return errs.New(errs.CodeInvalidInput, "folder %q: %s", in.Folder, why).With("field", "folder").With("folder", in.Folder)
			}
		}
	}
	return in.Check()
}

// EditNoteIn is the input of edit_note.
type EditNoteIn struct {
	Path    string           `json:"path,omitempty" jsonschema:"vault-relative path of the note (or use note)"`
	Note    string           `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Patches []noteedit.Patch `json:"patches" jsonschema:"the changes, applied in order as one atomic edit; each patch sees the result of the previous ones (so list line-number patches bottom-up). All must apply or nothing is written"`
	Guard
	WriteOpts
}

// Validate checks the note and every patch.
func (in *EditNoteIn) Validate() error {
	if err := EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if len(in.Patches) == 0 || len(in.Patches) > 200 {
		return errs.New(errs.CodeInvalidInput, "pass 1 to 200 patches")
	}
	for i := range in.Patches {
		if err := in.Patches[i].Check(i); err != nil {
			return err
		}
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// WriteNoteIn is the input of write_note.
type WriteNoteIn struct {
	Path      string `json:"path" jsonschema:"vault-relative path of the note (.md)"`
	Content   string `json:"content" jsonschema:"the note's full text; an existing note keeps its line endings, byte order mark and final newline"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"replace an existing note without if_match (the old text stays in the undo journal); prefer if_match"`
	Guard
	WriteOpts
}

// Validate checks the path and the guard.
func (in *WriteNoteIn) Validate() error {
	if in.Path == "" {
		return errs.New(errs.CodeInvalidInput, "path is empty")
	}
	if strings.ContainsRune(in.Content, 0) {
		return errs.New(errs.CodeInvalidInput, "content holds NUL bytes")
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// DeleteNoteIn is the input of delete_note.
type DeleteNoteIn struct {
	Path string `json:"path,omitempty" jsonschema:"vault-relative path of the note (or use note)"`
	Note string `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Guard
	WriteOpts
}

// Validate checks the note and the guard.
func (in *DeleteNoteIn) Validate() error {
	if err := EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// ImproveFrontmatterIn is the input of improve_frontmatter.
type ImproveFrontmatterIn struct {
	Path        string         `json:"path,omitempty" jsonschema:"vault-relative path of the note (or use note)"`
	Note        string         `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Required    []string       `json:"required,omitempty" cli:"require" jsonschema:"keys the note must have; a missing one is added: id (a timestamp id), created and updated (from the id or the file's time), title (the note's title), tags and aliases (empty lists), another key with its value in defaults, else empty"`
	Defaults    map[string]any `json:"defaults,omitempty" jsonschema:"values for required keys that are missing, e.g. {\"status\": \"draft\"}"`
	Normalize   *bool          `json:"normalize,omitempty" jsonschema:"normalize formats (default true): created, updated and date to ISO-8601 (2026-11-20 or 2026-11-20T10:15:00), a date-time id to a timestamp id (YYYYMMDDHHmmss), tags and aliases to lists (tags without #)"`
	FixIdentity bool           `json:"fix_identity,omitempty" jsonschema:"make id and created agree: add a timestamp id when there is none (from created, else the file's time) and, when created disagrees with a timestamp id's date, set created from the id"`
	Guard
	WriteOpts
}

// Validate checks the note and the keys.
func (in *ImproveFrontmatterIn) Validate() error {
	if err := EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	for _, k := range in.Required {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, "\r\n") {
			return errs.New(errs.CodeInvalidInput, "required holds an empty key")
		}
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// ImproveFrontmatterOut is the output of improve_frontmatter.
type ImproveFrontmatterOut struct {
	WriteResult
	Fixes []string `json:"fixes" jsonschema:"what was (or, in a preview, would be) changed, one line per fix"`
}

func registerWriteOps(r *Registry) {
	register(r, CaptureNote())
	register(r, EditNote())
	register(r, WriteNote())
	register(r, DeleteNote())
	register(r, ImproveFrontmatter())
	registerRelocate(r)
	registerUndo(r)
}

var errNameTaken = errors.New("name taken")

func captureNote(ctx context.Context, env *Env, in *CaptureNoteIn) (*WriteResult, error) {
	vh, w, err := WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	return Idempotent(ctx, env, vh, "capture_note", in, &in.WriteOpts, func() (*WriteResult, error) {
		folder := in.Folder
		if folder == "" {
			folder = env.WritesFor(vh).Inbox
			if folder == "" {
				folder = "Inbox"
			}
		}
		folder = strings.TrimRight(strings.ReplaceAll(folder, "\\", "/"), "/")
		title := strings.TrimSpace(in.Title)
		if title == "" {
			title = titleFromContent(in.Content)
		}
		name := safeFileName(title)
		now := env.Clock()
		text, err := captureText(now, UniqueTimestampID(ctx, vh, now, in.Apply), title, in)
		if err != nil {
			return nil, err
		}
		for n := 1; n <= 100; n++ {
			file := name + ".md"
			if n > 1 {
				file = fmt.Sprintf("%s %d.md", name, n)
			}
			rel := path.Join(folder, file)
			if folder == "" || folder == "." {
				rel = file
			}
			clean, _, err := w.Target(rel)
			if err != nil {
				return nil, err
			}
			res, err := RunWrite(ctx, env, WriteSpec{Op: "capture_note", Vault: vh, Opts: &in.WriteOpts, Locks: []string{clean}, Build: func(s *Stage) error {
				f, err := s.Read(clean)
				if err != nil {
					return err
				}
				if f.Exists {
					return errNameTaken
				}
				s.Main = clean
				s.Create(clean, text)
				return nil
			}})
			if errors.Is(err, errNameTaken) || errs.Code(err) == errs.CodeConflict {
				continue
			}
			return res, err
		}
		return nil, errs.New(errs.CodeConflict, "100 notes named %q already exist in %s", name, folder)
	})
}

// captureText builds the new note: generated frontmatter, heading, content.
func captureText(now time.Time, id int64, title string, in *CaptureNoteIn) (string, error) {
	fm := map[string]any{
		"id":      id,
		"created": now.Format("2006-01-02T15:04:05"),
		"updated": now.Format("2006-01-02T15:04:05"),
	}
	order := []string{"id", "created", "updated"}
	if len(in.Aliases) > 0 {
		fm["aliases"] = noteedit.ToAny(in.Aliases)
		order = append(order, "aliases")
	}
	if len(in.Tags) > 0 {
		var tags []any
		for _, t := range in.Tags {
			if t = noteedit.NormTag(t); !noteedit.ContainsAnyFold(tags, t) {
				tags = append(tags, t)
			}
		}
		fm["tags"] = tags
		order = append(order, "tags")
	}
	if in.Source != "" {
		fm["source"] = in.Source
		order = append(order, "source")
	}
	var extra []string
	for k, v := range in.Frontmatter {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, "\r\n") {
			return "", errs.New(errs.CodeInvalidInput, "frontmatter holds an empty key")
		}
		if _, ok := fm[k]; !ok {
			extra = append(extra, k)
		}
		fm[k] = v
	}
	sort.Strings(extra)
	lines := []string{"---"}
	for _, k := range append(order, extra...) {
		l, err := noteedit.RenderEntry(k, fm[k], nil, nil)
		if err != nil {
			return "", err
		}
		lines = append(lines, l...)
	}
	lines = append(lines, "---")
	if strings.TrimSpace(in.Title) != "" || strings.TrimSpace(in.Content) == "" {
		lines = append(lines, "# "+title)
		if strings.TrimSpace(in.Content) != "" {
			lines = append(lines, "")
		}
	}
	body := strings.TrimRight(strings.ReplaceAll(in.Content, "\r\n", "\n"), "\n")
	if body != "" {
		lines = append(lines, body)
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// titleFromContent makes a title of the first line of text.
func titleFromContent(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#>-*"))
		if l == "" {
			continue
		}
		if utf8.RuneCountInString(l) > 60 {
			r := []rune(l)[:60]
			cut := strings.LastIndex(string(r), " ")
			if cut > 20 {
				return string(r)[:cut]
			}
			return string(r)
		}
		return l
	}
	return "Untitled"
}

var reservedNames = regexp.MustCompile(`(?i)^(con|prn|aux|nul|com[0-9]|lpt[0-9])$`)

// safeFileName turns a title into a file name every OS and Obsidian accept:
// no / \ : * ? " < > | # ^ [ ] or control characters, no leading dot, no
// trailing dot or space, at most 120 bytes, not a Windows device name.
func safeFileName(title string) string {
	var b strings.Builder
	for _, r := range title {
		switch {
		case unicode.IsControl(r):
			b.WriteRune(' ')
		case strings.ContainsRune(`/\:*?"<>|#^[]`, r):
			b.WriteRune(' ')
		default:
			b.WriteRune(r)
		}
	}
	s := strings.Join(strings.Fields(b.String()), " ")
	s = strings.TrimLeft(s, ". ")
	for len(s) > 120 {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	s = strings.TrimRight(s, ". ")
	if s == "" {
		s = "Untitled"
	}
	if reservedNames.MatchString(s) {
		s += "_"
	}
	return s
}

// noteWrite runs a write to one note named by path or note through the
// shared pipeline: the vault's writer, target resolution, idempotency, the
// etag guard (checked before waiting for the lock, and again in build) and
// the per-note lock. build gets the resolved path and the expected etag.
func noteWrite(ctx context.Context, env *Env, op string, in any, vaultName, path, note string, g *Guard, opts *WriteOpts, build func(s *Stage, rel, want string) error) (*WriteResult, error) {
	vh, w, err := WriteVault(env, vaultName)
	if err != nil {
		return nil, err
	}
	rel, err := WriteTarget(ctx, vh, w, path, note)
	if err != nil {
		return nil, err
	}
	want, _ := g.Etag()
	return Idempotent(ctx, env, vh, op, in, opts, func() (*WriteResult, error) {
		return RunWrite(ctx, env, WriteSpec{Op: op, Vault: vh, Opts: opts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want,
			Build: func(s *Stage) error { return build(s, rel, want) }})
	})
}

func editNote(ctx context.Context, env *Env, in *EditNoteIn) (*WriteResult, error) {
	return noteWrite(ctx, env, "edit_note", in, in.Vault, in.Path, in.Note, &in.Guard, &in.WriteOpts, func(s *Stage, rel, want string) error {
		f, err := s.ReadGuarded(rel, want)
		if err != nil {
			return err
		}
		outline, _ := s.Vault.Vault.LogseqFile(rel)
		d := noteedit.NewDoc(rel, f.Text, outline)
		for i := range in.Patches {
			note, err := d.Apply(i, &in.Patches[i])
			if err != nil {
				return err
			}
			if note != "" {
				s.Warnings = append(s.Warnings, note)
			}
		}
		s.Main = rel
		s.Put(f, d.Text())
		return nil
	})
}

func writeNote(ctx context.Context, env *Env, in *WriteNoteIn) (*WriteResult, error) {
	vh, w, err := WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	rel, _, err := w.Target(in.Path)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	return Idempotent(ctx, env, vh, "write_note", in, &in.WriteOpts, func() (*WriteResult, error) {
		return RunWrite(ctx, env, WriteSpec{Op: "write_note", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *Stage) error {
			f, err := s.Read(rel)
			if err != nil {
				return err
			}
			s.Main = rel
			if !f.Exists {
				if want != "" {
					return CheckGuard(f, want)
				}
				s.Create(rel, in.Content)
				return nil
			}
			if err := vault.CheckText(rel, f.Raw); err != nil {
				return err
			}
			f.Text = f.Format.Decode(f.Raw)
			switch {
			case want != "":
				if err := CheckGuard(f, want); err != nil {
					return err
				}
			case !in.Overwrite:
				return errs.New(errs.CodeConflict, "%s already exists; pass if_match=%q (its current etag) to replace it after reading it, or overwrite=true", rel, f.Etag).
					With("path", rel).With("current_etag", f.Etag)
			}
			s.Put(f, strings.ReplaceAll(in.Content, "\r\n", "\n"))
			return nil
		}})
	})
}

func deleteNote(ctx context.Context, env *Env, in *DeleteNoteIn) (*WriteResult, error) {
	return noteWrite(ctx, env, "delete_note", in, in.Vault, in.Path, in.Note, &in.Guard, &in.WriteOpts, func(s *Stage, rel, want string) error {
		f, err := s.Read(rel)
		if err != nil {
			return err
		}
		if !f.Exists {
			return errs.New(errs.CodeNotFound, "note not found: %s", rel).With("path", rel)
		}
		if err := CheckGuard(f, want); err != nil {
			return err
		}
		if utf8.Valid(f.Raw) {
			f.Text = f.Format.Decode(f.Raw)
		}
		s.Main = rel
		if err := s.Trash(f); err != nil {
			return err
		}
		s.Warnings = append(s.Warnings, InboundWarning(ctx, s.Vault, rel)...)
		return nil
	})
}

func improveFrontmatter(ctx context.Context, env *Env, in *ImproveFrontmatterIn) (*ImproveFrontmatterOut, error) {
	vh, w, err := WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	rel, err := WriteTarget(ctx, vh, w, in.Path, in.Note)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	return Idempotent(ctx, env, vh, "improve_frontmatter", in, &in.WriteOpts, func() (*ImproveFrontmatterOut, error) {
		var fixes []string
		res, err := RunWrite(ctx, env, WriteSpec{Op: "improve_frontmatter", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *Stage) error {
			f, err := s.ReadGuarded(rel, want)
			if err != nil {
				return err
			}
			d := noteedit.NewDoc(rel, f.Text, false)
			if outline, _ := vh.Vault.LogseqFile(rel); outline && !noteedit.HasFrontmatter(d.Lines) {
				return errs.New(errs.CodeInvalidInput, "%s is a Logseq page: its properties are key:: value lines; use update_page to set them", rel).With("path", rel)
			}
			var mtime time.Time
			if _, abs, err := w.Target(rel); err == nil {
				if st, err := os.Stat(abs); err == nil {
					mtime = st.ModTime()
				}
			}
			fixes, err = tidyFrontmatter(d, in, mtime, vh)
			if err != nil {
				return err
			}
			s.Main = rel
			s.Put(f, d.Text())
			return nil
		}})
		if err != nil {
			return nil, err
		}
		if fixes == nil {
			fixes = []string{}
		}
		return &ImproveFrontmatterOut{WriteResult: *res, Fixes: fixes}, nil
	})
}

var compactID = regexp.MustCompile(`^\d{12}(\d{2})?$`)

// dateLayouts are the formats improve_frontmatter can read; withTime tells
// whether a layout carries a time of day.
var dateLayouts = []struct {
	layout   string
	withTime bool
	zone     bool
}{
	{time.RFC3339Nano, true, true}, {"2006-01-02T15:04:05", true, false}, {"2006-01-02T15:04", true, false},
	{"2006-01-02 15:04:05", true, false}, {"2006-01-02 15:04", true, false}, {"2006-01-02", false, false},
	{"2006/01/02 15:04:05", true, false}, {"2006/01/02 15:04", true, false}, {"2006/01/02", false, false},
	{"2006.01.02", false, false}, {"20060102", false, false}, {"20060102150405", true, false}, {"200601021504", true, false},
	{"January 2, 2006", false, false}, {"Jan 2, 2006", false, false}, {"2 January 2006", false, false}, {"2 Jan 2006", false, false},
	{"Monday, January 2, 2006", false, false},
}

// parseDateValue reads a date or date-time in any format above.
func parseDateValue(v any) (t time.Time, withTime, zone, ok bool) {
	s := strings.TrimSpace(fmt.Sprint(v))
	if f, isNum := v.(float64); isNum {
		s = fmt.Sprintf("%.0f", f)
	}
	for _, l := range dateLayouts {
		if tt, err := time.Parse(l.layout, s); err == nil {
			return tt, l.withTime, l.zone, true
		}
	}
	return time.Time{}, false, false, false
}

func formatDate(t time.Time, withTime, zone bool) string {
	switch {
	case zone:
		return t.Format(time.RFC3339)
	case withTime:
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02")
}

// tidyFrontmatter applies improve_frontmatter's rules to d and describes them.
func tidyFrontmatter(d *noteedit.Doc, in *ImproveFrontmatterIn, mtime time.Time, vh *VaultHandle) ([]string, error) {
	var fixes []string
	get := func(k string) (any, bool, error) {
		v, e, err := noteedit.GetKey(d.Lines, d.Rel, k)
		return v, e != nil, err
	}
	set := func(k string, v any, why string) error {
		lines, err := noteedit.SetKey(d.Lines, d.Rel, k, v)
		if err != nil {
			return err
		}
		d.Lines = lines
		if len(d.Lines) > 0 {
			d.EOL = true
		}
		fixes = append(fixes, why)
		return nil
	}
	normalize := in.Normalize == nil || *in.Normalize
	if normalize {
		for _, k := range []string{"created", "updated", "date", "modified"} {
			v, ok, err := get(k)
			if err != nil {
				return nil, err
			}
			if !ok || v == nil {
				continue
			}
			t, withTime, zone, parsed := parseDateValue(v)
			if !parsed {
				continue
			}
			if norm := formatDate(t, withTime, zone); norm != fmt.Sprint(v) {
				if err := set(k, norm, fmt.Sprintf("%s: %v → %s (ISO-8601)", k, v, norm)); err != nil {
					return nil, err
				}
			}
		}
		if v, ok, err := get("id"); err != nil {
			return nil, err
		} else if s, isStr := v.(string); ok && isStr && !compactID.MatchString(s) {
			if t, withTime, _, parsed := parseDateValue(s); parsed && withTime {
				id := t.Format("20060102150405")
				if err := set("id", id, fmt.Sprintf("id: %s → %s (timestamp id)", s, id)); err != nil {
					return nil, err
				}
			}
		}
		for _, k := range []string{"tags", "aliases"} {
			v, ok, err := get(k)
			if err != nil {
				return nil, err
			}
			if !ok || v == nil {
				continue
			}
			var items []string
			switch x := v.(type) {
			case string:
				if k == "tags" {
					items = noteedit.TagList(x)
				} else {
					for _, a := range strings.Split(x, ",") {
						if a = strings.TrimSpace(a); a != "" {
							items = append(items, a)
						}
					}
				}
			case []any:
				changed := false
				for _, it := range x {
					s := strings.TrimSpace(fmt.Sprint(it))
					if k == "tags" {
						if n := noteedit.NormTag(s); n != s {
							changed = true
							s = n
						}
					}
					if s != "" {
						items = append(items, s)
					}
				}
				if !changed {
					continue
				}
			default:
				continue
			}
			if err := set(k, noteedit.ToAny(items), fmt.Sprintf("%s: written as a list%s", k, map[bool]string{true: " without #", false: ""}[k == "tags"])); err != nil {
				return nil, err
			}
		}
	}
	idTime := func() (time.Time, bool) {
		v, _, _ := get("id")
		s := fmt.Sprint(v)
		if f, ok := v.(float64); ok {
			s = fmt.Sprintf("%.0f", f)
		}
		if !compactID.MatchString(s) {
			return time.Time{}, false
		}
		layout := "20060102150405"[:len(s)]
		t, err := time.ParseInLocation(layout, s, time.Local)
		return t, err == nil
	}
	styleLike := func(k string) (bool, bool) {
		if v, ok, _ := get(k); ok {
			if _, wt, z, parsed := parseDateValue(v); parsed {
				return wt, z
			}
		}
		return true, false
	}
	if in.FixIdentity {
		if _, ok, _ := get("id"); !ok {
			base := mtime
			if v, ok, _ := get("created"); ok {
				if t, _, _, parsed := parseDateValue(v); parsed {
					base = t
				}
			}
			if base.IsZero() {
				base = time.Now()
			}
			id := TimestampID(base)
			if err := set("id", id, fmt.Sprintf("id: added %d (timestamp id)", id)); err != nil {
				return nil, err
			}
		}
		if t, ok := idTime(); ok {
			v, has, _ := get("created")
			ct, wt, _, parsed := parseDateValue(v)
			if !has || !parsed || ct.Format("2006-01-02") != t.Format("2006-01-02") {
				if !has || !parsed {
					wt, _ = styleLike("updated")
				}
				c := formatDate(t, wt, false)
				if err := set("created", c, fmt.Sprintf("created: %v → %s (from id)", orNone(v), c)); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, k := range in.Required {
		if _, ok, err := get(k); err != nil {
			return nil, err
		} else if ok {
			continue
		}
		var v any
		switch strings.ToLower(k) {
		case "id":
			base := mtime
			if t, ok := idTime(); ok {
				base = t
			} else if cv, ok, _ := get("created"); ok {
				if t, _, _, parsed := parseDateValue(cv); parsed {
					base = t
				}
			}
			v = TimestampID(base)
		case "created":
			wt, _ := styleLike("updated")
			t := mtime
			if it, ok := idTime(); ok {
				t = it
			}
			v = formatDate(t, wt, false)
		case "updated", "modified":
			wt, _ := styleLike("created")
			v = formatDate(mtime, wt, false)
		case "title":
			v = notTitle(d, vh)
		case "tags", "aliases":
			v = []any{}
		default:
			v = in.Defaults[k]
		}
		if err := set(k, v, fmt.Sprintf("%s: added (%s)", k, describeValue(v))); err != nil {
			return nil, err
		}
	}
	return fixes, nil
}

func orNone(v any) any {
	if v == nil {
		return "(none)"
	}
	return v
}

func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "empty"
	case []any:
		if len(x) == 0 {
			return "empty list"
		}
	}
	return fmt.Sprint(v)
}

// notTitle is the title a note would be indexed with.
func notTitle(d *noteedit.Doc, vh *VaultHandle) string {
	start := 0
	if fm, err := noteedit.ParseFrontmatter(d.Lines, d.Rel); err == nil && fm.Present {
		start = fm.Close + 1
	}
	for _, l := range d.Lines[start:] {
		if strings.HasPrefix(l, "# ") {
			return strings.TrimSpace(l[2:])
		}
	}
	base := filepath.Base(d.Rel)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// textImproveFrontmatter is TextWrite with the fixes made.
func textImproveFrontmatter(o any) string {
	var b strings.Builder
	if fo, ok := o.(*ImproveFrontmatterOut); ok {
		for _, f := range fo.Fixes {
			fmt.Fprintf(&b, "fix: %s\n", f)
		}
	}
	return TextWriteWith(o, b.String())
}

// CaptureNote is the capture_note operation.
func CaptureNote() Def[CaptureNoteIn, WriteResult] {
	return Def[CaptureNoteIn, WriteResult]{
		Name:  "capture_note",
		Title: "Capture a note",
		Description: "Create a new note from a title and/or text, in the inbox folder (default Inbox/) or a given folder. The title becomes a safe file name and the note's heading; " +
			"frontmatter is generated (id, created, updated, aliases, tags, source, plus any keys given). Never overwrites: a taken name gets a number (Title 2.md). " +
			"Preview by default; apply=true writes it and returns the path and etag.",
		Annotations: Annotations{},
		CLI:         CLI{Use: "capture", Args: []string{"title"}, Text: TextWrite, Short: "Capture a new note in the inbox (preview; --apply writes it)"},
		Errors:      WithErrors(),
		Example:     `{"title": "Idea: spaced repetition for code", "content": "Review snippets at growing intervals.", "tags": ["idea"], "apply": true}`,
		Toolset:     ToolsetWrites,
		Handler:     captureNote,
	}
}

// EditNote is the edit_note operation.
func EditNote() Def[EditNoteIn, WriteResult] {
	return Def[EditNoteIn, WriteResult]{
		Name:  "edit_note",
		Title: "Edit a note",
		Description: "Change a note with patches applied in order as one atomic edit: replace_lines, insert_lines, delete_lines (1-based lines as read_note numbers them), " +
			"replace_text (exact text, expected_count occurrences), insert_after_heading, append_to_section, replace_section (by heading text or path), " +
			"set_frontmatter / delete_frontmatter (only that key's lines change; key order, comments and every other byte stay), add_tags / remove_tags. " +
			"Pass the etag you read as if_match. Preview (a unified diff) by default; apply=true writes it. The file keeps its line endings, BOM and final newline.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "edit", Args: []string{"path"}, Text: TextWrite, Short: "Edit a note with patches (preview; --apply writes it)"},
		Errors:      WithErrors(errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeInvalidUTF8),
		Example:     `{"path": "Projects/Project Atlas.md", "if_match": "99ff78b3660ad4a5dadd9f27433296e64164e8859895cc744bf68ac10704c96a", "patches": [{"op": "append_to_section", "heading": "Goals", "content": "- Ship safe writes."}, {"op": "set_frontmatter", "key": "status", "value": "done"}]}`,
		Toolset:     ToolsetWrites,
		Handler:     editNote,
	}
}

// WriteNote is the write_note operation.
func WriteNote() Def[WriteNoteIn, WriteResult] {
	return Def[WriteNoteIn, WriteResult]{
		Name:  "write_note",
		Title: "Write a note",
		Description: "Write a note's full text: create it, or replace it (replacing needs if_match with the etag you read, or overwrite=true). " +
			"A replaced note keeps its line endings, BOM and final newline. Prefer edit_note for changes to part of a note. Preview by default; apply=true writes it.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "write", Args: []string{"path"}, Text: TextWrite, Short: "Create or replace a note's text (preview; --apply writes it)"},
		Errors:      WithErrors(errs.CodeInvalidUTF8),
		Example:     `{"path": "Notes/Reading list.md", "content": "# Reading list\n\n- How to Take Smart Notes\n"}`,
		Toolset:     ToolsetWrites,
		Handler:     writeNote,
	}
}

// DeleteNote is the delete_note operation.
func DeleteNote() Def[DeleteNoteIn, WriteResult] {
	return Def[DeleteNoteIn, WriteResult]{
		Name:  "delete_note",
		Title: "Delete a note",
		Description: "Move a note to the vault's .trash/ folder (Obsidian's convention; nothing is unlinked), keeping its folders (.trash/Projects/A.md). " +
			"The result warns about notes that still link to it. Undo restores it. Preview by default; apply=true moves it.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "rm", Args: []string{"path"}, Text: TextWrite, Short: "Move a note to .trash/ (preview; --apply does it)"},
		Errors:      WithErrors(errs.CodeNotFound, errs.CodeAmbiguous),
		Example:     `{"path": "Inbox/Unsorted.md", "apply": true}`,
		Toolset:     ToolsetWrites,
		Handler:     deleteNote,
	}
}

// ImproveFrontmatter is the improve_frontmatter operation.
func ImproveFrontmatter() Def[ImproveFrontmatterIn, ImproveFrontmatterOut] {
	return Def[ImproveFrontmatterIn, ImproveFrontmatterOut]{
		Name:  "improve_frontmatter",
		Title: "Improve frontmatter",
		Description: "Tidy a note's frontmatter: add missing required keys (id, created, updated, title, tags, aliases get sensible values; others take defaults), " +
			"normalize formats (ISO-8601 dates, timestamp ids, tags and aliases as lists), and with fix_identity make id and created agree. " +
			"Only the changed keys' lines are rewritten. Returns the list of fixes and the diff; preview by default.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "fix-frontmatter", Args: []string{"path"}, Text: textImproveFrontmatter, Short: "Add missing keys and normalize a note's frontmatter (preview; --apply writes it)"},
		Errors:      WithErrors(errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeInvalidUTF8),
		Example:     `{"path": "Ideas/Zettelkasten.md", "required": ["id", "created", "tags"], "fix_identity": true}`,
		Toolset:     ToolsetWrites,
		Handler:     improveFrontmatter,
	}
}
