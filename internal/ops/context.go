package ops

import (
	"context"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/search"
)

// GetContextIn is the input of get_context.
type GetContextIn struct {
	Query        string   `json:"query" jsonschema:"what the task is about: words, \"exact phrases\", prefix* and -excluded terms; any language"`
	Mode         string   `json:"mode,omitempty" jsonschema:"retrieval mode: lexical (BM25 keywords), semantic (meaning, by embeddings) or hybrid (both fused; the default once the index has vectors, else lexical)"`
	ExpandLinks  bool     `json:"expand_links,omitempty" jsonschema:"also return notes linked from and to the top hits, at a lower score (graph expansion)"`
	Explain      bool     `json:"explain,omitempty" jsonschema:"add each note's lexical rank, vector rank and graph contribution"`
	Limit        int      `json:"limit,omitempty" jsonschema:"number of notes, 1-20 (default 5)"`
	PreviewChars int      `json:"preview_chars,omitempty" jsonschema:"also return the first N characters of each note's body after the frontmatter, 0-4000 (default 0: no preview)"`
	PathGlob     string   `json:"path_glob,omitempty" jsonschema:"only notes whose vault-relative path matches this glob, e.g. Projects/**"`
	Tags         []string `json:"tags,omitempty" cli:"tag" jsonschema:"only notes carrying every one of these tags (a tag also matches its nested tags)"`
	Vault        string   `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks what the schema cannot.
func (in *GetContextIn) Validate() error {
	if strings.TrimSpace(in.Query) == "" {
		return errs.New(errs.CodeInvalidInput, "query is empty: say what the task is about")
	}
	if in.Limit < 0 || in.Limit > 20 {
		return errs.New(errs.CodeInvalidInput, "limit must be between 1 and 20").With("limit", in.Limit)
	}
	if in.PreviewChars < 0 || in.PreviewChars > 4000 {
		return errs.New(errs.CodeInvalidInput, "preview_chars must be between 0 and 4000").With("preview_chars", in.PreviewChars)
	}
	return checkMode(in.Mode)
}

// checkMode validates the name; whether vectors exist is checked by the search.
func checkMode(mode string) error {
	switch mode {
	case "", search.ModeLexical, search.ModeSemantic, search.ModeHybrid:
	default:
		return errs.New(errs.CodeInvalidInput, "unknown mode %q (lexical, semantic, hybrid)", mode).With("mode", mode)
	}
	return nil
}

// ContextNote is one note of get_context.
type ContextNote struct {
	Path        string          `json:"path" jsonschema:"vault-relative path (pass it to read_note)"`
	Title       string          `json:"title" jsonschema:"the note's title"`
	Score       float64         `json:"score" jsonschema:"relevance, higher is better (BM25 in lexical mode, else the fused rank score)"`
	HeadingPath []string        `json:"heading_path" jsonschema:"headings above the best-matching section"`
	Line        int             `json:"line" jsonschema:"first line of the best-matching section"`
	Snippet     string          `json:"snippet" jsonschema:"text around the matches, with matches in **bold**"`
	Tags        []string        `json:"tags" jsonschema:"the note's tags"`
	Matched     string          `json:"matched" jsonschema:"all: every query term matched; any: found by the relaxed any-term pass; semantic: found by meaning only; link: linked from or to a top hit (expand_links)"`
	Preview     string          `json:"preview,omitempty" jsonschema:"the start of the note's body (with preview_chars)"`
	Explain     *search.Explain `json:"explain,omitempty" jsonschema:"with explain: lexical rank and BM25 score, vector rank and cosine, graph contribution and the hits it came via, fused score"`
}

// GetContextOut is the output of get_context.
type GetContextOut struct {
	Query string        `json:"query" jsonschema:"the query as received"`
	Mode  string        `json:"mode" jsonschema:"the retrieval mode used"`
	Notes []ContextNote `json:"notes" jsonschema:"the most relevant notes, best first, one entry per note"`
	Hint  string        `json:"hint,omitempty" jsonschema:"what to try next when nothing matched"`
}

// ResolveNoteIn is the input of resolve_note.
type ResolveNoteIn struct {
	Note  string `json:"note" jsonschema:"what to resolve: a vault-relative path, a frontmatter id, a title, an alias, a file name or [[wikilink]] text"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the reference is not empty.
func (in *ResolveNoteIn) Validate() error {
	if strings.TrimSpace(in.Note) == "" {
		return errs.New(errs.CodeInvalidInput, "note is empty")
	}
	return nil
}

// ResolveNoteOut is the output of resolve_note.
type ResolveNoteOut struct {
	Note       string            `json:"note" jsonschema:"the reference as received"`
	Resolved   string            `json:"resolved,omitempty" jsonschema:"the path it unambiguously means, if any"`
	Ambiguous  bool              `json:"ambiguous" jsonschema:"true when several notes match equally well"`
	Candidates []index.NoteMatch `json:"candidates" jsonschema:"every note it may mean, best first (empty when none)"`
}

// RecentNotesIn is the input of recent_notes.
type RecentNotesIn struct {
	By       string `json:"by,omitempty" jsonschema:"mtime (file modification time, the default) or updated (frontmatter updated/modified, else the file time)"`
	Since    string `json:"since,omitempty" jsonschema:"only notes modified on or after this date (YYYY-MM-DD or an ISO-8601 time)"`
	PathGlob string `json:"path_glob,omitempty" jsonschema:"only notes whose vault-relative path matches this glob, e.g. Meetings/**"`
	Limit    int    `json:"limit,omitempty" jsonschema:"notes per call, 1-200 (default 20)"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault    string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the ordering, date and glob.
func (in *RecentNotesIn) Validate() error {
	switch in.By {
	case "", "mtime", "updated":
	default:
		return errs.New(errs.CodeInvalidInput, "by must be mtime or updated, not %q", in.By).With("by", in.By)
	}
	if in.Since != "" {
		if _, ok := parseTime(in.Since); !ok {
			return errs.New(errs.CodeInvalidInput, "invalid since date %q: use YYYY-MM-DD", in.Since).With("since", in.Since)
		}
	}
	if err := CheckGlob(in.PathGlob); err != nil {
		return err
	}
	return CheckLimit(in.Limit, 200)
}

// RecentNote is one note of recent_notes.
type RecentNote struct {
	Path     string `json:"path" jsonschema:"vault-relative path"`
	Title    string `json:"title" jsonschema:"the note's title"`
	Modified string `json:"modified" jsonschema:"file modification time (UTC, RFC 3339)"`
	Updated  string `json:"updated,omitempty" jsonschema:"frontmatter updated/modified as written, when present"`
}

// RecentNotesOut is the output of recent_notes.
type RecentNotesOut struct {
	By         string       `json:"by" jsonschema:"the ordering used"`
	Notes      []RecentNote `json:"notes" jsonschema:"most recent first"`
	Total      int          `json:"total" jsonschema:"number of notes matching, over all calls"`
	NextCursor string       `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get older notes"`
}

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// parseTime reads an ISO-8601 date or time (a date alone is midnight UTC).
func parseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// bodyPreview returns the first n characters of a note's body after its frontmatter.
func bodyPreview(vh *VaultHandle, b []byte, rel string, n int) string {
	outline, journal := vh.Vault.LogseqFile(rel)
	doc := markdown.Parse(b, markdown.Options{Path: rel, Logseq: outline, Journal: journal})
	lines := strings.SplitAfter(string(b), "\n")
	start := max(doc.BodyLine, 1) - 1
	if start > len(lines) {
		return ""
	}
	body := strings.TrimSpace(strings.Join(lines[start:], ""))
	body = strings.ReplaceAll(body, "\r\n", "\n")
	if utf8.RuneCountInString(body) <= n {
		return body
	}
	i := 0
	for j := range body {
		if i == n {
			return body[:j] + "…"
		}
		i++
	}
	return body
}

func registerContextOps(r *Registry) {
	register(r, GetContext())

	register(r, ResolveNote())

	register(r, RecentNotes())
}

// GetContext is the get_context operation.
func GetContext() Def[GetContextIn, GetContextOut] {
	return Def[GetContextIn, GetContextOut]{
		Name:  "get_context",
		Title: "Get context for a task",
		Description: "Start here: the notes most relevant to a task or question, best first, one entry per note, each with the best-matching section's heading path and line, " +
			"a highlighted snippet, the note's tags and, with preview_chars, the start of its body. " +
			"Finds notes by keywords and, once the index has vectors, by meaning (mode hybrid, the default then); expand_links adds linked notes. Follow up with read_note on the paths that matter.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "context", Args: []string{"query"}, Text: textContext, Short: "The notes most relevant to a question (an agent's first call)"},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound, errs.CodeEmbedUnavailable, errs.CodeEmbedMismatch},
		Example:     `{"query": "how do we keep the index fresh", "limit": 3, "preview_chars": 300}`,
		Handler: func(ctx context.Context, env *Env, in *GetContextIn) (*GetContextOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			resp, err := SearcherFor(vh).Search(ctx, search.Query{Text: in.Query, Limit: OrDefault(in.Limit, 5), PathGlob: in.PathGlob, Tags: in.Tags,
				Mode: in.Mode, ExpandLinks: in.ExpandLinks, Explain: in.Explain})
			if err != nil {
				return nil, err
			}
			out := &GetContextOut{Query: in.Query, Mode: resp.Mode, Notes: []ContextNote{}}
			ids := make([]int64, len(resp.Results))
			for i, res := range resp.Results {
				ids[i] = res.NoteID
			}
			tags, err := vh.Index.NoteTags(ctx, ids)
			if err != nil {
				return nil, err
			}
			for _, res := range resp.Results {
				n := ContextNote{Path: res.Path, Title: res.Title, Score: res.Score, HeadingPath: res.HeadingPath, Line: res.Line, Snippet: res.Snippet, Tags: tags[res.NoteID], Matched: res.Matched, Explain: res.Explain}
				if n.Tags == nil {
					n.Tags = []string{}
				}
				if in.PreviewChars > 0 {
					if b, rel, err := vh.Vault.ReadNote(res.Path); err == nil && utf8.Valid(b) {
						n.Preview = bodyPreview(vh, b, rel, in.PreviewChars)
					}
				}
				out.Notes = append(out.Notes, n)
			}
			if len(out.Notes) == 0 {
				out.Hint = "no note matched; try fewer or other words (synonyms, the other language of the vault), drop filters, or browse with get_vault_tree, list_tags and recent_notes"
			}
			return out, nil
		},
	}
}

// ResolveNote is the resolve_note operation.
func ResolveNote() Def[ResolveNoteIn, ResolveNoteOut] {
	return Def[ResolveNoteIn, ResolveNoteOut]{
		Name:  "resolve_note",
		Title: "Resolve a note reference",
		Description: "Find which note a name refers to: a path, frontmatter id, title, alias, file name or [[wikilink]] text. " +
			"Returns every candidate with why it matched (path, id, filename, alias, title) and its title, best first; resolved is set when one note is meant. " +
			"An empty list means no note matches.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "resolve", Args: []string{"note"}, Text: textResolve},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeVaultNotFound},
		Example:     `{"note": "[[Ada]]"}`,
		Handler: func(ctx context.Context, env *Env, in *ResolveNoteIn) (*ResolveNoteOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			_, _, ms, err := LookupRef(ctx, vh, in.Note)
			if err != nil {
				return nil, err
			}
			out := &ResolveNoteOut{Note: in.Note, Candidates: ms}
			if out.Candidates == nil {
				out.Candidates = []index.NoteMatch{}
			}
			if best, ok := index.Best(ms); ok {
				out.Resolved = best.Path
			} else {
				out.Ambiguous = len(ms) > 1
			}
			return out, nil
		},
	}
}

// RecentNotes is the recent_notes operation.
func RecentNotes() Def[RecentNotesIn, RecentNotesOut] {
	return Def[RecentNotesIn, RecentNotesOut]{
		Name:  "recent_notes",
		Title: "Recently changed notes",
		Description: "Notes by most recent change: file modification time, or with by=updated the frontmatter updated/modified date (falling back to the file time). " +
			"Filter by path glob and a since date; paginate with next_cursor.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "recent", Text: textRecent},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{"since": "2026-11-01", "path_glob": "Projects/**", "limit": 10}`,
		Handler: func(ctx context.Context, env *Env, in *RecentNotesIn) (*RecentNotesOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			notes, err := vh.Index.ListNotes(ctx, false)
			if err != nil {
				return nil, err
			}
			by := in.By
			if by == "" {
				by = "mtime"
			}
			var since time.Time
			if in.Since != "" {
				since, _ = parseTime(in.Since)
			}
			type row struct {
				n   RecentNote
				key time.Time
			}
			var rows []row
			for _, n := range notes {
				if !GlobMatch(in.PathGlob, n.Path) {
					continue
				}
				mt := time.Unix(0, n.ModTime).UTC()
				key := mt
				if by == "updated" {
					if t, ok := parseTime(n.Updated); ok {
						key = t
					}
				}
				if !since.IsZero() && key.Before(since) {
					continue
				}
				rows = append(rows, row{RecentNote{Path: n.Path, Title: n.Title, Modified: mt.Format(time.RFC3339), Updated: n.Updated}, key})
			}
			sort.SliceStable(rows, func(i, j int) bool {
				if !rows[i].key.Equal(rows[j].key) {
					return rows[i].key.After(rows[j].key)
				}
				return rows[i].n.Path < rows[j].n.Path
			})
			all := make([]RecentNote, len(rows))
			for i, r := range rows {
				all[i] = r.n
			}
			out := &RecentNotesOut{By: by, Total: len(all)}
			out.Notes, out.NextCursor = Page(all, off, OrDefault(in.Limit, 20))
			return out, nil
		},
	}
}
