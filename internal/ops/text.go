package ops

import (
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/index"
)

// Text renderers for the CLI's --format text.

func textSearch(o any) string {
	out := o.(*SearchNotesOut)
	if len(out.Results) == 0 {
		return "no results\n"
	}
	var b strings.Builder
	for i, r := range out.Results {
		loc := r.Path
		if r.Line > 0 {
			loc = fmt.Sprintf("%s:%d", r.Path, r.Line)
		}
		fmt.Fprintf(&b, "%2d. %s  (%.2f)\n    %s", i+1, r.Title, r.Score, loc)
		if len(r.HeadingPath) > 0 {
			fmt.Fprintf(&b, "  › %s", strings.Join(r.HeadingPath, " › "))
		}
		b.WriteString("\n")
		if r.Snippet != "" {
			fmt.Fprintf(&b, "    %s\n", r.Snippet)
		}
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}

func textLinks(o any) string {
	l := o.(*index.Links)
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
	return b.String()
}

func textTags(o any) string {
	var b strings.Builder
	for _, t := range o.(*ListTagsOut).Tags {
		fmt.Fprintf(&b, "%6d  #%s\n", t.Notes, t.Tag)
	}
	return b.String()
}

func textStatus(o any) string {
	s := o.(*index.Status)
	var b strings.Builder
	fmt.Fprintf(&b, "vault:        %s (%s)\n", s.Vault, s.VaultKind)
	fmt.Fprintf(&b, "index:        %s (schema v%d, %.1f MB)\n", s.IndexPath, s.SchemaVersion, float64(s.IndexBytes)/1e6)
	fmt.Fprintf(&b, "notes:        %d\nchunks:       %d\nlinks:        %d (%d unresolved)\ntags:         %d\ntasks:        %d\nblocks:       %d\n",
		s.Notes, s.Chunks, s.Links, s.UnresolvedLinks, s.Tags, s.Tasks, s.Blocks)
	fmt.Fprintf(&b, "last index:   %s\nlast full:    %s\n", orNever(s.LastIndexAt), orNever(s.LastFullIndexAt))
	if len(s.Failures) > 0 {
		fmt.Fprintf(&b, "failed files (%d):\n", len(s.Failures))
		for _, f := range s.Failures {
			fmt.Fprintf(&b, "  %s: %s\n", f.Path, f.Error)
		}
	}
	if len(s.FrontmatterIssue) > 0 {
		fmt.Fprintf(&b, "invalid frontmatter (%d, indexed anyway):\n", len(s.FrontmatterIssue))
		for _, f := range s.FrontmatterIssue {
			fmt.Fprintf(&b, "  %s: %s\n", f.Path, f.Error)
		}
	}
	return b.String()
}

func orNever(s string) string {
	if s == "" {
		return "never"
	}
	return s
}
