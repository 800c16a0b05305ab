package ops

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
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
	if err := CheckGlob(in.PathGlob); err != nil {
		return err
	}
	return CheckLimit(in.Limit, 1000)
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
	if err := CheckGlob(in.PathGlob); err != nil {
		return err
	}
	return CheckLimit(in.Limit, 500)
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

func registerGraphOps(r *Registry) {
	register(r, FindBrokenLinks())

	register(r, SuggestTypedLinks())
}

// TreeIn is the input of get_vault_tree.
type TreeIn struct {
	Path  string `json:"path,omitempty" jsonschema:"folder to start from (vault-relative, default: the vault root)"`
	Depth int    `json:"depth,omitempty" jsonschema:"levels to list below the starting folder, 1-20 (default 2); deeper folders are only counted"`
	Limit int    `json:"limit,omitempty" jsonschema:"maximum entries, 1-5000 (default 500); truncated=true when cut"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the bounds.
func (in *TreeIn) Validate() error {
	if in.Depth < 0 || in.Depth > 20 {
		return errs.New(errs.CodeInvalidInput, "depth must be between 1 and 20").With("depth", in.Depth)
	}
	return CheckLimit(in.Limit, 5000)
}

// TreeEntry is one folder or note of the tree, in depth-first order.
type TreeEntry struct {
	Path      string `json:"path" jsonschema:"vault-relative path of the folder or note"`
	Type      string `json:"type" jsonschema:"folder or note"`
	Depth     int    `json:"depth" jsonschema:"level below the starting folder (1 = directly inside)"`
	NoteCount int    `json:"note_count,omitempty" jsonschema:"folders: number of notes inside, recursively"`
	Title     string `json:"title,omitempty" jsonschema:"notes: the title, when it differs from the file name"`
}

// TreeOut is the output of get_vault_tree.
type TreeOut struct {
	Path      string      `json:"path" jsonschema:"the starting folder (empty for the vault root)"`
	NoteCount int         `json:"note_count" jsonschema:"notes under the starting folder, recursively"`
	Entries   []TreeEntry `json:"entries" jsonschema:"folders (first) and notes of each folder, depth-first, alphabetical"`
	Truncated bool        `json:"truncated" jsonschema:"true when entries were cut at limit"`
}

type treeNode struct {
	folders map[string]*treeNode
	notes   []index.NoteSummary
	count   int
}

func (t *treeNode) folder(name string) *treeNode {
	if t.folders == nil {
		t.folders = map[string]*treeNode{}
	}
	c := t.folders[name]
	if c == nil {
		c = &treeNode{}
		t.folders[name] = c
	}
	return c
}

func registerTreeOps(r *Registry) {
	register(r, GetVaultTree())
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// FindBrokenLinks is the find_broken_links operation.
func FindBrokenLinks() Def[FindBrokenLinksIn, FindBrokenLinksOut] {
	return Def[FindBrokenLinksIn, FindBrokenLinksOut]{
		Name:  "find_broken_links",
		Title: "Find broken links",
		Description: "Links whose target note does not exist, across the vault or under a path glob, grouped by the note that holds them, each with its line and target as written. " +
			"Attachments (images, PDFs) and Logseq #tags are not counted. Paginate with next_cursor.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "broken-links", Text: textBroken},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{"path_glob": "Meetings/**", "limit": 50}`,
		Handler: func(ctx context.Context, env *Env, in *FindBrokenLinksIn) (*FindBrokenLinksOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			all, err := vh.Index.BrokenLinks(ctx)
			if err != nil {
				return nil, err
			}
			var kept []index.BrokenLink
			sources := map[string]bool{}
			for _, b := range all {
				if GlobMatch(in.PathGlob, b.Source) {
					kept = append(kept, b)
					sources[b.Source] = true
				}
			}
			out := &FindBrokenLinksOut{Sources: []BrokenSource{}, Total: len(kept), TotalSources: len(sources)}
			var pg []index.BrokenLink
			pg, out.NextCursor = Page(kept, off, OrDefault(in.Limit, 100))
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

// SuggestTypedLinks is the suggest_typed_links operation.
func SuggestTypedLinks() Def[SuggestTypedLinksIn, SuggestTypedLinksOut] {
	return Def[SuggestTypedLinksIn, SuggestTypedLinksOut]{
		Name:  "suggest_typed_links",
		Title: "Suggest typed links",
		Description: "For one note (or every note under a path glob): the notes it links to in its body but not yet through a typed link (a frontmatter key such as owner: \"[[Ada]]\"), " +
			"each with the line, the resolved target and a suggested key inferred from how the vault already types links to that note or to notes in its folder (related when there is no usage).",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "suggest-links", Text: textSuggest, Short: "Body links that could become typed links, with a suggested key"},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound},
		Example:     `{"note": "Welcome"}`,
		Handler: func(ctx context.Context, env *Env, in *SuggestTypedLinksIn) (*SuggestTypedLinksOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			var ids []int64
			if in.PathGlob != "" {
				notes, err := vh.Index.ListNotes(ctx, false)
				if err != nil {
					return nil, err
				}
				for _, n := range notes {
					if GlobMatch(in.PathGlob, n.Path) {
						ids = append(ids, n.ID)
					}
				}
			} else {
				rel, _, _, err := NotePath(ctx, vh, in.Path, in.Note)
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
			out.Suggestions, out.NextCursor = Page(all, off, OrDefault(in.Limit, 50))
			return out, nil
		},
	}
}

// GetVaultTree is the get_vault_tree operation.
func GetVaultTree() Def[TreeIn, TreeOut] {
	return Def[TreeIn, TreeOut]{
		Name:  "get_vault_tree",
		Title: "Vault folder tree",
		Description: "The vault's folders and notes as a depth-first list: each folder with its recursive note count, notes only down to depth (default 2). " +
			"Start below a folder with path; long listings are cut at limit with truncated=true. Use it to learn how a vault is organised.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "tree", Text: textTree},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeVaultNotFound},
		Example:     `{"path": "Projects", "depth": 1}`,
		Handler: func(ctx context.Context, env *Env, in *TreeIn) (*TreeOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			prefix := ""
			if p := strings.TrimRight(strings.TrimSpace(in.Path), "/"); p != "" && p != "." {
				_, rel, err := vh.Vault.Abs(p)
				if err != nil {
					return nil, err
				}
				prefix = rel
			}
			notes, err := vh.Index.ListNotes(ctx, false)
			if err != nil {
				return nil, err
			}
			root := &treeNode{}
			for _, n := range notes {
				rest := n.Path
				if prefix != "" {
					if len(rest) <= len(prefix) || rest[len(prefix)] != '/' || !strings.EqualFold(rest[:len(prefix)], prefix) {
						continue
					}
					prefix = rest[:len(prefix)] // the folder as written on disk
					rest = rest[len(prefix)+1:]
				}
				t := root
				t.count++
				parts := strings.Split(rest, "/")
				for _, f := range parts[:len(parts)-1] {
					t = t.folder(f)
					t.count++
				}
				t.notes = append(t.notes, n)
			}
			if prefix != "" && root.count == 0 {
				var top []string
				for _, n := range notes {
					if f, _, ok := strings.Cut(n.Path, "/"); ok && !slices.Contains(top, f) {
						top = append(top, f)
					}
				}
				return nil, errs.New(errs.CodeNotFound, "no notes under folder %q", prefix).With("path", prefix).With("folders", top)
			}
			depth, limit := OrDefault(in.Depth, 2), OrDefault(in.Limit, 500)
			out := &TreeOut{Path: prefix, NoteCount: root.count, Entries: []TreeEntry{}}
			var walk func(t *treeNode, dir string, level int) bool
			walk = func(t *treeNode, dir string, level int) bool {
				names := make([]string, 0, len(t.folders))
				for n := range t.folders {
					names = append(names, n)
				}
				sort.Slice(names, func(i, j int) bool { return strings.ToLower(names[i]) < strings.ToLower(names[j]) })
				for _, name := range names {
					if len(out.Entries) == limit {
						return false
					}
					c := t.folders[name]
					p := joinPath(dir, name)
					out.Entries = append(out.Entries, TreeEntry{Path: p, Type: "folder", Depth: level, NoteCount: c.count})
					if level < depth && !walk(c, p, level+1) {
						return false
					}
				}
				sort.SliceStable(t.notes, func(i, j int) bool { return strings.ToLower(t.notes[i].Path) < strings.ToLower(t.notes[j].Path) })
				for _, n := range t.notes {
					if len(out.Entries) == limit {
						return false
					}
					e := TreeEntry{Path: n.Path, Type: "note", Depth: level}
					if stem := strings.TrimSuffix(n.Path[strings.LastIndexByte(n.Path, '/')+1:], ".md"); stem != n.Title {
						e.Title = n.Title
					}
					out.Entries = append(out.Entries, e)
				}
				return true
			}
			out.Truncated = !walk(root, prefix, 1)
			return out, nil
		},
	}
}
