package ops

import (
	"fmt"
	"strings"
	"time"

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
		fmt.Fprintf(&b, "%2d. %s  (%.4g)\n    %s", i+1, r.Title, r.Score, loc)
		if len(r.HeadingPath) > 0 {
			fmt.Fprintf(&b, "  › %s", strings.Join(r.HeadingPath, " › "))
		}
		b.WriteString("\n")
		if r.Snippet != "" {
			fmt.Fprintf(&b, "    %s\n", r.Snippet)
		}
		if r.Explain != nil {
			fmt.Fprintf(&b, "    %s\n", explainLine(r.Explain))
		}
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
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

func textTags(o any) string {
	var b strings.Builder
	for _, t := range o.(*ListTagsOut).Tags {
		fmt.Fprintf(&b, "%6d  #%s\n", t.Notes, t.Tag)
	}
	return b.String()
}

func textStatus(o any) string {
	out := o.(*IndexStatusOut)
	s := &out.Status
	var b strings.Builder
	fmt.Fprintf(&b, "vault:        %s (%s)\n", s.Vault, s.VaultKind)
	fmt.Fprintf(&b, "index:        %s (schema v%d, %.1f MB)\n", s.IndexPath, s.SchemaVersion, float64(s.IndexBytes)/1e6)
	fmt.Fprintf(&b, "notes:        %d\nchunks:       %d\nlinks:        %d (%d unresolved)\ntags:         %d\ntasks:        %d\nblocks:       %d\n",
		s.Notes, s.Chunks, s.Links, s.UnresolvedLinks, s.Tags, s.Tasks, s.Blocks)
	fmt.Fprintf(&b, "last index:   %s\nlast full:    %s\n", orNever(s.LastIndexAt), orNever(s.LastFullIndexAt))
	b.WriteString(vectorsLine(s.Vectors))
	switch {
	case out.Sync.Running:
		b.WriteString("sync:         running\n")
	case out.Sync.LastError != "":
		fmt.Fprintf(&b, "sync:         last run failed: %s\n", out.Sync.LastError)
	}
	if w := out.Watcher; w != nil {
		fmt.Fprintf(&b, "watcher:      %s, %d folders, queue %d, %d batches, heartbeat %s\n", w.State, w.Dirs, w.Queue, w.Batches, w.Heartbeat.Format(time.RFC3339))
		if w.LastError != "" {
			fmt.Fprintf(&b, "watcher err:  %s\n", w.LastError)
		}
	}
	if len(out.Vaults) > 1 {
		b.WriteString("vaults:\n")
		for _, v := range out.Vaults {
			def := ""
			if v.Default {
				def = "  (default)"
			}
			fmt.Fprintf(&b, "  %s  %s  %s%s\n", v.Name, v.Kind, v.Root, def)
		}
	}
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

func textContext(o any) string {
	out := o.(*GetContextOut)
	if len(out.Notes) == 0 {
		return "no notes matched\n" + out.Hint + "\n"
	}
	var b strings.Builder
	for i, n := range out.Notes {
		fmt.Fprintf(&b, "%d. %s  (%s:%d)", i+1, n.Title, n.Path, n.Line)
		if len(n.HeadingPath) > 0 {
			fmt.Fprintf(&b, "  › %s", strings.Join(n.HeadingPath, " › "))
		}
		b.WriteString("\n")
		if len(n.Tags) > 0 {
			fmt.Fprintf(&b, "   #%s\n", strings.Join(n.Tags, " #"))
		}
		if n.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", n.Snippet)
		}
		if n.Explain != nil {
			fmt.Fprintf(&b, "   %s\n", explainLine(n.Explain))
		}
		if n.Preview != "" {
			fmt.Fprintf(&b, "   ---\n   %s\n", strings.ReplaceAll(n.Preview, "\n", "\n   "))
		}
	}
	return b.String()
}

func textResolve(o any) string {
	out := o.(*ResolveNoteOut)
	if len(out.Candidates) == 0 {
		return "no note matches\n"
	}
	var b strings.Builder
	for _, c := range out.Candidates {
		fmt.Fprintf(&b, "%-9s %s  (%s)\n", c.Match, c.Path, c.Title)
	}
	if out.Ambiguous {
		b.WriteString("ambiguous: pass one of these paths\n")
	}
	return b.String()
}

func textRecent(o any) string {
	out := o.(*RecentNotesOut)
	var b strings.Builder
	for _, n := range out.Notes {
		when := n.Modified
		if out.By == "updated" && n.Updated != "" {
			when = n.Updated
		}
		fmt.Fprintf(&b, "%-25s  %s\n", when, n.Path)
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}

func textBroken(o any) string {
	out := o.(*FindBrokenLinksOut)
	if out.Total == 0 {
		return "no broken links\n"
	}
	var b strings.Builder
	for _, s := range out.Sources {
		b.WriteString(s.Path + "\n")
		for _, l := range s.Links {
			fmt.Fprintf(&b, "  %d: %s", l.Line, l.Target)
			if l.Key != "" {
				fmt.Fprintf(&b, "  [%s]", l.Key)
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "%d broken links in %d notes\n", out.Total, out.TotalSources)
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}

func textSuggest(o any) string {
	out := o.(*SuggestTypedLinksOut)
	if len(out.Suggestions) == 0 {
		return "no suggestions: every body link is already typed\n"
	}
	var b strings.Builder
	for _, s := range out.Suggestions {
		fmt.Fprintf(&b, "%s:%d  %s: \"%s\"  (%s", s.Source, s.Line, s.Key, s.Value, s.Reason)
		if s.Evidence > 0 {
			fmt.Fprintf(&b, ", %d uses", s.Evidence)
		}
		b.WriteString(")\n")
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}

func textTree(o any) string {
	out := o.(*TreeOut)
	var b strings.Builder
	root := out.Path
	if root == "" {
		root = "."
	}
	fmt.Fprintf(&b, "%s/  (%d notes)\n", root, out.NoteCount)
	for _, e := range out.Entries {
		indent := strings.Repeat("  ", e.Depth)
		name := e.Path[strings.LastIndexByte(e.Path, '/')+1:]
		if e.Type == "folder" {
			fmt.Fprintf(&b, "%s%s/  (%d)\n", indent, name, e.NoteCount)
		} else {
			b.WriteString(indent + name + "\n")
		}
	}
	if out.Truncated {
		b.WriteString("… truncated: raise --limit or narrow --path\n")
	}
	return b.String()
}

func textFMKeys(o any) string {
	out := o.(*ListFrontmatterKeysOut)
	var b strings.Builder
	if out.Key == "" {
		for _, k := range out.Keys {
			fmt.Fprintf(&b, "%6d  %s  (%s)\n", k.Notes, k.Key, strings.Join(k.Types, ", "))
		}
	} else {
		for _, v := range out.Values {
			fmt.Fprintf(&b, "%6d  %s\n", v.Notes, v.Value)
		}
		if len(out.Values) == 0 {
			fmt.Fprintf(&b, "no note has a value for %s\n", out.Key)
			if len(out.Suggestions) > 0 {
				fmt.Fprintf(&b, "similar keys: %s\n", strings.Join(out.Suggestions, ", "))
			}
		}
	}
	if out.Truncated {
		b.WriteString("… more not shown: raise --limit\n")
	}
	return b.String()
}

func textValidate(o any) string {
	out := o.(*ValidateOut)
	var b strings.Builder
	for _, is := range out.Issues {
		fmt.Fprintf(&b, "%s: [%s] %s\n", is.Path, is.Rule, is.Message)
	}
	fmt.Fprintf(&b, "%d notes checked, %d with issues (%d issues)\n", out.Checked, out.NotesWithIssues, out.Total)
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}

func textPages(o any) string {
	out := o.(*ListPagesOut)
	var b strings.Builder
	for _, p := range out.Pages {
		fmt.Fprintf(&b, "%-40s  %4d blocks  %s\n", p.Name, p.Blocks, p.Path)
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}

func writeBlocks(b *strings.Builder, nodes []BlockNode, level int) {
	for _, n := range nodes {
		indent := strings.Repeat("  ", level)
		content := strings.ReplaceAll(n.Content, "\n", "\n"+indent+"  ")
		fmt.Fprintf(b, "%s- %s", indent, content)
		if n.UUID != "" {
			fmt.Fprintf(b, "  ((%s))", n.UUID)
		}
		if n.MoreChildren > 0 {
			fmt.Fprintf(b, "  [+%d]", n.MoreChildren)
		}
		b.WriteString("\n")
		writeBlocks(b, n.Children, level+1)
	}
}

func textPage(o any) string {
	out := o.(*GetPageOut)
	var b strings.Builder
	fmt.Fprintf(&b, "%s  (%s, %d blocks)\n", out.Name, out.Path, out.BlockCount)
	writeBlocks(&b, out.Blocks, 0)
	return b.String()
}

func textBlock(o any) string {
	out := o.(*GetBlockOut)
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d  (%s)\n", out.Page, out.Line, out.PageName)
	for i, p := range out.Parents {
		fmt.Fprintf(&b, "%s- %s\n", strings.Repeat("  ", i), p.Content)
	}
	writeBlocks(&b, []BlockNode{{BlockInfo: BlockInfo{UUID: out.UUID, Content: out.Content}, Children: out.Children}}, len(out.Parents))
	if len(out.ReferencedBy) > 0 {
		b.WriteString("referenced by:\n")
		for _, r := range out.ReferencedBy {
			fmt.Fprintf(&b, "  %s:%d\n", r.Path, r.Line)
		}
	}
	return b.String()
}
