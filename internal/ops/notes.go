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
	Mode        string            `json:"mode,omitempty" jsonschema:"retrieval mode: lexical (BM25 keywords), semantic (meaning, by embeddings) or hybrid (both fused; the default once the index has vectors, else lexical)"`
	ExpandLinks bool              `json:"expand_links,omitempty" jsonschema:"also return notes linked from and to the top hits, at a lower score (graph expansion)"`
	Explain     bool              `json:"explain,omitempty" jsonschema:"add each result's lexical rank, vector rank and graph contribution"`
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
	return checkMode(in.Mode)
}

// SearchNotesOut is the output of search_notes.
type SearchNotesOut struct {
	Results    []search.Result `json:"results" jsonschema:"one result per note, best first: path, title, heading_path, line, end_line, score (BM25 in lexical mode, else the fused rank score), snippet, matched (all, any, semantic or link) and, with explain, explain"`
	Mode       string          `json:"mode" jsonschema:"the retrieval mode used"`
	NextCursor string          `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get the next page"`
}

// ReadNoteIn is the input of read_note.
type ReadNoteIn struct {
	Path      string `json:"path,omitempty" jsonschema:"vault-relative path of the note, e.g. Projects/Alpha.md (or use note)"`
	Note      string `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text (a #heading in the wikilink selects that section); instead of path"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to return (1-based)"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line to return (inclusive)"`
	Heading   string `json:"heading,omitempty" jsonschema:"return only this heading's section (its text, or a path like Parent > Child)"`
	MaxChars  int    `json:"max_chars,omitempty" jsonschema:"cut the content after this many characters (default 50000)"`
	Vault     string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks ranges.
func (in *ReadNoteIn) Validate() error {
	if err := EitherPathOrNote(in.Path, in.Note); err != nil {
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
}

// GetLinksIn is the input of get_links.
type GetLinksIn struct {
	Path  string `json:"path,omitempty" jsonschema:"vault-relative path of the note (or use note)"`
	Note  string `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Depth int    `json:"depth,omitempty" jsonschema:"graph expansion: 1 (default) = this note's links only; 2-3 also returns neighbors reached through links and backlinks up to that many hops"`
	Limit int    `json:"limit,omitempty" jsonschema:"maximum neighbors returned when depth > 1, 1-500 (default 50)"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the note and the expansion bounds.
func (in *GetLinksIn) Validate() error {
	if err := EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if in.Depth < 0 || in.Depth > 3 {
		return errs.New(errs.CodeInvalidInput, "depth must be between 1 and 3").With("depth", in.Depth)
	}
	if in.Limit < 0 || in.Limit > 500 {
		return errs.New(errs.CodeInvalidInput, "limit must be between 1 and 500").With("limit", in.Limit)
	}
	return nil
}

// GetLinksOut is the output of get_links: the note's links and, with
// depth > 1, the notes around it.
type GetLinksOut struct {
	index.Links
	Neighbors []index.Neighbor `json:"neighbors,omitzero" jsonschema:"with depth > 1: notes reached through outgoing links and backlinks, by distance then path"`
	// NeighborsTruncated is set when more neighbors were reachable than limit.
	NeighborsTruncated bool `json:"neighbors_truncated,omitempty" jsonschema:"true when more neighbors were reachable than limit"`
}

// ListTagsIn is the input of list_tags.
type ListTagsIn struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"only tags starting with this (case-insensitive), e.g. project/"`
	Vault  string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// ListTagsOut is the output of list_tags.
type ListTagsOut struct {
	Tags []index.TagCount `json:"tags" jsonschema:"tags with note counts, most used first"`
}

// IndexStatusIn is the input of index_status.
type IndexStatusIn struct {
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// IndexStatusOut is the output of index_status.
type IndexStatusOut struct {
	index.Status
	Sync SyncState `json:"sync" jsonschema:"background sync of this vault: running, last sync time and last error"`
	// Watcher is the file watcher's state (absent when none runs).
	Watcher *WatchState `json:"watcher,omitempty" jsonschema:"the file watcher (loci serve, loci mcp): state, heartbeat, queue length, batches; absent when no watcher runs"`
	// Vaults lists the served vaults when there are several.
	Vaults []VaultSummary `json:"vaults,omitempty" jsonschema:"the served vaults, when there are several (pass a name as vault to pick one)"`
}

// VaultSummary names one served vault.
type VaultSummary struct {
	Name    string `json:"name" jsonschema:"vault name, for the vault input of every operation"`
	Root    string `json:"root" jsonschema:"absolute folder of the vault"`
	Kind    string `json:"kind" jsonschema:"obsidian or logseq"`
	Default bool   `json:"default" jsonschema:"true for the vault used when none is named"`
}

const defaultMaxChars = 50000

func registerNoteOps(r *Registry) {
	registerSimilarOps(r)
	register(r, SearchNotes())

	register(r, ReadNote())

	register(r, GetLinks())

	register(r, ListTags())

	register(r, IndexStatus())
}

func readNote(ctx context.Context, env *Env, in *ReadNoteIn) (*ReadNoteOut, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	p, match, heading := in.Path, "", in.Heading
	if in.Note != "" {
		rel, ref, m, err := NotePath(ctx, vh, "", in.Note)
		if err != nil {
			return nil, err
		}
		p, match = rel, m
		if heading == "" {
			heading = ref.Heading
		}
	}
	b, rel, err := vh.Vault.ReadNote(p)
	if err != nil {
		if errs.Code(err) == errs.CodeNotFound && in.Path != "" {
			if sim, serr := vh.Index.SimilarNotes(ctx, rel, SuggestionCount); serr == nil && len(sim) > 0 {
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
	return out, nil
}

// SearchNotes is the search_notes operation.
func SearchNotes() Def[SearchNotesIn, SearchNotesOut] {
	return Def[SearchNotesIn, SearchNotesOut]{
		Name:  "search_notes",
		Title: "Search notes",
		Description: "Search the vault by keywords (BM25, every language including Chinese/Japanese/Korean) and, once the index has vectors, by meaning: " +
			"mode hybrid (the default then) fuses both rankings, semantic finds paraphrases with no shared words, lexical is keywords only. " +
			"Returns one result per note, best first, with the best-matching section's heading path, line and a highlighted snippet. " +
			"Supports \"phrases\", prefix* and -exclusions, and filters by path glob, tags, frontmatter and dates; expand_links adds linked notes, explain shows the ranks behind each result. Paginate with next_cursor.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "search", Args: []string{"query"}, Text: textSearch},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound, errs.CodeEmbedUnavailable, errs.CodeEmbedMismatch},
		Example:     `{"query": "spaced repetition", "tags": ["learning"], "limit": 5}`,
		Handler: func(ctx context.Context, env *Env, in *SearchNotesIn) (*SearchNotesOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			resp, err := SearcherFor(vh).Search(ctx, search.Query{
				Text: in.Query, Limit: in.Limit, Offset: off, PathGlob: in.PathGlob, Tags: in.Tags, Frontmatter: in.Frontmatter,
				CreatedFrom: in.CreatedFrom, CreatedTo: in.CreatedTo, UpdatedFrom: in.UpdatedFrom, UpdatedTo: in.UpdatedTo,
				Mode: in.Mode, ExpandLinks: in.ExpandLinks, Explain: in.Explain,
			})
			if err != nil {
				return nil, err
			}
			out := &SearchNotesOut{Results: resp.Results, Mode: resp.Mode}
			if resp.HasMore {
				out.NextCursor = EncodeCursor(off + len(resp.Results))
			}
			return out, nil
		},
	}
}

// ReadNote is the read_note operation.
func ReadNote() Def[ReadNoteIn, ReadNoteOut] {
	return Def[ReadNoteIn, ReadNoteOut]{
		Name:  "read_note",
		Title: "Read a note",
		Description: "Read a note from disk by vault-relative path, or by note: its frontmatter id, title, alias, file name or [[wikilink]] text. " +
			"Returns its text, etag (SHA-256, needed for safe edits) and parsed frontmatter. " +
			"Narrow with a line range or one heading's section; long notes are cut at max_chars with truncated=true. " +
			"A note reference that fits several notes fails with ambiguous_note listing the candidates.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "read", Args: []string{"path"}, Text: func(o any) string { return o.(*ReadNoteOut).Content }},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound},
		Example:     `{"note": "[[Project Atlas#Goals]]"}`,
		Handler:     readNote,
	}
}

// GetLinks is the get_links operation.
func GetLinks() Def[GetLinksIn, GetLinksOut] {
	return Def[GetLinksIn, GetLinksOut]{
		Name:  "get_links",
		Title: "Links of a note",
		Description: "A note's link neighbourhood: outgoing wikilinks and Markdown links, backlinks, typed links (frontmatter keys whose values are links) in both directions, " +
			"embeds, and unresolved targets. Each link carries the target as written, the note it resolves to, and its line. " +
			"With depth 2-3 it also returns neighbors: the notes reached through links and backlinks, each with its distance and the note it was reached via (bounded by limit).",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "links", Args: []string{"path"}, Text: textLinks},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound},
		Example:     `{"path": "Projects/Project Atlas.md", "depth": 2, "limit": 20}`,
		Handler: func(ctx context.Context, env *Env, in *GetLinksIn) (*GetLinksOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			rel, _, _, err := NotePath(ctx, vh, in.Path, in.Note)
			if err != nil {
				return nil, err
			}
			links, err := vh.Index.LinksOf(ctx, rel)
			if err != nil {
				return nil, err
			}
			out := &GetLinksOut{Links: *links}
			if in.Depth > 1 {
				limit := in.Limit
				if limit == 0 {
					limit = 50
				}
				out.Neighbors, out.NeighborsTruncated, err = vh.Index.Neighbors(ctx, links.Path, in.Depth, limit)
				if err != nil {
					return nil, err
				}
			}
			return out, nil
		},
	}
}

// ListTags is the list_tags operation.
func ListTags() Def[ListTagsIn, ListTagsOut] {
	return Def[ListTagsIn, ListTagsOut]{
		Name:        "list_tags",
		Title:       "List tags",
		Description: "Every tag in the vault (frontmatter and inline #tags, nested tags as written) with the number of notes carrying it, most used first.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "tags", Text: textTags},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{"prefix": "project/"}`,
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
	}
}

// IndexStatus is the index_status operation.
func IndexStatus() Def[IndexStatusIn, IndexStatusOut] {
	return Def[IndexStatusIn, IndexStatusOut]{
		Name:  "index_status",
		Title: "Index status",
		Description: "The state of the vault's index: counts of notes, chunks, links (and unresolved ones), tags, tasks and blocks; last index times; schema version; " +
			"files that failed to index and notes with invalid frontmatter, with reasons; the background sync state; and, when several vaults are served, their names.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "status", Text: textStatus, Short: "Index state: counts, last index times, failures and why"},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{}`,
		Handler: func(ctx context.Context, env *Env, in *IndexStatusIn) (*IndexStatusOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			st, err := vh.Index.Status(ctx)
			if err != nil {
				return nil, err
			}
			out := &IndexStatusOut{Status: *st, Sync: vh.State(), Watcher: vh.WatchState()}
			if len(env.Vaults) > 1 {
				for i, v := range env.Vaults {
					out.Vaults = append(out.Vaults, VaultSummary{Name: v.Name, Root: v.Vault.Root, Kind: string(v.Vault.Kind), Default: i == 0})
				}
			}
			return out, nil
		},
	}
}
