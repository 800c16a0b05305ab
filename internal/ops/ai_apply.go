package ops

import (
	"context"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
)

// AIApply are the inputs of AI operations that can write their result.
type AIApply struct {
	Apply bool `json:"apply,omitempty" jsonschema:"write the result into the notes through the safe-write pipeline (needs writes enabled); false (default) only proposes, with a preview diff"`
}

// aiPatch runs edit patches on one note through the write pipeline: the
// note must still be the version the model read (etag), the change is
// previewed unless apply, and an applied change is journaled for undo.
func (c *aiCall) aiPatch(ctx context.Context, rel, etag string, patches []noteedit.Patch, apply bool) (*WriteResult, error) {
	if apply {
		if err := c.requireWrites(); err != nil {
			return nil, err
		}
	}
	opts := &WriteOpts{Apply: apply, Vault: c.vh.Name}
	res, err := runWrite(ctx, c.env, writeSpec{op: c.op, vh: c.vh, opts: opts, propose: true, locks: []string{rel}, guardPath: rel, guardEtag: etag, build: func(s *stage) error {
		f, err := s.readText(rel)
		if err != nil {
			return err
		}
		if err := checkGuard(f, etag); err != nil {
			return err
		}
		// As edit_note: a Logseq page without frontmatter gets key:: value
		// properties instead.
		outline, _ := c.vh.Vault.LogseqFile(rel)
		d := noteedit.NewDoc(rel, f.text, outline)
		for i := range patches {
			if err := patches[i].Check(i); err != nil {
				return err
			}
			if _, err := d.Apply(i, &patches[i]); err != nil {
				return err
			}
		}
		s.main = rel
		s.put(f, d.Text())
		return nil
	}})
	if err != nil {
		return nil, err
	}
	if res.Applied && res.Action != "none" {
		c.applied = append(c.applied, rel)
	}
	return res, nil
}

// aiCreate writes a whole note (ai_toc's map of content): created when
// free, replaced only with if_match.
func (c *aiCall) aiCreate(ctx context.Context, rel, ifMatch, text string, apply bool) (*WriteResult, error) {
	if apply {
		if err := c.requireWrites(); err != nil {
			return nil, err
		}
	}
	opts := &WriteOpts{Apply: apply, Vault: c.vh.Name}
	res, err := runWrite(ctx, c.env, writeSpec{op: c.op, vh: c.vh, opts: opts, propose: true, locks: []string{rel}, build: func(s *stage) error {
		f, err := s.read(rel)
		if err != nil {
			return err
		}
		s.main = f.rel
		if f.exists {
			if ifMatch == "" {
				return errs.New(errs.CodeConflict, "%s exists; pass if_match with its etag (%s) to replace it", f.rel, f.etag).With("path", f.rel).With("current_etag", f.etag)
			}
			if err := checkGuard(f, ifMatch); err != nil {
				return err
			}
			s.put(f, text)
			return nil
		}
		s.create(f.rel, text)
		return nil
	}})
	if err != nil {
		return nil, err
	}
	if res.Applied && res.Action != "none" {
		c.applied = append(c.applied, res.Path)
	}
	return res, nil
}
