package read

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// SuggestTypedLinksIn is the input of suggest_typed_links.
type SuggestTypedLinksIn struct {
	Path     string `json:"path,omitempty" jsonschema:"vault-relative path of one note"`
	Note     string `json:"note,omitempty" jsonschema:"one note by frontmatter id, title, alias, file name or [[wikilink]] text, instead of path"`
	PathGlob string `json:"path_glob,omitempty" jsonschema:"every note whose path matches this glob, e.g. Projects/** (instead of one note)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"suggestions per call, 1-500 (default 50)"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault    string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks that exactly one selection is given.
func (in *SuggestTypedLinksIn) Validate() error {
	n := 0
	for _, s := range []string{in.Path, in.Note, in.PathGlob} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return errs.New(errs.CodeInvalidInput, "pass exactly one of path, note or path_glob")
	}
	if err := ops.CheckGlob(in.PathGlob); err != nil {
		return err
	}
	return ops.CheckLimit(in.Limit, 500)
}

// LinkSuggestion proposes turning a body link into a typed link.
type LinkSuggestion struct {
	Source   string `json:"source" jsonschema:"the note holding the body link"`
	Line     int    `json:"line" jsonschema:"1-based line of the (first) body link to the target"`
	Target   string `json:"target" jsonschema:"the link target as written"`
	Resolved string `json:"resolved" jsonschema:"the note it resolves to"`
	Title    string `json:"title" jsonschema:"that note's title"`
	Key      string `json:"key" jsonschema:"suggested frontmatter key for the typed link"`
	Value    string `json:"value" jsonschema:"the frontmatter value to write, e.g. [[Ada Lovelace]] (the shortest wikilink that resolves to the target)"`
	// Reason says where the key comes from.
	Reason   string `json:"reason" jsonschema:"target: the key most used for typed links to this note; folder: the key most used for typed links to notes in its folder; default: no usage found, related"`
	Evidence int    `json:"evidence" jsonschema:"number of typed links in the vault supporting the key (0 for default)"`
}

// SuggestTypedLinksOut is the output of suggest_typed_links.
type SuggestTypedLinksOut struct {
	Suggestions []LinkSuggestion `json:"suggestions" jsonschema:"by source path and line"`
	Total       int              `json:"total" jsonschema:"number of suggestions, over all calls"`
	NextCursor  string           `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get the next suggestions"`
}

// SuggestTypedLinks is the suggest_typed_links operation.
func SuggestTypedLinks() ops.Def[SuggestTypedLinksIn, SuggestTypedLinksOut] {
	return ops.Def[SuggestTypedLinksIn, SuggestTypedLinksOut]{
		Name:  "suggest_typed_links",
		Title: "Suggest typed links",
		Description: "For one note (or every note under a path glob): the notes it links to in its body but not yet through a typed link (a frontmatter key such as owner: \"[[Ada]]\"), " +
			"each with the line, the resolved target and a suggested key inferred from how the vault already types links to that note or to notes in its folder (related when there is no usage).",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "suggest-links", Text: textSuggest, Short: "Body links that could become typed links, with a suggested key"},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound},
		Example:     `{"note": "Welcome"}`,
		Handler: func(ctx context.Context, env *ops.Env, in *SuggestTypedLinksIn) (*SuggestTypedLinksOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := ops.DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			var ids []int64
			if in.PathGlob != "" {
				notes, err := env.ListNotes(ctx, vh, false)
				if err != nil {
					return nil, err
				}
				for _, n := range notes {
					if ops.GlobMatch(in.PathGlob, n.Path) {
						ids = append(ids, n.ID)
					}
				}
			} else {
				rel, _, _, err := ops.NotePath(ctx, vh, in.Path, in.Note)
				if err != nil {
					return nil, err
				}
				n, err := vh.Index.NoteByPath(ctx, rel)
				if err != nil {
					return nil, err
				}
				ids = []int64{n.ID}
			}
			links, err := vh.Index.BodyLinks(ctx, ids)
			if err != nil {
				return nil, err
			}
			// A link to a note the fence hides is not suggested (its path
			// and title would show).
			links = ops.Visible(env.ReadFence(ctx, vh), links, func(l index.BodyLink) string { return l.Resolved })
			usage, err := vh.Index.TypedLinkUsage(ctx)
			if err != nil {
				return nil, err
			}
			res, err := vh.Index.CachedResolver(ctx)
			if err != nil {
				return nil, err
			}
			all := []LinkSuggestion{}
			for _, l := range links {
				if l.Typed {
					continue
				}
				key, reason, ev := suggestKey(usage, l.Resolved)
				value := "[[" + res.WikilinkFor(l.Source, l.Resolved, l.Kind, l.Title) + "]]"
				all = append(all, LinkSuggestion{Source: l.Source, Line: l.Line, Target: l.Target, Resolved: l.Resolved, Title: l.Title, Key: key, Value: value, Reason: reason, Evidence: ev})
			}
			sort.SliceStable(all, func(i, j int) bool {
				if all[i].Source != all[j].Source {
					return all[i].Source < all[j].Source
				}
				return all[i].Line < all[j].Line
			})
			out := &SuggestTypedLinksOut{Total: len(all)}
			out.Suggestions, out.NextCursor = ops.Page(all, off, ops.OrDefault(in.Limit, 50))
			return out, nil
		},
	}
}

// suggestKey infers the typed-link key for a target from how the vault
// already types links to it, or to notes in its folder.
func suggestKey(u *index.TypedLinkUse, target string) (key, reason string, evidence int) {
	if k, n := index.TopKey(u.ByTarget[target]); n > 0 {
		return k, "target", n
	}
	if k, n := index.TopKey(u.ByFolder[index.Folder(target)]); n > 0 {
		return k, "folder", n
	}
	return "related", "default", 0
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
