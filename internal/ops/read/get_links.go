package read

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// GetLinksIn is the input of get_links.
type GetLinksIn struct {
	Path  string `json:"path,omitempty" jsonschema:"vault-relative path of the note (or use note)"`
	Note  string `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Depth int    `json:"depth,omitempty" jsonschema:"graph expansion: 1 (default) = this note's links only; 2-3 also returns neighbors reached through links and backlinks up to that many hops"`
	Limit int    `json:"limit,omitempty" jsonschema:"maximum neighbors returned when depth > 1, 1-500 (default 50)"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the note and the expansion bounds.
func (in *GetLinksIn) Validate() error {
	if err := ops.EitherPathOrNote(in.Path, in.Note); err != nil {
		return err
	}
	if in.Depth < 0 || in.Depth > 3 {
		return errs.New(errs.CodeInvalidInput, "depth must be between 1 and 3").With("depth", in.Depth)
	}
	if in.Limit < 0 || in.Limit > 500 {
		return errs.New(errs.CodeInvalidInput, "limit must be between 1 and 500").With("limit", in.Limit)
	}
	return nil
}

// GetLinksOut is the output of get_links: the note's links and, with
// depth > 1, the notes around it.
type GetLinksOut struct {
	index.Links
	Neighbors []index.Neighbor `json:"neighbors,omitzero" jsonschema:"with depth > 1: notes reached through outgoing links and backlinks, by distance then path"`
	// NeighborsTruncated is set when more neighbors were reachable than limit.
	NeighborsTruncated bool `json:"neighbors_truncated,omitempty" jsonschema:"true when more neighbors were reachable than limit"`
}

// GetLinks is the get_links operation.
func GetLinks() ops.Def[GetLinksIn, GetLinksOut] {
	return ops.Def[GetLinksIn, GetLinksOut]{
		Name:  "get_links",
		Title: "Links of a note",
		Description: "A note's link neighbourhood: outgoing wikilinks and Markdown links, backlinks, typed links (frontmatter keys whose values are links) in both directions, " +
			"embeds, and unresolved targets. Each link carries the target as written, the note it resolves to, and its line. " +
			"With depth 2-3 it also returns neighbors: the notes reached through links and backlinks, each with its distance and the note it was reached via (bounded by limit).",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "links", Args: []string{"path"}, Text: textLinks},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound},
		Example:     `{"path": "Projects/Project Atlas.md", "depth": 2, "limit": 20}`,
		Handler: func(ctx context.Context, env *ops.Env, in *GetLinksIn) (*GetLinksOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			rel, _, _, err := ops.NotePath(ctx, vh, in.Path, in.Note)
			if err != nil {
				return nil, err
			}
			links, err := vh.Index.LinksOf(ctx, rel)
			if err != nil {
				return nil, err
			}
			fence := env.ReadFence(ctx, vh)
			fenceLinks(fence, links)
			out := &GetLinksOut{Links: *links}
			if in.Depth > 1 {
				limit := in.Limit
				if limit == 0 {
					limit = 50
				}
				hidden, err := fence.Hidden(ctx, vh)
				if err != nil {
					return nil, err
				}
				out.Neighbors, out.NeighborsTruncated, err = vh.Index.Neighbors(ctx, links.Path, in.Depth, limit, hidden...)
				if err != nil {
					return nil, err
				}
			}
			return out, nil
		},
	}
}

func textLinks(o any) string {
	out := o.(*GetLinksOut)
	l := &out.Links
	var b strings.Builder
	section := func(name string, rows []index.LinkRow, incoming bool) {
		fmt.Fprintf(&b, "%s (%d)\n", name, len(rows))
		for _, r := range rows {
			var s string
			switch {
			case incoming:
				s = fmt.Sprintf("  %s:%d", r.Source, r.Line)
			case r.Resolved != "":
				s = fmt.Sprintf("  %s → %s", r.Target, r.Resolved)
			default:
				s = fmt.Sprintf("  %s", r.Target)
			}
			if r.Key != "" {
				s += "  [" + r.Key + "]"
			}
			if r.Heading != "" {
				s += "  #" + r.Heading
			}
			if !incoming {
				s += fmt.Sprintf("  (line %d)", r.Line)
			}
			b.WriteString(s + "\n")
		}
	}
	section("outgoing", l.Outgoing, false)
	section("backlinks", l.Backlinks, true)
	section("typed outgoing", l.TypedOut, false)
	section("typed incoming", l.TypedIn, true)
	section("embeds", l.Embeds, false)
	section("unresolved", l.Unresolved, false)
	if len(out.Neighbors) > 0 {
		more := ""
		if out.NeighborsTruncated {
			more = ", more not shown"
		}
		fmt.Fprintf(&b, "neighbors (%d%s)\n", len(out.Neighbors), more)
		for _, n := range out.Neighbors {
			arrow := "→"
			if n.Direction == "in" {
				arrow = "←"
			}
			fmt.Fprintf(&b, "  %d  %s  (via %s %s)\n", n.Distance, n.Path, arrow, n.Via)
		}
	}
	return b.String()
}

// fenceLinks drops the links to and from notes the fence hides: an
// outgoing link, typed link or embed that resolves to one, and a backlink
// or typed backlink from one (their paths and titles with them).
func fenceLinks(f *ops.Fence, l *index.Links) {
	if f == nil {
		return
	}
	to := func(r index.LinkRow) string { return r.Resolved }
	from := func(r index.LinkRow) string { return r.Source }
	shown := func(rows []index.LinkRow, path func(index.LinkRow) string) []index.LinkRow {
		return ops.Visible(f, rows, func(r index.LinkRow) string {
			if p := path(r); p != "" {
				return p
			}
			return r.Source // unresolved: the note's own link
		})
	}
	l.Outgoing, l.TypedOut, l.Embeds = shown(l.Outgoing, to), shown(l.TypedOut, to), shown(l.Embeds, to)
	l.Backlinks, l.TypedIn = shown(l.Backlinks, from), shown(l.TypedIn, from)
}
