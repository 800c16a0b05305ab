package logseq

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// GetBlockIn is the input of get_block.
type GetBlockIn struct {
	UUID  string `json:"uuid" jsonschema:"the block uuid (its id:: property), with or without (( )), or its page#path address from get_page"`
	Depth int    `json:"depth,omitempty" jsonschema:"levels of children to return: 1 = direct children only (default: all levels)"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the uuid's shape.
func (in *GetBlockIn) Validate() error {
	if err := checkUUID(in.UUID); err != nil {
		return err
	}
	return checkDepth(in.Depth)
}

// BlockParent is an ancestor of a block.
type BlockParent struct {
	UUID    string `json:"uuid,omitempty" jsonschema:"the ancestor's uuid, if it has one"`
	Content string `json:"content" jsonschema:"the first 120 characters of the ancestor's text"`
	Line    int    `json:"line" jsonschema:"1-based line of the ancestor"`
}

// GetBlockOut is the output of get_block.
type GetBlockOut struct {
	UUID         string            `json:"uuid,omitempty" jsonschema:"the block uuid, when it has one"`
	Address      string            `json:"address" jsonschema:"the block's address for the block tools: its uuid, else page#path"`
	Page         string            `json:"page" jsonschema:"vault-relative path of the page holding the block"`
	PageName     string            `json:"page_name" jsonschema:"name of that page"`
	Content      string            `json:"content" jsonschema:"the block text"`
	Properties   map[string]string `json:"properties,omitempty" jsonschema:"the block's properties (id excluded)"`
	Line         int               `json:"line" jsonschema:"1-based line of the block's bullet"`
	EndLine      int               `json:"end_line" jsonschema:"last line of the block itself (children excluded)"`
	Parents      []BlockParent     `json:"parents" jsonschema:"ancestors from the top-level block down to the direct parent"`
	Children     []BlockNode       `json:"children" jsonschema:"child blocks, nested"`
	ReferencedBy []index.BlockRef  `json:"referenced_by" jsonschema:"notes that reference this block with ((uuid))"`
}

// GetBlock is the get_block operation.
func GetBlock() ops.Def[GetBlockIn, GetBlockOut] {
	return ops.Def[GetBlockIn, GetBlockOut]{
		Name:  "get_block",
		Title: "Get a Logseq block",
		Description: "A Logseq block by uuid (its id:: property): its text, properties and line, the page holding it, its parent chain (top-level block first) " +
			"and its nested children (limit with depth), plus the notes that reference it with ((uuid)).",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "block", Args: []string{"uuid"}, Text: textBlock},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeBlockNotFound, errs.CodeNotLogseqGraph, errs.CodeVaultNotFound},
		Example:     `{"uuid": "6745a1b2-0000-4000-8000-000000000001", "depth": 1}`,
		TypeSchemas: typeSchemas(),
		Handler: func(ctx context.Context, env *ops.Env, in *GetBlockIn) (*GetBlockOut, error) {
			vh, err := logseqVault(ctx, env, in.Vault)
			if err != nil {
				return nil, err
			}
			uuid := cleanUUID(in.UUID)
			var noteID int64
			var seq int
			var blocks []index.BlockRow
			if pg, path, ok := parseAddress(in.UUID); ok && isAddress(in.UUID) {
				uuid = strings.TrimSpace(in.UUID)
				name, p := pg, ""
				if strings.HasSuffix(strings.ToLower(pg), ".md") {
					name, p = "", pg
				}
				n, _, err := findPage(ctx, vh, name, p)
				if err != nil {
					return nil, err
				}
				if blocks, err = vh.Index.BlocksOf(ctx, n.ID); err != nil {
					return nil, err
				}
				noteID = n.ID
				if seq, ok = seqAt(blocks, path); !ok {
					return nil, errs.New(errs.CodeBlockNotFound, "no block at %s in %s; read the page again with get_page", uuid, n.Path).With("uuid", uuid)
				}
			} else {
				if noteID, seq, err = vh.Index.BlockByUUID(ctx, uuid); err != nil {
					return nil, err
				}
				if blocks, err = vh.Index.BlocksOf(ctx, noteID); err != nil {
					return nil, err
				}
			}
			bySeq := map[int]index.BlockRow{}
			for _, b := range blocks {
				bySeq[b.Seq] = b
			}
			b, ok := bySeq[seq]
			if !ok {
				return nil, errs.New(errs.CodeBlockNotFound, "no block has id %s", uuid).With("uuid", uuid)
			}
			var pagePath, pageName string
			fence := env.ReadFence(ctx, vh)
			if err := vh.Index.DB.QueryRowContext(ctx, "SELECT path, title FROM notes WHERE id = ?", noteID).Scan(&pagePath, &pageName); err != nil || !fence.Allows(pagePath) {
				// A block of a fenced page is not there.
				return nil, errs.New(errs.CodeBlockNotFound, "no block has id %s", uuid).With("uuid", uuid)
			}
			out := &GetBlockOut{UUID: b.UUID, Address: blockAddress(pageName, b.UUID, blockPaths(blocks)[b.Seq]), Page: pagePath, PageName: pageName, Content: b.Content, Properties: blockProps(b), Line: b.Line, EndLine: b.EndLine, Parents: []BlockParent{}}
			for p, hops := b.ParentSeq, 0; p >= 0 && hops < len(blocks); hops++ {
				pb, ok := bySeq[p]
				if !ok {
					break
				}
				out.Parents = append([]BlockParent{{UUID: pb.UUID, Content: preview(pb.Content, 120), Line: pb.Line}}, out.Parents...)
				p = pb.ParentSeq
			}
			out.Children = blockTree(blocks, b.Seq, in.Depth, pageName)
			out.ReferencedBy = []index.BlockRef{}
			if b.UUID != "" {
				if out.ReferencedBy, err = vh.Index.BlockRefs(ctx, b.UUID); err != nil {
					return nil, err
				}
			}
			out.ReferencedBy = ops.Visible(fence, out.ReferencedBy, func(r index.BlockRef) string { return r.Path })
			return out, nil
		},
	}
}

func textBlock(o any) string {
	out := o.(*GetBlockOut)
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d  (%s)\n", out.Page, out.Line, out.PageName)
	for i, p := range out.Parents {
		fmt.Fprintf(&b, "%s- %s\n", strings.Repeat("  ", i), p.Content)
	}
	writeBlocks(&b, []BlockNode{{BlockInfo: BlockInfo{UUID: out.UUID, Address: out.Address, Content: out.Content}, Children: out.Children}}, len(out.Parents))
	if len(out.ReferencedBy) > 0 {
		b.WriteString("referenced by:\n")
		for _, r := range out.ReferencedBy {
			fmt.Fprintf(&b, "  %s:%d\n", r.Path, r.Line)
		}
	}
	return b.String()
}
