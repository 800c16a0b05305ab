package read

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/vault"
)

// ReadNoteIn is the input of read_note.
type ReadNoteIn struct {
	Path      string `json:"path,omitempty" jsonschema:"vault-relative path of the note, e.g. Projects/Alpha.md (or use note)"`
	Note      string `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text (a #heading in the wikilink selects that section); instead of path"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to return (1-based)"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line to return (inclusive)"`
	Heading   string `json:"heading,omitempty" jsonschema:"return only this heading's section (its text, or a path like Parent > Child)"`
	MaxChars  int    `json:"max_chars,omitempty" jsonschema:"cut the content after this many characters (default 50000)"`
	Vault     string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`

	// RenderQueries runs the queries the note embeds (docs/query.md).
	RenderQueries bool `json:"render_queries,omitempty" jsonschema:"also run the queries the returned lines embed ({{query ...}}, #+BEGIN_QUERY, dataview code blocks) and return their answers in queries; the content is unchanged"`
}

// Validate checks ranges.
func (in *ReadNoteIn) Validate() error {
	if err := ops.EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if in.StartLine < 0 || in.EndLine < 0 || (in.EndLine > 0 && in.StartLine > in.EndLine) {
		return errs.New(errs.CodeInvalidInput, "invalid line range %d-%d", in.StartLine, in.EndLine)
	}
	if in.MaxChars < 0 {
		return errs.New(errs.CodeInvalidInput, "max_chars must be positive")
	}
	return nil
}

// ReadNoteOut is the output of read_note.
type ReadNoteOut struct {
	Path             string         `json:"path" jsonschema:"vault-relative path"`
	Title            string         `json:"title" jsonschema:"the note's title"`
	Match            string         `json:"match,omitempty" jsonschema:"how note was resolved: path, id, filename, alias or title (only when note was given)"`
	Etag             string         `json:"etag" jsonschema:"hex SHA-256 of the file, for safe edits"`
	Frontmatter      map[string]any `json:"frontmatter,omitempty" jsonschema:"parsed frontmatter (Logseq: page properties)"`
	FrontmatterError string         `json:"frontmatter_error,omitempty" jsonschema:"why the frontmatter is invalid, if it is"`
	Content          string         `json:"content" jsonschema:"the text returned (whole note, section or line range)"`
	StartLine        int            `json:"start_line" jsonschema:"first line of content (1-based)"`
	EndLine          int            `json:"end_line" jsonschema:"last line of content"`
	TotalLines       int            `json:"total_lines" jsonschema:"lines in the whole note"`
	Truncated        bool           `json:"truncated" jsonschema:"true when content was cut at max_chars"`

	// Queries are the embedded queries' answers (render_queries).
	Queries []ops.EmbeddedQuery `json:"queries,omitempty" jsonschema:"with render_queries: the queries that start in the returned lines, in note order, each with its result or its error (absent when there are none)"`
}

// ReadNote is the read_note operation.
func ReadNote() ops.Def[ReadNoteIn, ReadNoteOut] {
	return ops.Def[ReadNoteIn, ReadNoteOut]{
		Name:  "read_note",
		Title: "Read a note",
		Description: "Read a note from disk by vault-relative path, or by note: its frontmatter id, title, alias, file name or [[wikilink]] text. " +
			"Returns its text, etag (SHA-256, needed for safe edits) and parsed frontmatter. " +
			"Narrow with a line range or one heading's section; long notes are cut at max_chars with truncated=true. " +
			"A note reference that fits several notes fails with ambiguous_note listing the candidates. " +
			"With render_queries, the queries the note embeds (Logseq {{query}} and #+BEGIN_QUERY, ```dataview blocks) are run under the same read rules and returned in queries; a failing query gives an error entry, never a failed read.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "read", Args: []string{"path"}, Text: textReadNote},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound},
		Example:     `{"note": "[[Project Atlas#Goals]]"}`,
		Handler:     readNote,
	}
}

const defaultMaxChars = 50000

func readNote(ctx context.Context, env *ops.Env, in *ReadNoteIn) (*ReadNoteOut, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	p, match, heading := in.Path, "", in.Heading
	if in.Note != "" {
		rel, ref, m, err := ops.NotePath(ctx, vh, "", in.Note)
		if err != nil {
			return nil, err
		}
		p, match = rel, m
		if heading == "" {
			heading = ref.Heading
		}
	}
	b, rel, err := env.ReadNote(ctx, vh, p)
	if err != nil {
		if errs.Code(err) == errs.CodeNotFound && in.Path != "" {
			if sim := ops.Suggestions(ctx, vh, rel); len(sim) > 0 {
				err = errs.As(err).With("suggestions", sim)
			}
		}
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, errs.New(errs.CodeInvalidInput, "note %s is not valid UTF-8 text", rel).With("path", rel)
	}
	outline, journal := vh.Vault.LogseqFile(rel)
	doc := markdown.Parse(b, markdown.Options{Path: rel, Logseq: outline, Journal: journal})
	text := string(b)
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	out := &ReadNoteOut{Path: rel, Title: doc.Title, Match: match, Etag: vault.Etag(b), Frontmatter: doc.Frontmatter, FrontmatterError: doc.FrontmatterError, TotalLines: len(lines)}
	start, end := 1, len(lines)
	if heading != "" {
		hits := doc.MatchHeadings(heading)
		if len(hits) == 0 {
			return nil, errs.New(errs.CodeNotFound, "heading %q not found in %s", heading, rel).With("path", rel).With("heading", heading).With("headings", doc.HeadingTexts())
		}
		// The first heading that matches: its line up to the next heading
		// of the same or a higher level.
		start, end = doc.Headings[hits[0]].Line, doc.SectionEnd(hits[0], len(lines))
	}
	if in.StartLine > 0 {
		start = max(start, in.StartLine)
	}
	if in.EndLine > 0 {
		end = min(end, in.EndLine)
	}
	if len(lines) > 0 && start > len(lines) {
		return nil, errs.New(errs.CodeInvalidInput, "start_line %d is past the end of %s (%d lines)", start, rel, len(lines))
	}
	if start <= end && len(lines) > 0 {
		out.Content = strings.Join(lines[start-1:end], "")
		out.StartLine, out.EndLine = start, end
	}
	limit := in.MaxChars
	if limit == 0 {
		limit = defaultMaxChars
	}
	if utf8.RuneCountInString(out.Content) > limit {
		cut := 0
		for i := range out.Content {
			if cut == limit {
				out.Content = out.Content[:i]
				break
			}
			cut++
		}
		out.Truncated = true
		out.EndLine = out.StartLine + strings.Count(out.Content, "\n")
	}
	if in.RenderQueries && out.Content != "" {
		out.Queries = ops.RunEmbeddedQueries(ctx, env, vh, text, out.StartLine, out.EndLine, ops.BlockAt(len(doc.Blocks), func(i int) (int, int, string) {
			return doc.Blocks[i].Line, doc.Blocks[i].EndLine, doc.Blocks[i].UUID
		}))
	}
	return out, nil
}

// textReadNote prints the content, then each rendered query's table.
func textReadNote(o any) string {
	out := o.(*ReadNoteOut)
	if len(out.Queries) == 0 {
		return out.Content
	}
	s := out.Content
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + ops.EmbeddedQueriesText(out.Queries)
}
