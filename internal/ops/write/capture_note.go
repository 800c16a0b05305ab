package write

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
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
	ops.WriteOpts
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
	// Only what no folder may be (traversal, absolute paths, NUL, ignored
	// folders: path_denied). Whether a folder that does not exist yet may
	// be created is the writer's call (Target: path_denied), so that an
	// existing folder stays writable whatever its name.
	if f := captureFolder(in.Folder); f != "" {
		if _, err := vault.CleanRel(f); err != nil {
			return err
		}
	}
	return in.Check()
}

// captureFolder normalizes a folder the way Validate and the handler both
// read it: backslashes as slashes, without trailing slashes. A leading
// slash stays, so an absolute path is refused like any other path.
func captureFolder(f string) string {
	return strings.TrimRight(strings.ReplaceAll(f, "\\", "/"), "/")
}

// CaptureNote is the capture_note operation.
func CaptureNote() ops.Def[CaptureNoteIn, ops.WriteResult] {
	return ops.Def[CaptureNoteIn, ops.WriteResult]{
		Name:  "capture_note",
		Title: "Capture a note",
		Description: "Create a new note from a title and/or text, in the inbox folder (default Inbox/) or a given folder. The title becomes a safe file name and the note's heading; " +
			"frontmatter is generated (id, created, updated, aliases, tags, source, plus any keys given). Never overwrites: a taken name gets a number (Title 2.md). " +
			"Preview by default; apply=true writes it and returns the path and etag.",
		Annotations: ops.Annotations{},
		CLI:         ops.CLI{Use: "capture", Args: []string{"title"}, Text: ops.TextWrite, Short: "Capture a new note in the inbox (preview; --apply writes it)"},
		Errors:      ops.WithErrors(),
		Example:     `{"title": "Idea: spaced repetition for code", "content": "Review snippets at growing intervals.", "tags": ["idea"], "apply": true}`,
		Toolset:     ops.ToolsetWrites,
		Handler:     captureNote,
	}
}

var errNameTaken = errors.New("name taken")

func captureNote(ctx context.Context, env *ops.Env, in *CaptureNoteIn) (*ops.WriteResult, error) {
	vh, w, err := ops.WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	return ops.Idempotent(ctx, env, vh, "capture_note", in, &in.WriteOpts, func() (*ops.WriteResult, error) {
		folder := in.Folder
		if folder == "" {
			folder = env.WritesFor(vh).Inbox
			if folder == "" {
				folder = "Inbox"
			}
		}
		folder = captureFolder(folder)
		title := strings.TrimSpace(in.Title)
		if title == "" {
			title = titleFromContent(in.Content)
		}
		name := safeFileName(title)
		now := env.Clock()
		text, err := captureText(now, ops.UniqueTimestampID(ctx, vh, now, in.Apply), title, in)
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
			clean, err := w.Target(rel)
			if err != nil {
				return nil, err
			}
			res, err := ops.RunWrite(ctx, env, ops.WriteSpec{Op: "capture_note", Vault: vh, Opts: &in.WriteOpts, Locks: []string{clean}, Build: func(s *ops.Stage) error {
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

// safeFileName turns a title into a file name every OS and Obsidian accept:
// no / \ : * ? " < > | # ^ [ ] or control characters, no leading dot, no
// trailing dot or space, at most 120 bytes, and nothing vault.NameProblem
// refuses for a new note (the writer's own rule): a name Windows reserves
// for a device, with or without an extension (CON, aux.notes, COM¹), gets
// a "_" after the device name (CON_, aux_.notes).
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
	if vault.NameProblem(s+".md", false) != "" {
		stem, ext, dotted := strings.Cut(s, ".")
		s = stem + "_"
		if dotted {
			s += "." + ext
		}
	}
	if vault.NameProblem(s+".md", false) != "" {
		s = "Untitled"
	}
	return s
}
