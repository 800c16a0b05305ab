package logseq

import (
	"context"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// UpdateBlockIn is the input of update_block.
type UpdateBlockIn struct {
	UUID             string   `json:"uuid" jsonschema:"the block's uuid (its id:: property), or its page#path address from get_page (then if_match, the page etag, is required)"`
	Content          string   `json:"content,omitempty" jsonschema:"the block's new text without the bullet (default: keep it); its properties and children stay; a line starting with - adds a child block"`
	Properties       Props    `json:"properties,omitempty" cli:"property" jsonschema:"properties to set; an empty value removes one (id:: cannot be changed)"`
	RemoveProperties []string `json:"remove_properties,omitempty" cli:"remove-property" jsonschema:"properties to remove"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks the uuid and that something changes.
func (in *UpdateBlockIn) Validate() error {
	if err := checkUUID(in.UUID); err != nil {
		return err
	}
	if in.Content == "" && len(in.Properties) == 0 && len(in.RemoveProperties) == 0 {
		return errs.New(errs.CodeInvalidInput, "nothing to change: pass content, properties or remove_properties")
	}
	if err := noteedit.CheckProps(in.Properties, false); err != nil {
		return err
	}
	for _, k := range in.RemoveProperties {
		if err := noteedit.CheckProps(map[string]string{k: ""}, false); err != nil {
			return err
		}
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	if err := checkGuarded(&in.Guard, in.UUID); err != nil {
		return err
	}
	return in.Check()
}

// UpdateBlock is the update_block operation.
func UpdateBlock() ops.Def[UpdateBlockIn, BlockWriteOut] {
	return ops.Def[UpdateBlockIn, BlockWriteOut]{
		Name:  "update_block",
		Title: "Update a Logseq block",
		Description: "Change a Logseq block's text and/or properties, by uuid. Its children, its other properties and its id:: stay as they are. " +
			"if_match is the etag of the page file. Preview by default.",
		Annotations: ops.Annotations{Destructive: true},
		CLI:         ops.CLI{Use: "update-block", Args: []string{"uuid"}, Text: textBlockWrite, Short: "Change a Logseq block's text or properties (preview; --apply writes it)"},
		Errors:      logseqErrors,
		Example:     `{"uuid": "6745a1b2-0000-4000-8000-000000000001", "properties": {"status": "done"}}`,
		Toolset:     ops.ToolsetWrites,
		TypeSchemas: typeSchemas(),
		Handler:     updateBlock,
	}
}

func updateBlock(ctx context.Context, env *ops.Env, in *UpdateBlockIn) (*BlockWriteOut, error) {
	vh, rel, err := blockPage(ctx, env, in.Vault, in.UUID)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	uuid := normRef(in.UUID)
	return ops.Idempotent(ctx, env, vh, "update_block", in, &in.WriteOpts, func() (*BlockWriteOut, error) {
		line := 0
		res, err := ops.RunWrite(ctx, env, ops.WriteSpec{Op: "update_block", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *ops.Stage) error {
			f, d, err := readOutline(s, rel, want)
			if err != nil {
				return err
			}
			i, err := findBlock(d, uuid)
			if err != nil {
				return err
			}
			b := d.blocks[i]
			d.Lines = noteedit.Splice(d.Lines, b.line, b.end, rewriteBlock(d.Lines[b.line:b.end], b.indent, d.unit, in))
			line = b.line + 1
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

// rewriteBlock returns a block's own lines with new text and/or properties.
// Lines that do not change keep their bytes; id:: is never touched.
func rewriteBlock(own []string, indent, unit string, in *UpdateBlockIn) []string {
	first := own[0]
	afterBullet := strings.TrimPrefix(strings.TrimPrefix(first[len(indent):], "-"), " ")
	type prop struct {
		key, line string
	}
	var props []prop
	k := 1
	firstIsProp := false
	if key, _, ok := noteedit.PropLine(afterBullet); ok {
		firstIsProp = true
		props = append(props, prop{key, indent + "  " + strings.TrimLeft(afterBullet, " \t")})
	}
	for ; k < len(own); k++ {
		key, _, ok := noteedit.PropLine(own[k])
		if !ok {
			break
		}
		props = append(props, prop{key, own[k]})
	}
	body := own[k:]
	// Properties: set in place, add new ones sorted, drop removed ones.
	remove := map[string]bool{}
	for _, r := range in.RemoveProperties {
		remove[strings.ToLower(r)] = true
	}
	var newKeys []string
	for key, v := range in.Properties {
		if v == "" {
			remove[strings.ToLower(key)] = true
			continue
		}
		found := false
		for j := range props {
			if strings.EqualFold(props[j].key, key) {
				props[j].line = indent + "  " + props[j].key + ":: " + v
				found = true
			}
		}
		if !found {
			newKeys = append(newKeys, key)
		}
	}
	sort.Strings(newKeys)
	var kept []string
	for _, p := range props {
		if remove[strings.ToLower(p.key)] && !strings.EqualFold(p.key, "id") {
			continue
		}
		kept = append(kept, p.line)
	}
	// New properties go before id:: (Logseq's order).
	var added []string
	for _, key := range newKeys {
		added = append(added, indent+"  "+key+":: "+in.Properties[key])
	}
	idAt := len(kept)
	for j, l := range kept {
		if key, _, _ := noteedit.PropLine(l); strings.EqualFold(key, "id") {
			idAt = j
		}
	}
	kept = append(kept[:idAt], append(added, kept[idAt:]...)...)
	var head string
	if in.Content != "" {
		text := noteedit.ContentLines(in.Content)
		head = strings.TrimRight(indent+"- "+text[0], " ")
		body = bodyLines(indent, unit, text[1:])
	} else if firstIsProp {
		// A block made only of properties keeps its first one on the bullet line.
		if len(kept) == 0 {
			head = indent + "-"
		} else {
			head = indent + "- " + strings.TrimLeft(kept[0], " \t")
			kept = kept[1:]
		}
	} else {
		head = first
	}
	out := append([]string{head}, kept...)
	return append(out, body...)
}
