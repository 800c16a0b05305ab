package logseq

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// ListPagesIn is the input of list_pages.
type ListPagesIn struct {
	IncludeJournals bool   `json:"include_journals,omitempty" jsonschema:"also list journal pages, newest first after the pages (default false)"`
	Namespace       string `json:"namespace,omitempty" jsonschema:"only pages in this namespace: the page itself and pages named namespace/... (case-insensitive)"`
	Limit           int    `json:"limit,omitempty" jsonschema:"pages per call, 1-1000 (default 100)"`
	Cursor          string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault           string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the limit.
func (in *ListPagesIn) Validate() error { return ops.CheckLimit(in.Limit, 1000) }

// ListPagesOut is the output of list_pages.
type ListPagesOut struct {
	Pages      []index.PageInfo `json:"pages" jsonschema:"pages by name, then journals newest first"`
	Total      int              `json:"total" jsonschema:"number of pages matching, over all calls"`
	NextCursor string           `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get the next pages"`
}

// ListPages is the list_pages operation.
func ListPages() ops.Def[ListPagesIn, ListPagesOut] {
	return ops.Def[ListPagesIn, ListPagesOut]{
		Name:  "list_pages",
		Title: "List Logseq pages",
		Description: "List the pages of the Logseq graph(s) in the vault, by name, with aliases and block counts; journals only with include_journals (newest first). " +
			"Filter by namespace (a/b pages); paginate with next_cursor. Fails with not_logseq_graph when the vault has no Logseq pages.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "pages", Text: textPages},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeNotLogseqGraph, errs.CodeVaultNotFound},
		Example:     `{"namespace": "graph", "limit": 50}`,
		Handler: func(ctx context.Context, env *ops.Env, in *ListPagesIn) (*ListPagesOut, error) {
			vh, err := logseqVault(ctx, env, in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := ops.DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			pages, err := vh.Index.Pages(ctx, in.IncludeJournals, in.Namespace)
			if err != nil {
				return nil, err
			}
			if pages, err = ops.VisibleByID(ctx, env.ReadFence(ctx, vh), vh, pages, func(p index.PageInfo) int64 { return p.ID }); err != nil {
				return nil, err
			}
			out := &ListPagesOut{Total: len(pages)}
			out.Pages, out.NextCursor = ops.Page(pages, off, ops.OrDefault(in.Limit, 100))
			return out, nil
		},
	}
}

func textPages(o any) string {
	out := o.(*ListPagesOut)
	var b strings.Builder
	for _, p := range out.Pages {
		fmt.Fprintf(&b, "%-40s  %4d blocks  %s\n", p.Name, p.Blocks, p.Path)
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}
