package aiops

import (
	"context"
	"fmt"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// AIApply are the inputs of AI operations that can write their result.
type AIApply struct {
	Apply bool `json:"apply,omitempty" jsonschema:"write the result into the notes through the safe-write pipeline (needs writes enabled); false (default) only proposes, with a preview diff"`
}

// writes reports whether the call writes its result (ai_extract and
// ai_toc write only to a destination; see their own writes).
func (a *AIApply) writes() bool { return a.Apply }

// aiPatch runs edit patches on one note through the write pipeline: the
// note must still be the version the model read (etag), the change is
// previewed unless apply, and an applied change is journaled for undo.
func (c *aiCall) aiPatch(ctx context.Context, rel, etag string, patches []noteedit.Patch, apply bool) (*ops.WriteResult, error) {
	if apply {
		if err := c.requireWrites(); err != nil {
			return nil, err
		}
	}
	opts := &ops.WriteOpts{Apply: apply, Vault: c.vh.Name}
	res, err := ops.RunWrite(ctx, c.env, ops.WriteSpec{Op: c.op, Vault: c.vh, Opts: opts, Propose: true, Locks: []string{rel}, GuardPath: rel, GuardEtag: etag, Build: func(s *ops.Stage) error {
		f, err := s.ReadText(rel)
		if err != nil {
			return err
		}
		if err := ops.CheckGuard(f, etag); err != nil {
			return err
		}
		// As edit_note: a Logseq page without frontmatter gets key:: value
		// properties instead.
		outline, _ := c.vh.Vault.LogseqFile(rel)
		d := noteedit.NewDoc(rel, f.Text, outline)
		for i := range patches {
			if err := patches[i].Check(i); err != nil {
				return err
			}
			if _, err := d.Apply(i, &patches[i]); err != nil {
				return err
			}
		}
		s.Main = rel
		s.Put(f, d.Text())
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

// patchEach is aiPatch for one note of several: a note whose change
// cannot be written (or previewed) gets the warning apply_failed with the
// error's code and a nil result, and the call goes on with the next note.
// Ending the call there would drop the results of the notes already
// written: their undo ids, and the idempotency record of a keyed call.
func (c *aiCall) patchEach(ctx context.Context, rel, etag string, patches []noteedit.Patch, apply bool) *ops.WriteResult {
	err := ctx.Err()
	if err == nil {
		var res *ops.WriteResult
		if res, err = c.aiPatch(ctx, rel, etag, patches, apply); err == nil {
			return res
		}
	} else {
		err = errs.Wrap(err, "cancelled", "the call was cancelled before this note was written")
	}
	what := "written"
	if !apply {
		what = "previewed"
	}
	c.meta.Warnings = append(c.meta.Warnings, AIWarning{Code: "apply_failed", Path: rel, ErrorCode: errs.Code(err),
		Message: fmt.Sprintf("the change of %s could not be %s (%s): %v; the other notes are not affected", rel, what, errs.Code(err), err)})
	return nil
}

// aiCreate writes a whole note (ai_toc's map of content): created when
// free, replaced only with if_match.
func (c *aiCall) aiCreate(ctx context.Context, rel, ifMatch, text string, apply bool) (*ops.WriteResult, error) {
	if apply {
		if err := c.requireWrites(); err != nil {
			return nil, err
		}
	}
	opts := &ops.WriteOpts{Apply: apply, Vault: c.vh.Name}
	res, err := ops.RunWrite(ctx, c.env, ops.WriteSpec{Op: c.op, Vault: c.vh, Opts: opts, Propose: true, Locks: []string{rel}, Build: func(s *ops.Stage) error {
		f, err := s.Read(rel)
		if err != nil {
			return err
		}
		s.Main = f.Rel
		if f.Exists {
			if ifMatch == "" {
				return errs.New(errs.CodeConflict, "%s exists; pass if_match with its etag (%s) to replace it", f.Rel, f.Etag).With("path", f.Rel).With("current_etag", f.Etag)
			}
			if err := ops.CheckGuard(f, ifMatch); err != nil {
				return err
			}
			s.Put(f, text)
			return nil
		}
		s.Create(f.Rel, text)
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
