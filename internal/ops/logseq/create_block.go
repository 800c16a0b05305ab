package logseq

import (
	"context"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// CreateBlockIn is the input of create_block.
type CreateBlockIn struct {
	BlockAnchor
	Content    string `json:"content" jsonschema:"the block's text without the bullet (several lines allowed; a line starting with - makes a child block)"`
	Properties Props  `json:"properties,omitempty" cli:"property" jsonschema:"block properties (key:: value lines); an id:: uuid is always added so the block can be addressed"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks the anchor and the properties.
func (in *CreateBlockIn) Validate() error {
	if err := in.BlockAnchor.check(); err != nil {
		return err
	}
	if err := noteedit.CheckProps(in.Properties, false); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	if err := checkGuarded(&in.Guard, in.Parent, in.Sibling); err != nil {
		return err
	}
	return in.Check()
}

// CreateBlock is the create_block operation.
func CreateBlock() ops.Def[CreateBlockIn, BlockWriteOut] {
	return ops.Def[CreateBlockIn, BlockWriteOut]{
		Name:  "create_block",
		Title: "Create a Logseq block",
		Description: "Add a block to a Logseq page: at the top level of a page, under a parent block, or before/after a sibling (position first, last, before, after), " +
			"with properties. A page named by a date whose journal does not exist yet is created, as create_page would. Written in the file's own indentation; the block gets an id:: uuid (returned) so it can be addressed later. Preview by default.",
		Annotations: ops.Annotations{},
		CLI:         ops.CLI{Use: "create-block", Text: textBlockWrite, Short: "Add a block to a Logseq page (preview; --apply writes it)"},
		Errors:      logseqErrors,
		Example:     `{"parent": "6745a1b2-0000-4000-8000-000000000001", "position": "last", "content": "A new child block", "properties": {"status": "draft"}}`,
		Toolset:     ops.ToolsetWrites,
		TypeSchemas: typeSchemas(),
		Handler:     createBlock,
	}
}

func createBlock(ctx context.Context, env *ops.Env, in *CreateBlockIn) (*BlockWriteOut, error) {
	vh, rel, err := anchorPage(ctx, env, in.Vault, &in.BlockAnchor)
	if errs.Code(err) == errs.CodeNotFound && in.Page != "" {
		// A journal day nobody wrote yet: the block creates its page.
		vh, rel, err = newJournalPage(ctx, env, in.Vault, in.Page, err)
	}
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	uuid := newUUID()
	return ops.Idempotent(ctx, env, vh, "create_block", in, &in.WriteOpts, func() (*BlockWriteOut, error) {
		line := 0
		res, err := ops.RunWrite(ctx, env, ops.WriteSpec{Op: "create_block", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *ops.Stage) error {
			if f, err := s.Read(rel); err != nil {
				return err
			} else if !f.Exists {
				if want != "" {
					return errs.New(errs.CodeEtagMismatch, "%s does not exist yet, so it has no etag", rel).With("path", rel)
				}
				line = 1
				s.Main = rel
				s.Create(rel, strings.Join(blockLines("", "\t", in.Content, in.Properties, uuid), "\n")+"\n")
				return nil
			}
			f, d, err := readOutline(s, rel, want)
			if err != nil {
				return err
			}
			at, indent, err := anchorAt(d, &in.BlockAnchor)
			if err != nil {
				return err
			}
			if at > 0 && at == len(d.Lines) && len(d.Lines) > 0 && !d.EOL {
				d.EOL = true
			}
			d.Lines = noteedit.Splice(d.Lines, at, at, blockLines(indent, d.unit, in.Content, in.Properties, uuid))
			line = at + 1
			s.Main = rel
			s.Put(f, d.Text())
			return nil
		}})
		if err != nil {
			return nil, err
		}
		return &BlockWriteOut{WriteResult: *res, UUID: uuid, Line: line}, nil
	})
}
