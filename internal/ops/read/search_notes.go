package read

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/search"
)

// SearchNotesIn is the input of search_notes.
type SearchNotesIn struct {
	Query       string            `json:"query,omitempty" jsonschema:"what to look for: words, \"exact phrases\", prefix* and -excluded terms; any language. Empty with at least one filter: list the notes that pass the filters, ordered by sort"`
	Mode        string            `json:"mode,omitempty" jsonschema:"retrieval mode: lexical (BM25 keywords), semantic (meaning, by embeddings) or hybrid (both fused; the default once every section has its vector, else lexical)"`
	ExpandLinks bool              `json:"expand_links,omitempty" jsonschema:"also return notes linked from and to the top hits, at a lower score (graph expansion)"`
	Explain     bool              `json:"explain,omitempty" jsonschema:"add each result's lexical rank, vector rank and graph contribution"`
	Limit       int               `json:"limit,omitempty" jsonschema:"results per page, 1-100 (default 10)"`
	Cursor      string            `json:"cursor,omitempty" jsonschema:"next_cursor from a previous page"`
	PathGlob    string            `json:"path_glob,omitempty" jsonschema:"only notes whose vault-relative path matches this glob, e.g. Projects/**"`
	Tags        []string          `json:"tags,omitempty" cli:"tag" jsonschema:"only notes carrying every one of these tags (a tag also matches its nested tags)"`
	Frontmatter map[string]string `json:"frontmatter,omitempty" jsonschema:"only notes whose frontmatter key (or Logseq page property) equals the value, case-insensitively (list values match any element; a value written as a link or tag, [[X]] or #X, also matches X; * matches any value)"`
	CreatedFrom string            `json:"created_from,omitempty" jsonschema:"frontmatter created on or after this date (YYYY-MM-DD)"`
	CreatedTo   string            `json:"created_to,omitempty" jsonschema:"frontmatter created on or before this date (YYYY-MM-DD)"`
	UpdatedFrom string            `json:"updated_from,omitempty" jsonschema:"updated (frontmatter, else file time) on or after this date"`
	UpdatedTo   string            `json:"updated_to,omitempty" jsonschema:"updated on or before this date"`
	GroupBy     string            `json:"group_by,omitempty" jsonschema:"note (default): one result per note, its best section; section: one result per section, so several sections of a note may appear (not with expand_links)"`
	Sort        string            `json:"sort,omitempty" jsonschema:"order of a listing (empty query): updated (default), created, title or path"`
	Order       string            `json:"order,omitempty" jsonschema:"asc or desc (default: desc for updated and created, asc for title and path)"`
	Vault       string            `json:"vault,omitempty" jsonschema:"vault name when several are served (default: the first)"`
}

// query is the search of in (cursor already decoded into off).
func (in *SearchNotesIn) query(off int) search.Query {
	return search.Query{
		Text: in.Query, Limit: in.Limit, Offset: off, PathGlob: in.PathGlob, Tags: in.Tags, Frontmatter: in.Frontmatter,
		CreatedFrom: in.CreatedFrom, CreatedTo: in.CreatedTo, UpdatedFrom: in.UpdatedFrom, UpdatedTo: in.UpdatedTo,
		Mode: in.Mode, ExpandLinks: in.ExpandLinks, Explain: in.Explain, Sort: in.Sort, Order: in.Order, GroupBy: in.GroupBy,
	}
}

// Validate checks what the schema cannot.
func (in *SearchNotesIn) Validate() error {
	if strings.TrimSpace(in.Query) == "" && !in.query(0).HasFilter() {
		return errs.New(errs.CodeInvalidInput, "query is empty: give words, or a filter (path_glob, tags, frontmatter, dates) to list notes")
	}
	if err := search.CheckSort(in.Sort, in.Order); err != nil {
		return err
	}
	if in.Limit < 0 || in.Limit > 100 {
		return errs.New(errs.CodeInvalidInput, "limit must be between 1 and 100").With("limit", in.Limit)
	}
	return checkMode(in.Mode)
}

// SearchNotesOut is the output of search_notes.
type SearchNotesOut struct {
	Results    []search.Result `json:"results" jsonschema:"one result per note (per section with group_by section), best first: path, title, heading_path, line, end_line (the section's line span), block_uuid (group_by section: the id:: of the Logseq block the section starts with), score (BM25 in lexical mode, the fused rank score in the others, 0 in a listing), snippet, matched (all, any, semantic, link, or filter in a listing) and, with explain, explain"`
	Mode       string          `json:"mode" jsonschema:"the retrieval mode used: lexical, semantic, hybrid, or list for an empty query with filters"`
	Vectors    string          `json:"vectors,omitempty" jsonschema:"partial while the index's vectors are incomplete (a background embedder is at work or failed): the default mode was then lexical, and a semantic or hybrid search used the vectors there are"`
	NextCursor string          `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get the next page"`
}

// SearchNotes is the search_notes operation.
func SearchNotes() ops.Def[SearchNotesIn, SearchNotesOut] {
	return ops.Def[SearchNotesIn, SearchNotesOut]{
		Name:  "search_notes",
		Title: "Search notes",
		Description: "Search the vault by keywords (BM25, every language including Chinese/Japanese/Korean) and, once every section has its vector, by meaning: " +
			"mode hybrid (the default then) fuses both rankings, semantic finds paraphrases with no shared words, lexical is keywords only. " +
			"Returns one result per note, best first, with the best-matching section's heading path, line span and a highlighted snippet; group_by section returns sections instead (several per note, Logseq blocks with their uuid). " +
			"Supports \"phrases\", prefix* and -exclusions, and filters by path glob, tags, frontmatter and dates; expand_links adds linked notes, explain shows the ranks behind each result. " +
			"With an empty query and at least one filter it lists the matching notes (mode list, score 0) ordered by sort (updated, created, title, path) and order. Paginate with next_cursor.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "search", Args: []string{"query"}, Text: textSearch},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound, errs.CodeEmbedUnavailable, errs.CodeEmbedMismatch},
		Example:     `{"query": "spaced repetition", "tags": ["learning"], "limit": 5}`,
		Handler: func(ctx context.Context, env *ops.Env, in *SearchNotesIn) (*SearchNotesOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := ops.DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			resp, err := ops.Search(ctx, vh, in.query(off))
			if err != nil {
				return nil, err
			}
			out := &SearchNotesOut{Results: resp.Results, Mode: resp.Mode, Vectors: resp.Vectors}
			if resp.HasMore {
				out.NextCursor = ops.EncodeCursor(off + len(resp.Results))
			}
			return out, nil
		},
	}
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

// explainLine renders a result's explain for the text output.
func explainLine(e *search.Explain) string {
	if e == nil {
		return ""
	}
	var parts []string
	if e.LexicalRank > 0 {
		parts = append(parts, fmt.Sprintf("lexical #%d (bm25 %.2f)", e.LexicalRank, e.LexicalScore))
	} else {
		parts = append(parts, "lexical -")
	}
	if e.VectorRank > 0 {
		parts = append(parts, fmt.Sprintf("vector #%d (cos %.3f)", e.VectorRank, e.VectorScore))
	} else {
		parts = append(parts, "vector -")
	}
	if e.Graph > 0 {
		parts = append(parts, fmt.Sprintf("graph +%.4f via %s", e.Graph, strings.Join(e.Via, ", ")))
	}
	return fmt.Sprintf("explain: %s; fused %.4f", strings.Join(parts, ", "), e.Fused)
}

func textSearch(o any) string {
	out := o.(*SearchNotesOut)
	if len(out.Results) == 0 {
		return "no results\n"
	}
	var b strings.Builder
	for i, r := range out.Results {
		loc := r.Path
		if r.Line > 0 {
			loc = fmt.Sprintf("%s:%d", r.Path, r.Line)
		}
		if out.Mode == search.ModeList {
			fmt.Fprintf(&b, "%2d. %s\n    %s", i+1, r.Title, loc) // a listing has no score
		} else {
			fmt.Fprintf(&b, "%2d. %s  (%.4g)\n    %s", i+1, r.Title, r.Score, loc)
		}
		if len(r.HeadingPath) > 0 {
			fmt.Fprintf(&b, "  › %s", strings.Join(r.HeadingPath, " › "))
		}
		if r.BlockUUID != "" {
			fmt.Fprintf(&b, "  ((%s))", r.BlockUUID)
		}
		b.WriteString("\n")
		if r.Snippet != "" {
			fmt.Fprintf(&b, "    %s\n", r.Snippet)
		}
		if r.Explain != nil {
			fmt.Fprintf(&b, "    %s\n", explainLine(r.Explain))
		}
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}
