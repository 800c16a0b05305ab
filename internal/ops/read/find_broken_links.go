package read

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// FindBrokenLinksIn is the input of find_broken_links.
type FindBrokenLinksIn struct {
	PathGlob string `json:"path_glob,omitempty" jsonschema:"only links written in notes whose path matches this glob, e.g. Projects/** (default: the whole vault)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"broken links per call, 1-1000 (default 100)"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault    string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the glob and limit.
func (in *FindBrokenLinksIn) Validate() error {
	if err := ops.CheckGlob(in.PathGlob); err != nil {
		return err
	}
	return ops.CheckLimit(in.Limit, 1000)
}

// BrokenSource groups the broken links of one note.
type BrokenSource struct {
	Path  string             `json:"path" jsonschema:"the note holding the links"`
	Title string             `json:"title" jsonschema:"its title"`
	Links []index.BrokenLink `json:"links" jsonschema:"its unresolved links, by line"`
}

// FindBrokenLinksOut is the output of find_broken_links.
type FindBrokenLinksOut struct {
	Sources      []BrokenSource `json:"sources" jsonschema:"notes with unresolved links, by path (a note may continue on the next page)"`
	Total        int            `json:"total" jsonschema:"number of broken links matching, over all calls"`
	TotalSources int            `json:"total_sources" jsonschema:"number of notes with broken links, over all calls"`
	NextCursor   string         `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get the next links"`
}

// FindBrokenLinks is the find_broken_links operation.
func FindBrokenLinks() ops.Def[FindBrokenLinksIn, FindBrokenLinksOut] {
	return ops.Def[FindBrokenLinksIn, FindBrokenLinksOut]{
		Name:  "find_broken_links",
		Title: "Find broken links",
		Description: "Links whose target note does not exist, across the vault or under a path glob, grouped by the note that holds them, each with its line and target as written. " +
			"Attachments (images, PDFs) and Logseq #tags are not counted. Paginate with next_cursor.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "broken-links", Text: textBroken},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{"path_glob": "Meetings/**", "limit": 50}`,
		Handler: func(ctx context.Context, env *ops.Env, in *FindBrokenLinksIn) (*FindBrokenLinksOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := ops.DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			all, err := vh.Index.BrokenLinks(ctx)
			if err != nil {
				return nil, err
			}
			all = ops.Visible(env.ReadFence(ctx, vh), all, func(b index.BrokenLink) string { return b.Source })
			var kept []index.BrokenLink
			sources := map[string]bool{}
			for _, b := range all {
				if ops.GlobMatch(in.PathGlob, b.Source) {
					kept = append(kept, b)
					sources[b.Source] = true
				}
			}
			out := &FindBrokenLinksOut{Sources: []BrokenSource{}, Total: len(kept), TotalSources: len(sources)}
			var pg []index.BrokenLink
			pg, out.NextCursor = ops.Page(kept, off, ops.OrDefault(in.Limit, 100))
			for _, b := range pg {
				if n := len(out.Sources); n == 0 || out.Sources[n-1].Path != b.Source {
					out.Sources = append(out.Sources, BrokenSource{Path: b.Source, Title: b.SourceTitle})
				}
				s := &out.Sources[len(out.Sources)-1]
				s.Links = append(s.Links, b)
			}
			return out, nil
		},
	}
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
