package read

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/search"
)

// GetContextIn is the input of get_context.
type GetContextIn struct {
	Query        string   `json:"query" jsonschema:"what the task is about: words, \"exact phrases\", prefix* and -excluded terms; any language"`
	Mode         string   `json:"mode,omitempty" jsonschema:"retrieval mode: lexical (BM25 keywords), semantic (meaning, by embeddings) or hybrid (both fused; the default once every section has its vector, else lexical)"`
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
	Query   string        `json:"query" jsonschema:"the query as received"`
	Mode    string        `json:"mode" jsonschema:"the retrieval mode used"`
	Vectors string        `json:"vectors,omitempty" jsonschema:"partial while the index's vectors are incomplete (see search_notes)"`
	Notes   []ContextNote `json:"notes" jsonschema:"the most relevant notes, best first, one entry per note"`
	Hint    string        `json:"hint,omitempty" jsonschema:"what to try next when nothing matched"`
}

// GetContext is the get_context operation.
func GetContext() ops.Def[GetContextIn, GetContextOut] {
	return ops.Def[GetContextIn, GetContextOut]{
		Name:  "get_context",
		Title: "Get context for a task",
		Description: "Start here: the notes most relevant to a task or question, best first, one entry per note, each with the best-matching section's heading path and line, " +
			"a highlighted snippet, the note's tags and, with preview_chars, the start of its body. " +
			"Finds notes by keywords and, once every section has its vector, by meaning (mode hybrid, the default then); expand_links adds linked notes. Follow up with read_note on the paths that matter.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "context", Args: []string{"query"}, Text: textContext, Short: "The notes most relevant to a question (an agent's first call)"},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound, errs.CodeEmbedUnavailable, errs.CodeEmbedMismatch},
		Example:     `{"query": "how do we keep the index fresh", "limit": 3, "preview_chars": 300}`,
		Handler: func(ctx context.Context, env *ops.Env, in *GetContextIn) (*GetContextOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			fence := env.ReadFence(ctx, vh)
			resp, err := ops.Search(ctx, vh, search.Query{Text: in.Query, Limit: ops.OrDefault(in.Limit, 5), PathGlob: in.PathGlob, Tags: in.Tags,
				Mode: in.Mode, ExpandLinks: in.ExpandLinks, Explain: in.Explain})
			if err != nil {
				return nil, err
			}
			out := &GetContextOut{Query: in.Query, Mode: resp.Mode, Vectors: resp.Vectors, Notes: []ContextNote{}}
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
					if b, rel, err := ops.ReadFencedNote(fence, vh, res.Path); err == nil && utf8.Valid(b) {
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

// bodyPreview returns the first n characters of a note's body after its frontmatter.
func bodyPreview(vh *ops.VaultHandle, b []byte, rel string, n int) string {
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

func textContext(o any) string {
	out := o.(*GetContextOut)
	if len(out.Notes) == 0 {
		return "no notes matched\n" + out.Hint + "\n"
	}
	var b strings.Builder
	for i, n := range out.Notes {
		fmt.Fprintf(&b, "%d. %s  (%s:%d)", i+1, n.Title, n.Path, n.Line)
		if len(n.HeadingPath) > 0 {
			fmt.Fprintf(&b, "  › %s", strings.Join(n.HeadingPath, " › "))
		}
		b.WriteString("\n")
		if len(n.Tags) > 0 {
			fmt.Fprintf(&b, "   #%s\n", strings.Join(n.Tags, " #"))
		}
		if n.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", n.Snippet)
		}
		if n.Explain != nil {
			fmt.Fprintf(&b, "   %s\n", explainLine(n.Explain))
		}
		if n.Preview != "" {
			fmt.Fprintf(&b, "   ---\n   %s\n", strings.ReplaceAll(n.Preview, "\n", "\n   "))
		}
	}
	return b.String()
}
