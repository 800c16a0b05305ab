package write

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// ImproveFrontmatterIn is the input of improve_frontmatter.
type ImproveFrontmatterIn struct {
	Path        string         `json:"path,omitempty" jsonschema:"vault-relative path of the note (or use note)"`
	Note        string         `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Required    []string       `json:"required,omitempty" cli:"require" jsonschema:"keys the note must have; a missing one is added: id (a timestamp id), created and updated (from the id or the file's time), title (the note's title), tags and aliases (empty lists), another key with its value in defaults, else empty"`
	Defaults    map[string]any `json:"defaults,omitempty" jsonschema:"values for required keys that are missing, e.g. {\"status\": \"draft\"}"`
	Normalize   *bool          `json:"normalize,omitempty" jsonschema:"normalize formats (default true): created, updated and date to ISO-8601 (2026-11-20 or 2026-11-20T10:15:00), a date-time id to a timestamp id (YYYYMMDDHHmmss), tags and aliases to lists (tags without #)"`
	FixIdentity bool           `json:"fix_identity,omitempty" jsonschema:"make id and created agree: add a timestamp id when there is none (from created, else the file's time) and, when created disagrees with a timestamp id's date, set created from the id"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks the note and the keys.
func (in *ImproveFrontmatterIn) Validate() error {
	if err := ops.EitherPathOrNote(in.Path, in.Note); err != nil {
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
	ops.WriteResult
	Fixes []string `json:"fixes" jsonschema:"what was (or, in a preview, would be) changed, one line per fix"`
}

// ImproveFrontmatter is the improve_frontmatter operation.
func ImproveFrontmatter() ops.Def[ImproveFrontmatterIn, ImproveFrontmatterOut] {
	return ops.Def[ImproveFrontmatterIn, ImproveFrontmatterOut]{
		Name:  "improve_frontmatter",
		Title: "Improve frontmatter",
		Description: "Tidy a note's frontmatter: add missing required keys (id, created, updated, title, tags, aliases get sensible values; others take defaults), " +
			"normalize formats (ISO-8601 dates, timestamp ids, tags and aliases as lists), and with fix_identity make id and created agree. " +
			"Only the changed keys' lines are rewritten. Returns the list of fixes and the diff; preview by default.",
		Annotations: ops.Annotations{Destructive: true},
		CLI:         ops.CLI{Use: "fix-frontmatter", Args: []string{"path"}, Text: textImproveFrontmatter, Short: "Add missing keys and normalize a note's frontmatter (preview; --apply writes it)"},
		Errors:      ops.WithErrors(errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeInvalidUTF8),
		Example:     `{"path": "Ideas/Zettelkasten.md", "required": ["id", "created", "tags"], "fix_identity": true}`,
		Toolset:     ops.ToolsetWrites,
		Handler:     improveFrontmatter,
	}
}

func improveFrontmatter(ctx context.Context, env *ops.Env, in *ImproveFrontmatterIn) (*ImproveFrontmatterOut, error) {
	vh, w, err := ops.WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	rel, err := ops.WriteTarget(ctx, vh, w, in.Path, in.Note)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	return ops.Idempotent(ctx, env, vh, "improve_frontmatter", in, &in.WriteOpts, func() (*ImproveFrontmatterOut, error) {
		var fixes []string
		res, err := ops.RunWrite(ctx, env, ops.WriteSpec{Op: "improve_frontmatter", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *ops.Stage) error {
			f, err := s.ReadGuarded(rel, want)
			if err != nil {
				return err
			}
			d := noteedit.NewDoc(rel, f.Text, false)
			if outline, _ := vh.Vault.LogseqFile(rel); outline && !noteedit.HasFrontmatter(d.Lines) {
				return errs.New(errs.CodeInvalidInput, "%s is a Logseq page: its properties are key:: value lines; use update_page to set them", rel).With("path", rel)
			}
			var mtime time.Time
			if clean, err := w.Target(rel); err == nil {
				if st, err := vh.Vault.FS().Lstat(clean); err == nil {
					mtime = st.ModTime()
				}
			}
			fixes, err = tidyFrontmatter(ctx, d, in, mtime, env.Clock(), vh)
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

var compactID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{12}(\d{2})?$`) })

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

// tidyFrontmatter applies improve_frontmatter's rules to d and describes
// them. mtime is the file's time (zero when unknown), now the clock's.
func tidyFrontmatter(ctx context.Context, d *noteedit.Doc, in *ImproveFrontmatterIn, mtime, now time.Time, vh *ops.VaultHandle) ([]string, error) {
	var fixes []string
	if mtime.IsZero() {
		mtime = now
	}
	// An id added from a date (created, the file's time) is the first
	// second from it that no note has: notes created on one day get
	// different ids.
	newID := func(base time.Time) int64 { return ops.UniqueTimestampID(ctx, vh, base, in.Apply) }
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
		} else if s, isStr := v.(string); ok && isStr && !compactID().MatchString(s) {
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
		if !compactID().MatchString(s) {
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
			id := newID(base)
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
			v = newID(base)
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
func notTitle(d *noteedit.Doc, vh *ops.VaultHandle) string {
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
	return ops.TextWriteWith(o, b.String())
}
