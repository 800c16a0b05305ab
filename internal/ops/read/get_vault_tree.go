package read

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

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
	return ops.CheckLimit(in.Limit, 5000)
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

// GetVaultTree is the get_vault_tree operation.
func GetVaultTree() ops.Def[TreeIn, TreeOut] {
	return ops.Def[TreeIn, TreeOut]{
		Name:  "get_vault_tree",
		Title: "Vault folder tree",
		Description: "The vault's folders and notes as a depth-first list: each folder with its recursive note count, notes only down to depth (default 2). " +
			"Start below a folder with path; long listings are cut at limit with truncated=true. Use it to learn how a vault is organised.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "tree", Text: textTree},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeVaultNotFound},
		Example:     `{"path": "Projects", "depth": 1}`,
		Handler: func(ctx context.Context, env *ops.Env, in *TreeIn) (*TreeOut, error) {
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
			// Fenced notes are not counted, and a folder of only fenced
			// notes is not there.
			notes, err := env.ListNotes(ctx, vh, false)
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
			depth, limit := ops.OrDefault(in.Depth, 2), ops.OrDefault(in.Limit, 500)
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

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
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
