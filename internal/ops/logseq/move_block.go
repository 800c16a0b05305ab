package logseq

import (
	"context"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// MoveBlockIn is the input of move_block.
type MoveBlockIn struct {
	UUID string `json:"uuid" jsonschema:"the block to move (with its children), by uuid or page#path address from get_page (then if_match, the page etag, is required); every id:: stays"`
	BlockAnchor
	ops.Guard
	ops.WriteOpts
}

// Validate checks the uuid and the anchor.
func (in *MoveBlockIn) Validate() error {
	if err := checkUUID(in.UUID); err != nil {
		return err
	}
	if err := in.BlockAnchor.check(); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	if err := checkGuarded(&in.Guard, in.UUID, in.Parent, in.Sibling); err != nil {
		return err
	}
	return in.Check()
}

// MoveBlock is the move_block operation.
func MoveBlock() ops.Def[MoveBlockIn, BlockWriteOut] {
	return ops.Def[MoveBlockIn, BlockWriteOut]{
		Name:  "move_block",
		Title: "Move a Logseq block",
		Description: "Move a Logseq block with its children: into a page, under a parent block, or next to a sibling, in the same page or another one. " +
			"Lines are re-indented to the target's style; every id:: uuid stays, so ((references)) keep working. Both pages change as one undoable unit. Preview by default.",
		Annotations: ops.Annotations{Destructive: true},
		CLI:         ops.CLI{Use: "move-block", Args: []string{"uuid"}, Text: textBlockWrite, Short: "Move a Logseq block with its children (preview; --apply does it)"},
		Errors:      logseqErrors,
		Example:     `{"uuid": "6745a1b2-0000-4000-8000-000000000001", "page": "graph/design", "position": "first"}`,
		Toolset:     ops.ToolsetWrites,
		Handler:     moveBlock,
	}
}

func moveBlock(ctx context.Context, env *ops.Env, in *MoveBlockIn) (*BlockWriteOut, error) {
	_, dst, err := anchorPage(ctx, env, in.Vault, &in.BlockAnchor)
	if err != nil {
		return nil, err
	}
	vh, src, err := blockPage(ctx, env, in.Vault, in.UUID)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	uuid := normRef(in.UUID)
	return ops.Idempotent(ctx, env, vh, "move_block", in, &in.WriteOpts, func() (*BlockWriteOut, error) {
		line := 0
		res, err := ops.RunWrite(ctx, env, ops.WriteSpec{Op: "move_block", Vault: vh, Opts: &in.WriteOpts, Locks: []string{src, dst}, GuardPath: src, GuardEtag: want, Build: func(s *ops.Stage) error {
			sf, err := s.ReadText(src)
			if err != nil {
				return err
			}
			if err := ops.CheckGuard(sf, want); err != nil {
				return err
			}
			sd := newOutline(src, sf.Text)
			i, err := findBlock(sd, uuid)
			if err != nil {
				return err
			}
			b := sd.blocks[i]
			inside := map[string]bool{}
			for k := i; k < len(sd.blocks) && sd.blocks[k].line < b.subEnd; k++ {
				if u := sd.blocks[k].uuid; u != "" {
					inside[u] = true
				}
			}
			// An address anchor names a block of the page as read: find it
			// before the cut (its bullet line, shifted by the cut after it).
			anchorLine := -1
			for _, u := range []string{in.Parent, in.Sibling} {
				if u == "" {
					continue
				}
				if isAddress(u) {
					if src != dst {
						return errs.New(errs.CodeInvalidInput, "address the target block on another page by its uuid, not %s (if_match guards the moved block's page only)", u).With("uuid", u)
					}
					j, err := findBlock(sd, u)
					if err != nil {
						return err
					}
					if j >= i && sd.blocks[j].line < b.subEnd {
						return errs.New(errs.CodeConflict, "block %s cannot move next to or under itself or one of its children", uuid).With("uuid", uuid)
					}
					anchorLine = sd.blocks[j].line
					if anchorLine >= b.subEnd {
						anchorLine -= b.subEnd - b.line
					}
				} else if inside[strings.ToLower(cleanUUID(u))] && src == dst {
					return errs.New(errs.CodeConflict, "block %s cannot move next to or under itself or one of its children", uuid).With("uuid", uuid)
				}
			}
			// Cut the subtree, then place it in the target (re-parsed after the cut).
			rest := newOutline(src, sf.Text)
			rest.Lines = noteedit.Splice(rest.Lines, b.line, b.subEnd, nil)
			rest.reparse()
			td, tf := rest, sf
			if dst != src {
				if tf, err = s.ReadText(dst); err != nil {
					return err
				}
				td = newOutline(dst, tf.Text)
			}
			at, indent, err := anchorAtLine(td, &in.BlockAnchor, anchorLine)
			if err != nil {
				return err
			}
			if at == len(td.Lines) && len(td.Lines) > 0 {
				td.EOL = true
			}
			td.Lines = noteedit.Splice(td.Lines, at, at, sd.subtree(i, indent, td.unit))
			line = at + 1
			s.Main = src
			if dst != src {
				s.Put(sf, rest.Text())
				s.Put(tf, td.Text())
				s.Main = dst
			} else {
				s.Put(sf, td.Text())
			}
			return nil
		}})
		if err != nil {
			return nil, err
		}
		return &BlockWriteOut{WriteResult: *res, UUID: uuid, Line: line}, nil
	})
}
