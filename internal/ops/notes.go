package ops

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/vault"
)

// SearchNotesIn is the input of search_notes.
type SearchNotesIn struct {
	Query       string            `json:"query" jsonschema:"what to look for: words, \"exact phrases\", prefix* and -excluded terms; any language"`
	Mode        string            `json:"mode,omitempty" jsonschema:"retrieval mode: lexical (BM25; the default and, until embeddings are configured, the only mode)"`
	Limit       int               `json:"limit,omitempty" jsonschema:"results per page, 1-100 (default 10)"`
	Cursor      string            `json:"cursor,omitempty" jsonschema:"next_cursor from a previous page"`
	PathGlob    string            `json:"path_glob,omitempty" jsonschema:"only notes whose vault-relative path matches this glob, e.g. Projects/**"`
	Tags        []string          `json:"tags,omitempty" cli:"tag" jsonschema:"only notes carrying every one of these tags (a tag also matches its nested tags)"`
	Frontmatter map[string]string `json:"frontmatter,omitempty" jsonschema:"only notes whose frontmatter key equals the value (list values match any element; * matches any value)"`
	CreatedFrom string            `json:"created_from,omitempty" jsonschema:"frontmatter created on or after this date (YYYY-MM-DD)"`
	CreatedTo   string            `json:"created_to,omitempty" jsonschema:"frontmatter created on or before this date (YYYY-MM-DD)"`
	UpdatedFrom string            `json:"updated_from,omitempty" jsonschema:"updated (frontmatter, else file time) on or after this date"`
	UpdatedTo   string            `json:"updated_to,omitempty" jsonschema:"updated on or before this date"`
	Vault       string            `json:"vault,omitempty" jsonschema:"vault name when several are served (default: the first)"`
}

// Validate checks what the schema cannot.
func (in *SearchNotesIn) Validate() error {
	if strings.TrimSpace(in.Query) == "" {
		return errs.New(errs.CodeInvalidInput, "query is empty")
	}
	if in.Limit < 0 || in.Limit > 100 {
		return errs.New(errs.CodeInvalidInput, "limit must be between 1 and 100").With("limit", in.Limit)
	}
	switch in.Mode {
	case "", "lexical":
	case "semantic", "hybrid":
		return errs.New(errs.CodeInvalidInput, "mode %q needs embeddings, which are not configured; use mode lexical", in.Mode).With("mode", in.Mode)
	default:
		return errs.New(errs.CodeInvalidInput, "unknown mode %q (lexical, semantic, hybrid)", in.Mode).With("mode", in.Mode)
	}
	return nil
}

// SearchNotesOut is the output of search_notes.
type SearchNotesOut struct {
	Results    []search.Result `json:"results"`
	Mode       string          `json:"mode"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// ReadNoteIn is the input of read_note.
type ReadNoteIn struct {
	Path      string `json:"path" jsonschema:"vault-relative path of the note, e.g. Projects/Alpha.md"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to return (1-based)"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line to return (inclusive)"`
	Heading   string `json:"heading,omitempty" jsonschema:"return only this heading's section (its text, or a path like Parent > Child)"`
	MaxChars  int    `json:"max_chars,omitempty" jsonschema:"cut the content after this many characters (default 50000)"`
	Vault     string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks ranges.
func (in *ReadNoteIn) Validate() error {
	if in.Path == "" {
		return errs.New(errs.CodeInvalidInput, "path is required")
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
	Path             string         `json:"path"`
	Title            string         `json:"title"`
	Etag             string         `json:"etag"`
	Frontmatter      map[string]any `json:"frontmatter,omitempty"`
	FrontmatterError string         `json:"frontmatter_error,omitempty"`
	Content          string         `json:"content"`
	StartLine        int            `json:"start_line"`
	EndLine          int            `json:"end_line"`
	TotalLines       int            `json:"total_lines"`
	Truncated        bool           `json:"truncated"`
}

// GetLinksIn is the input of get_links.
type GetLinksIn struct {
	Path  string `json:"path" jsonschema:"vault-relative path of the note"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// ListTagsIn is the input of list_tags.
type ListTagsIn struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"only tags starting with this (case-insensitive), e.g. project/"`
	Vault  string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// ListTagsOut is the output of list_tags.
type ListTagsOut struct {
	Tags []index.TagCount `json:"tags"`
}

// IndexStatusIn is the input of index_status.
type IndexStatusIn struct {
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

const defaultMaxChars = 50000

func registerNoteOps(r *Registry) {
	Add(r, Def[SearchNotesIn, SearchNotesOut]{
		Name:  "search_notes",
		Title: "Search notes",
		Description: "Full-text search over the vault (BM25, every language including Chinese/Japanese/Korean). " +
			"Returns one result per note, best first, with the best-matching section's heading path, line and a highlighted snippet. " +
			"Supports \"phrases\", prefix* and -exclusions, and filters by path glob, tags, frontmatter and dates. Paginate with next_cursor.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "search", Args: []string{"query"}, Text: textSearch},
		Handler: func(ctx context.Context, env *Env, in *SearchNotesIn) (*SearchNotesOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := decodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			resp, err := vh.Search.Search(ctx, search.Query{
				Text: in.Query, Limit: in.Limit, Offset: off, PathGlob: in.PathGlob, Tags: in.Tags, Frontmatter: in.Frontmatter,
				CreatedFrom: in.CreatedFrom, CreatedTo: in.CreatedTo, UpdatedFrom: in.UpdatedFrom, UpdatedTo: in.UpdatedTo,
			})
			if err != nil {
				return nil, err
			}
			out := &SearchNotesOut{Results: resp.Results, Mode: "lexical"}
			if resp.HasMore {
				out.NextCursor = encodeCursor(off + len(resp.Results))
			}
			return out, nil
		},
	})

	Add(r, Def[ReadNoteIn, ReadNoteOut]{
		Name:  "read_note",
		Title: "Read a note",
		Description: "Read a note from disk by vault-relative path: its text, etag (SHA-256, needed for safe edits) and parsed frontmatter. " +
			"Narrow with a line range or one heading's section; long notes are cut at max_chars with truncated=true.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "read", Args: []string{"path"}, Text: func(o any) string { return o.(*ReadNoteOut).Content }},
		Handler:     readNote,
	})

	Add(r, Def[GetLinksIn, index.Links]{
		Name:  "get_links",
		Title: "Links of a note",
		Description: "A note's link neighbourhood: outgoing wikilinks and Markdown links, backlinks, typed links (frontmatter keys whose values are links) in both directions, " +
			"embeds, and unresolved targets. Each link carries the target as written, the note it resolves to, and its line.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "links", Args: []string{"path"}, Text: textLinks},
		Handler: func(ctx context.Context, env *Env, in *GetLinksIn) (*index.Links, error) {
			vh, rel, err := vaultPath(env, in.Vault, in.Path)
			if err != nil {
				return nil, err
			}
			return vh.Index.LinksOf(ctx, rel)
		},
	})

	Add(r, Def[ListTagsIn, ListTagsOut]{
		Name:        "list_tags",
		Title:       "List tags",
		Description: "Every tag in the vault (frontmatter and inline #tags, nested tags as written) with the number of notes carrying it, most used first.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "tags", Text: textTags},
		Handler: func(ctx context.Context, env *Env, in *ListTagsIn) (*ListTagsOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			tags, err := vh.Index.Tags(ctx)
			if err != nil {
				return nil, err
			}
			if p := strings.ToLower(strings.TrimPrefix(in.Prefix, "#")); p != "" {
				kept := tags[:0]
				for _, t := range tags {
					if strings.HasPrefix(strings.ToLower(t.Tag), p) {
						kept = append(kept, t)
					}
				}
				tags = kept
			}
			return &ListTagsOut{Tags: tags}, nil
		},
	})

	Add(r, Def[IndexStatusIn, index.Status]{
		Name:        "index_status",
		Title:       "Index status",
		Description: "The state of the vault's index: counts of notes, chunks, links (and unresolved ones), tags, tasks and blocks; last index times; schema version; files that failed to index and notes with invalid frontmatter, with reasons.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "status", Text: textStatus},
		Handler: func(ctx context.Context, env *Env, in *IndexStatusIn) (*index.Status, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			return vh.Index.Status(ctx)
		},
	})
}

func vaultPath(env *Env, name, p string) (*VaultHandle, string, error) {
	vh, err := env.Vault(name)
	if err != nil {
		return nil, "", err
	}
	_, rel, err := vh.Vault.Abs(p)
	if err != nil {
		return nil, "", err
	}
	return vh, rel, nil
}

func readNote(ctx context.Context, env *Env, in *ReadNoteIn) (*ReadNoteOut, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	b, rel, err := vh.Vault.ReadNote(in.Path)
	if err != nil {
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
	out := &ReadNoteOut{Path: rel, Title: doc.Title, Etag: vault.Etag(b), Frontmatter: doc.Frontmatter, FrontmatterError: doc.FrontmatterError, TotalLines: len(lines)}
	start, end := 1, len(lines)
	if in.Heading != "" {
		s, e, ok := sectionLines(doc, in.Heading, len(lines))
		if !ok {
			return nil, errs.New(errs.CodeNotFound, "heading %q not found in %s", in.Heading, rel).With("path", rel).With("heading", in.Heading).With("headings", headingTexts(doc))
		}
		start, end = s, e
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
	return out, nil
}

func headingTexts(doc *markdown.Doc) []string {
	var out []string
	for _, h := range doc.Headings {
		out = append(out, h.Text)
	}
	return out
}

// sectionLines finds a heading by text or by path "A > B" (case-insensitive)
// and returns its section: the heading line up to the next heading of the
// same or a higher level.
func sectionLines(doc *markdown.Doc, want string, total int) (int, int, bool) {
	parts := strings.Split(want, ">")
	for i := range parts {
		parts[i] = strings.ToLower(strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(parts[i]), "#")))
	}
	var stack []markdown.Heading
	for i, h := range doc.Headings {
		for len(stack) > 0 && stack[len(stack)-1].Level >= h.Level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, h)
		if !pathMatches(stack, parts) {
			continue
		}
		end := total
		for _, n := range doc.Headings[i+1:] {
			if n.Level <= h.Level {
				end = n.Line - 1
				break
			}
		}
		return h.Line, end, true
	}
	return 0, 0, false
}

func pathMatches(stack []markdown.Heading, parts []string) bool {
	if len(parts) > len(stack) {
		return false
	}
	off := len(stack) - len(parts)
	for i, p := range parts {
		if strings.ToLower(stack[off+i].Text) != p {
			return false
		}
	}
	return true
}
