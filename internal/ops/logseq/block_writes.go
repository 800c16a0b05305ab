package logseq

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// BlockAnchor says where a block goes: in a page, under a parent block, or
// beside a sibling.
type BlockAnchor struct {
	Page     string `json:"page,omitempty" jsonschema:"the page (by name) to put the block in, at its top level"`
	Path     string `json:"path,omitempty" jsonschema:"the page file (vault-relative path), instead of page"`
	Parent   string `json:"parent,omitempty" jsonschema:"uuid (or page#path address from get_page) of the block to put it under, as a child"`
	Sibling  string `json:"sibling,omitempty" jsonschema:"uuid (or page#path address from get_page) of the block to put it next to"`
	Position string `json:"position,omitempty" jsonschema:"first or last (default) among the page's or parent's blocks; before or after (default) the sibling"`
}

func (a *BlockAnchor) check() error {
	n := 0
	for _, s := range []string{a.Page + a.Path, a.Parent, a.Sibling} {
		if s != "" {
			n++
		}
	}
	if n != 1 || (a.Page != "" && a.Path != "") {
		return errs.New(errs.CodeInvalidInput, "say where the block goes with exactly one of page (or path), parent or sibling")
	}
	for _, u := range []string{a.Parent, a.Sibling} {
		if u != "" {
			if err := checkUUID(u); err != nil {
				return err
			}
		}
	}
	switch a.Position {
	case "":
		if a.Sibling != "" {
			a.Position = "after"
		} else {
			a.Position = "last"
		}
	case "first", "last":
		if a.Sibling != "" {
			return errs.New(errs.CodeInvalidInput, "with sibling, position is before or after")
		}
	case "before", "after":
		if a.Sibling == "" {
			return errs.New(errs.CodeInvalidInput, "with page or parent, position is first or last")
		}
	default:
		return errs.New(errs.CodeInvalidInput, "position must be first, last, before or after, not %q", a.Position)
	}
	return nil
}

// BlockWriteOut is the output of the block operations.
type BlockWriteOut struct {
	ops.WriteResult
	UUID string `json:"uuid" jsonschema:"the block's uuid or the address it was given by (for create_block: the new block's uuid)"`
	Line int    `json:"line,omitempty" jsonschema:"1-based line of the block in its page after the change"`
}

// logseqErrors are the error codes of the Logseq block writes.
var logseqErrors = ops.WithErrors(errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeNotLogseqGraph, errs.CodeBlockNotFound, errs.CodeInvalidUTF8)

// readOutline reads a page for an edit: its text (refused if its etag is not
// want, when want is set) and its parsed outline.
func readOutline(s *ops.Stage, rel, want string) (*ops.NoteFile, *outlineDoc, error) {
	f, err := s.ReadGuarded(rel, want)
	if err != nil {
		return nil, nil, err
	}
	return f, newOutline(rel, f.Text), nil
}

// blockPage finds the page file holding a block (from the index, or the
// page named by a page#path address).
func blockPage(ctx context.Context, env *ops.Env, vault, uuid string) (*ops.VaultHandle, string, error) {
	if page, _, ok := parseAddress(uuid); ok && isAddress(uuid) {
		if strings.HasSuffix(strings.ToLower(page), ".md") {
			return pageFor(ctx, env, vault, "", page)
		}
		return pageFor(ctx, env, vault, page, "")
	}
	vh, err := logseqVault(ctx, env, vault)
	if err != nil {
		return nil, "", err
	}
	uuid = cleanUUID(uuid)
	noteID, _, err := vh.Index.BlockByUUID(ctx, uuid)
	if err != nil {
		return nil, "", err
	}
	var p string
	if err := vh.Index.DB.QueryRowContext(ctx, "SELECT path FROM notes WHERE id = ?", noteID).Scan(&p); err != nil {
		return nil, "", errs.New(errs.CodeBlockNotFound, "no block has id %s", uuid).With("uuid", uuid)
	}
	w, err := env.Writer(vh)
	if err != nil {
		return nil, "", err
	}
	rel, err := w.Target(p)
	return vh, rel, err
}

// findBlock locates a block (by uuid or page#path address) in a page read
// under its lock.
func findBlock(d *outlineDoc, uuid string) (int, error) {
	if _, path, ok := parseAddress(uuid); ok && isAddress(uuid) {
		if i, ok := d.at(path); ok {
			return i, nil
		}
		return 0, errs.New(errs.CodeBlockNotFound, "no block at %s in %s (the page changed since it was read?); read it again with get_page", uuid, d.Rel).
			With("uuid", uuid).With("path", d.Rel)
	}
	i, ok := d.find(cleanUUID(uuid))
	if !ok {
		return 0, errs.New(errs.CodeBlockNotFound, "block %s is no longer in %s (the page changed since it was indexed); read it again", cleanUUID(uuid), d.Rel).
			With("uuid", cleanUUID(uuid)).With("path", d.Rel)
	}
	return i, nil
}

// anchorPage resolves a block anchor to its page file.
func anchorPage(ctx context.Context, env *ops.Env, vault string, a *BlockAnchor) (*ops.VaultHandle, string, error) {
	switch {
	case a.Parent != "":
		return blockPage(ctx, env, vault, a.Parent)
	case a.Sibling != "":
		return blockPage(ctx, env, vault, a.Sibling)
	}
	return pageFor(ctx, env, vault, a.Page, a.Path)
}

// anchorAt returns where a block goes in d, and its indentation.
func anchorAt(d *outlineDoc, a *BlockAnchor) (int, string, error) {
	return anchorAtLine(d, a, -1)
}

// anchorAtLine is anchorAt with the parent or sibling given by its bullet
// line (0-based) when line >= 0.
func anchorAtLine(d *outlineDoc, a *BlockAnchor, line int) (int, string, error) {
	parent, sibling := -1, -1
	if line >= 0 {
		for i, b := range d.blocks {
			if b.line == line {
				if a.Parent != "" {
					parent = i
				} else {
					sibling = i
				}
				at, indent := d.insertAt(parent, sibling, a.Position)
				return at, indent, nil
			}
		}
		return 0, "", errs.New(errs.CodeBlockNotFound, "the target block is no longer in %s; read it again", d.Rel).With("path", d.Rel)
	}
	switch {
	case a.Parent != "":
		i, err := findBlock(d, a.Parent)
		if err != nil {
			return 0, "", err
		}
		parent = i
	case a.Sibling != "":
		i, err := findBlock(d, a.Sibling)
		if err != nil {
			return 0, "", err
		}
		sibling = i
	}
	at, indent := d.insertAt(parent, sibling, a.Position)
	return at, indent, nil
}

// textBlockWrite is TextWrite with the block's uuid and line.
func textBlockWrite(o any) string {
	var b strings.Builder
	if bo, ok := o.(*BlockWriteOut); ok && bo.UUID != "" {
		fmt.Fprintf(&b, "block %s", bo.UUID)
		if bo.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", bo.Line)
		}
		b.WriteString("\n")
	}
	return ops.TextWriteWith(o, b.String())
}
