package logseq

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/ops"
)

// GetPageIn is the input of get_page.
type GetPageIn struct {
	Name  string `json:"name,omitempty" jsonschema:"the page name (case-insensitive; aliases, namespaces like a/b and journal dates like 2026-11-20 work too)"`
	Path  string `json:"path,omitempty" jsonschema:"vault-relative path of the page file, instead of name"`
	Depth int    `json:"depth,omitempty" jsonschema:"levels of blocks to return: 1 = top-level blocks only (default: all levels)"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`

	// RenderQueries runs the queries the page embeds (docs/query.md).
	RenderQueries bool `json:"render_queries,omitempty" jsonschema:"also run the queries the page's blocks embed ({{query ...}}, #+BEGIN_QUERY, dataview code blocks) and return their answers in queries; the blocks are unchanged"`
}

// Validate checks that one page is named.
func (in *GetPageIn) Validate() error {
	switch {
	case strings.TrimSpace(in.Name) == "" && in.Path == "":
		return errs.New(errs.CodeInvalidInput, "pass name (the page name) or path")
	case in.Name != "" && in.Path != "":
		return errs.New(errs.CodeInvalidInput, "pass either name or path, not both")
	}
	return checkDepth(in.Depth)
}

// GetPageOut is the output of get_page.
type GetPageOut struct {
	Name       string         `json:"name" jsonschema:"the page name"`
	Path       string         `json:"path" jsonschema:"vault-relative path of the page file"`
	Kind       string         `json:"kind" jsonschema:"page or journal"`
	Etag       string         `json:"etag" jsonschema:"etag of the page file: pass it as if_match when editing a block by its page#path address"`
	Match      string         `json:"match,omitempty" jsonschema:"how name was resolved: path, filename, alias or title"`
	Aliases    []string       `json:"aliases,omitempty" jsonschema:"alias:: names of the page"`
	Tags       []string       `json:"tags,omitempty" jsonschema:"tags of the page (tags:: and inline #tags)"`
	Properties map[string]any `json:"properties,omitempty" jsonschema:"page properties (the key:: value lines before the first block)"`
	Blocks     []BlockNode    `json:"blocks" jsonschema:"the block tree, in page order"`
	BlockCount int            `json:"block_count" jsonschema:"number of blocks in the whole page"`

	// Queries are the embedded queries' answers (render_queries).
	Queries []ops.EmbeddedQuery `json:"queries,omitempty" jsonschema:"with render_queries: the page's queries in page order, each with its line, its block's uuid when it has one, and its result or its error (absent when there are none)"`
}

// GetPage is the get_page operation.
func GetPage() ops.Def[GetPageIn, GetPageOut] {
	return ops.Def[GetPageIn, GetPageOut]{
		Name:  "get_page",
		Title: "Get a Logseq page",
		Description: "A Logseq page as a block tree: page properties, aliases, tags and nested blocks, each with its uuid (if any), its address for the block tools (the uuid, else page#path), content, properties and line. " +
			"Find the page by name (case-insensitive; aliases, namespaces like a/b, journal dates like 2026-11-20) or by path; limit nesting with depth. " +
			"With render_queries, the queries the page embeds ({{query ...}}, #+BEGIN_QUERY, ```dataview) are run under the same read rules and returned in queries; a failing query gives an error entry, never a failed read.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "page", Args: []string{"name"}, Text: textPage},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeNotLogseqGraph, errs.CodeVaultNotFound},
		Example:     `{"name": "Loci", "depth": 2}`,
		TypeSchemas: typeSchemas(),
		Handler: func(ctx context.Context, env *ops.Env, in *GetPageIn) (*GetPageOut, error) {
			vh, err := logseqVault(ctx, env, in.Vault)
			if err != nil {
				return nil, err
			}
			n, match, err := findPage(ctx, vh, in.Name, in.Path)
			if err != nil {
				return nil, err
			}
			blocks, err := vh.Index.BlocksOf(ctx, n.ID)
			if err != nil {
				return nil, err
			}
			out := &GetPageOut{Name: n.Title, Path: n.Path, Etag: n.Etag, Kind: n.Kind, Match: match, Aliases: n.Aliases, Tags: n.Tags, Properties: n.Frontmatter, BlockCount: len(blocks)}
			out.Blocks = blockTree(blocks, -1, in.Depth, n.Title)
			if in.RenderQueries {
				if out.Queries, err = pageQueries(ctx, env, vh, n.Path); err != nil {
					return nil, err
				}
			}
			return out, nil
		},
	}
}

// pageQueries runs the queries embedded in a page, read from its file
// (the truth; its blocks give the uuids).
func pageQueries(ctx context.Context, env *ops.Env, vh *ops.VaultHandle, rel string) ([]ops.EmbeddedQuery, error) {
	b, rel, err := env.ReadNote(ctx, vh, rel)
	if err != nil {
		return nil, err
	}
	outline, journal := vh.Vault.LogseqFile(rel)
	doc := markdown.Parse(b, markdown.Options{Path: rel, Logseq: outline, Journal: journal})
	return ops.RunEmbeddedQueries(ctx, env, vh, string(b), 1, 0, ops.BlockAt(len(doc.Blocks), func(i int) (int, int, string) {
		return doc.Blocks[i].Line, doc.Blocks[i].EndLine, doc.Blocks[i].UUID
	})), nil
}

func textPage(o any) string {
	out := o.(*GetPageOut)
	var b strings.Builder
	fmt.Fprintf(&b, "%s  (%s, %d blocks, etag %s)\n", out.Name, out.Path, out.BlockCount, out.Etag)
	writeBlocks(&b, out.Blocks, 0)
	b.WriteString(ops.EmbeddedQueriesText(out.Queries))
	return b.String()
}
