package logseq

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// DeleteBlockIn is the input of delete_block.
type DeleteBlockIn struct {
	UUID      string `json:"uuid" jsonschema:"the block's uuid, or its page#path address from get_page (then if_match, the page etag, is required)"`
	Recursive *bool  `json:"recursive,omitempty" jsonschema:"delete the block's children with it (default true); false lifts them up one level into the block's place"`
	ops.Guard
	ops.WriteOpts
}

// recursive reports whether the children go too (the default).
func (in *DeleteBlockIn) recursive() bool { return in.Recursive == nil || *in.Recursive }

// Validate checks the uuid.
func (in *DeleteBlockIn) Validate() error {
	if err := checkUUID(in.UUID); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	if err := checkGuarded(&in.Guard, in.UUID); err != nil {
		return err
	}
	return in.Check()
}

// DeleteBlock is the delete_block operation.
func DeleteBlock() ops.Def[DeleteBlockIn, BlockWriteOut] {
	return ops.Def[DeleteBlockIn, BlockWriteOut]{
		Name:  "delete_block",
		Title: "Delete a Logseq block",
		Description: "Remove a Logseq block and its children from its page, by uuid; with recursive false only the block goes and its children move up one level into its place. " +
			"The result warns about ((references)) to the removed blocks. " +
			"The undo journal keeps the page as it was. Preview by default.",
		Annotations: ops.Annotations{Destructive: true},
		CLI:         ops.CLI{Use: "delete-block", Args: []string{"uuid"}, Text: textBlockWrite, Short: "Remove a Logseq block and its children, or lift them with --recursive=false (preview; --apply does it)"},
		Errors:      logseqErrors,
		Example:     `{"uuid": "6745a1b2-0000-4000-8000-000000000001"}`,
		Toolset:     ops.ToolsetWrites,
		ScopeFor:    deleteBlockScope,
		Handler:     deleteBlock,
	}
}

// deleteBlockScope: deleting a block with its children (a recursive
// delete) is destructive; a leaf block, or a block whose children are kept
// (recursive false), is a write. The handler checks again on the page it
// reads under its lock.
func deleteBlockScope(ctx context.Context, env *ops.Env, in *DeleteBlockIn) auth.Scope {
	vh, rel, err := blockPage(ctx, env, in.Vault, in.UUID)
	if err != nil {
		return "" // the handler answers
	}
	w, err := env.Writer(vh)
	if err != nil {
		return ""
	}
	b, _, exists, err := w.ReadState(rel)
	if err != nil || !exists {
		return ""
	}
	d := newOutline(rel, string(b))
	if i, err := findBlock(d, in.UUID); err == nil && hasChildren(d, i) && in.recursive() {
		return auth.ScopeDestructive
	}
	return ""
}

// hasChildren reports whether block i of d has blocks below it.
func hasChildren(d *outlineDoc, i int) bool {
	return i+1 < len(d.blocks) && d.blocks[i+1].depth > d.blocks[i].depth
}

func deleteBlock(ctx context.Context, env *ops.Env, in *DeleteBlockIn) (*BlockWriteOut, error) {
	vh, rel, err := blockPage(ctx, env, in.Vault, in.UUID)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	uuid := normRef(in.UUID)
	return ops.Idempotent(ctx, env, vh, "delete_block", in, &in.WriteOpts, func() (*BlockWriteOut, error) {
		res, err := ops.RunWrite(ctx, env, ops.WriteSpec{Op: "delete_block", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *ops.Stage) error {
			f, d, err := readOutline(s, rel, want)
			if err != nil {
				return err
			}
			i, err := findBlock(d, uuid)
			if err != nil {
				return err
			}
			b := d.blocks[i]
			if hasChildren(d, i) && in.recursive() {
				if err := ops.RequireScope(ctx, "delete_block", auth.ScopeDestructive); err != nil {
					return err // children were added after the pipeline checked the scope
				}
			}
			last := b.subEnd
			if !in.recursive() {
				last = b.end
			}
			for k := i; k < len(d.blocks) && d.blocks[k].line < last; k++ {
				if u := d.blocks[k].uuid; u != "" {
					if refs, err := vh.Index.BlockRefs(ctx, u); err == nil && len(refs) > 0 {
						refs = ops.Visible(env.ReadFence(ctx, vh), refs, func(r index.BlockRef) string { return r.Path })
						var at []string
						for _, r := range refs {
							at = append(at, fmt.Sprintf("%s:%d", r.Path, r.Line))
						}
						s.Warnings = append(s.Warnings, fmt.Sprintf("block %s is referenced by ((%s)) at %s; those references will be broken", u, u, strings.Join(at, ", ")))
					}
				}
			}
			var lifted []string
			if !in.recursive() {
				// The children take the block's place, one level up: each
				// direct child's subtree re-indented to the block's indentation.
				for _, c := range d.children(i) {
					lifted = append(lifted, d.subtree(c, b.indent, d.unit)...)
				}
			}
			d.Lines = noteedit.Splice(d.Lines, b.line, b.subEnd, lifted)
			s.Main = rel
			s.Put(f, d.Text())
			return nil
		}})
		if err != nil {
			return nil, err
		}
		return &BlockWriteOut{WriteResult: *res, UUID: uuid}, nil
	})
}
