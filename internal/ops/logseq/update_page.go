package logseq

import (
	"context"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// UpdatePageIn is the input of update_page.
type UpdatePageIn struct {
	Name       string   `json:"name,omitempty" jsonschema:"the page name (case-insensitive; aliases and journal dates like 2026-11-20 work too)"`
	Path       string   `json:"path,omitempty" jsonschema:"vault-relative path of the page file, instead of name"`
	Append     []string `json:"append,omitempty" cli:"append" jsonschema:"top-level blocks to add at the end of the page: each one's text without the bullet"`
	Properties Props    `json:"properties,omitempty" cli:"property" jsonschema:"page properties to set; an empty value removes the property"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks that there is a page and a change.
func (in *UpdatePageIn) Validate() error {
	if err := onePage(in.Name, in.Path); err != nil {
		return err
	}
	if len(in.Append) == 0 && len(in.Properties) == 0 {
		return errs.New(errs.CodeInvalidInput, "nothing to change: pass append and/or properties")
	}
	if err := noteedit.CheckProps(in.Properties, false); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// UpdatePage is the update_page operation.
func UpdatePage() ops.Def[UpdatePageIn, ops.WriteResult] {
	return ops.Def[UpdatePageIn, ops.WriteResult]{
		Name:  "update_page",
		Title: "Update a Logseq page",
		Description: "Append top-level blocks to a Logseq page and/or set or remove its page properties (key:: value lines; an empty value removes one). " +
			"The rest of the file keeps its bytes. Preview by default.",
		Annotations: ops.Annotations{Destructive: true},
		CLI:         ops.CLI{Use: "update-page", Args: []string{"name"}, Text: ops.TextWrite, Short: "Append blocks to a Logseq page or set its properties (preview; --apply writes it)"},
		Errors:      logseqErrors,
		Example:     `{"name": "Loci", "append": ["Tried the write operations"], "properties": {"status": "active"}}`,
		Toolset:     ops.ToolsetWrites,
		TypeSchemas: typeSchemas(),
		Handler:     updatePage,
	}
}

func updatePage(ctx context.Context, env *ops.Env, in *UpdatePageIn) (*ops.WriteResult, error) {
	vh, rel, err := pageFor(ctx, env, in.Vault, in.Name, in.Path)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	return ops.Idempotent(ctx, env, vh, "update_page", in, &in.WriteOpts, func() (*ops.WriteResult, error) {
		return ops.RunWrite(ctx, env, ops.WriteSpec{Op: "update_page", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *ops.Stage) error {
			f, d, err := readOutline(s, rel, want)
			if err != nil {
				return err
			}
			keys := make([]string, 0, len(in.Properties))
			for k := range in.Properties {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				v := in.Properties[k]
				switch {
				case noteedit.HasFrontmatter(d.Lines) && v == "":
					if d.Lines, _, err = noteedit.DeleteKey(d.Lines, rel, k); err != nil {
						return err
					}
				case noteedit.HasFrontmatter(d.Lines):
					if d.Lines, err = noteedit.SetKey(d.Lines, rel, k, v); err != nil {
						return err
					}
				case v == "":
					d.Lines = noteedit.DeleteProperty(d.Lines, k)
				default:
					if err := d.SetProperty(k, v); err != nil {
						return err
					}
				}
			}
			if len(in.Append) > 0 {
				d.reparse()
				at, indent := d.insertAt(-1, -1, "last")
				var add []string
				for _, b := range in.Append {
					add = append(add, blockLines(indent, d.unit, b, nil, "")...)
				}
				// A page holding only the empty placeholder block gets it replaced.
				if kids := d.children(-1); len(kids) == 1 && strings.TrimSpace(strings.TrimLeft(d.Lines[d.blocks[kids[0]].line], " \t-")) == "" &&
					d.blocks[kids[0]].subEnd == d.blocks[kids[0]].line+1 {
					d.Lines = noteedit.Splice(d.Lines, d.blocks[kids[0]].line, at, add)
				} else {
					d.Lines = noteedit.Splice(d.Lines, at, at, add)
				}
			}
			if len(d.Lines) > 0 {
				d.EOL = d.EOL || f.Text == ""
			}
			s.Main = rel
			s.Put(f, d.Text())
			return nil
		}})
	})
}
