package read

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// graphReach bounds the notes a local graph walks before it cuts to limit,
// so "showing N of M" can give M up to this many.
const graphReach = 5000

// GetGraphIn is the input of get_graph.
type GetGraphIn struct {
	Path  string `json:"path,omitempty" jsonschema:"local graph around this note (vault-relative path); without path and note: the whole vault's graph"`
	Note  string `json:"note,omitempty" jsonschema:"local graph around this note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Depth int    `json:"depth,omitempty" jsonschema:"local graph: hops from the note through links and backlinks, 1-3 (default 1)"`
	Limit int    `json:"limit,omitempty" jsonschema:"maximum nodes, 1-2000 (default 200): the whole graph keeps the most linked notes, a local graph the nearest; total says how many there were"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the bounds.
func (in *GetGraphIn) Validate() error {
	if in.Path != "" && in.Note != "" {
		return ops.EitherPathOrNote(in.Path, in.Note)
	}
	if in.Depth < 0 || in.Depth > 3 {
		return errs.New(errs.CodeInvalidInput, "depth must be between 1 and 3").With("depth", in.Depth)
	}
	if in.Depth > 0 && in.Path == "" && in.Note == "" {
		return errs.New(errs.CodeInvalidInput, "depth is for a local graph: pass path or note with it").With("depth", in.Depth)
	}
	return ops.CheckLimit(in.Limit, 2000)
}

// GraphNode is one note of a graph.
type GraphNode struct {
	Path  string `json:"path" jsonschema:"vault-relative path of the note"`
	Title string `json:"title" jsonschema:"its title"`
	// Degree counts the note's distinct linked notes in the whole visible
	// graph (links and backlinks), not only among the nodes returned.
	Degree int `json:"degree" jsonschema:"number of distinct notes it links to or is linked from (in the whole graph the caller may see)"`
	// Distance is the hop count from the centre of a local graph.
	Distance int `json:"distance,omitempty" jsonschema:"local graph: hops from the note asked for (absent for that note itself and in the whole graph)"`
}

// GraphEdge is a resolved link between two nodes.
type GraphEdge struct {
	Source string `json:"source" jsonschema:"path of the linking note"`
	Target string `json:"target" jsonschema:"path of the linked note"`
}

// GetGraphOut is the output of get_graph.
type GetGraphOut struct {
	Center    string      `json:"center,omitempty" jsonschema:"local graph: path of the note asked for"`
	Nodes     []GraphNode `json:"nodes" jsonschema:"the notes shown: whole graph by degree (most linked first, then path), local graph by distance then path"`
	Edges     []GraphEdge `json:"edges" jsonschema:"resolved links between the nodes shown (any kind: wikilink, markdown, embed, typed, block ref, tag page), one per ordered pair, by source then target"`
	Total     int         `json:"total" jsonschema:"notes the graph has before limit: every note the caller may see, or for a local graph the notes within depth (counted up to 5000)"`
	Truncated bool        `json:"truncated" jsonschema:"true when nodes were cut at limit"`
}

// GetGraph is the get_graph operation.
func GetGraph() ops.Def[GetGraphIn, GetGraphOut] {
	return ops.Def[GetGraphIn, GetGraphOut]{
		Name:  "get_graph",
		Title: "Link graph",
		Description: "The link graph as nodes (notes with their degree) and edges (resolved links between them), for drawing or for finding hubs and islands. " +
			"Without a note it is the whole vault, the most linked notes first (unlinked notes come last); with path or note it is the local graph of the notes within depth hops through links and backlinks. " +
			"Bounded by limit, with total saying how many notes there were. Notes the caller may not read are neither nodes nor ends of edges.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "graph", Text: textGraph},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeVaultNotFound},
		Example:     `{"path": "Projects/Project Atlas.md", "depth": 2, "limit": 50}`,
		Handler: func(ctx context.Context, env *ops.Env, in *GetGraphIn) (*GetGraphOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			limit := in.Limit
			if limit == 0 {
				limit = 200
			}
			notes, err := env.ListNotes(ctx, vh, false)
			if err != nil {
				return nil, err
			}
			paths := make(map[int64]string, len(notes))
			titles := make(map[string]string, len(notes))
			ids := make(map[string]int64, len(notes))
			for _, n := range notes {
				paths[n.ID], titles[n.Path], ids[n.Path] = n.Path, n.Title, n.ID
			}
			all, err := vh.Index.LinkEdges(ctx)
			if err != nil {
				return nil, err
			}
			// Degree over the visible graph: distinct neighbours, either direction.
			type pair struct{ a, b int64 }
			seen := map[pair]bool{}
			degree := map[int64]int{}
			var edges [][2]int64
			for _, e := range all {
				if paths[e[0]] == "" || paths[e[1]] == "" {
					continue // an end the fence hides
				}
				edges = append(edges, e)
				p := pair{min(e[0], e[1]), max(e[0], e[1])}
				if !seen[p] {
					seen[p] = true
					degree[e[0]]++
					degree[e[1]]++
				}
			}
			out := &GetGraphOut{Nodes: []GraphNode{}, Edges: []GraphEdge{}}
			keep := map[int64]bool{}
			if in.Path == "" && in.Note == "" {
				sort.SliceStable(notes, func(i, j int) bool {
					di, dj := degree[notes[i].ID], degree[notes[j].ID]
					if di != dj {
						return di > dj
					}
					return notes[i].Path < notes[j].Path
				})
				out.Total = len(notes)
				if len(notes) > limit {
					notes, out.Truncated = notes[:limit], true
				}
				for _, n := range notes {
					keep[n.ID] = true
					out.Nodes = append(out.Nodes, GraphNode{Path: n.Path, Title: n.Title, Degree: degree[n.ID]})
				}
			} else {
				rel, _, _, err := ops.NotePath(ctx, vh, in.Path, in.Note)
				if err != nil {
					return nil, err
				}
				id, ok := ids[rel]
				if !ok {
					return nil, ops.NotFound(rel)
				}
				depth := max(in.Depth, 1)
				hidden, err := env.ReadFence(ctx, vh).Hidden(ctx, vh)
				if err != nil {
					return nil, err
				}
				nb, more, err := vh.Index.Neighbors(ctx, rel, depth, graphReach, hidden...)
				if err != nil {
					return nil, err
				}
				out.Center = rel
				out.Total = 1 + len(nb)
				if more {
					out.Total = 1 + graphReach
				}
				keep[id] = true
				out.Nodes = append(out.Nodes, GraphNode{Path: rel, Title: titles[rel], Degree: degree[id]})
				for _, n := range nb {
					if len(out.Nodes) >= limit {
						out.Truncated = true
						break
					}
					nid, ok := ids[n.Path]
					if !ok {
						continue
					}
					keep[nid] = true
					out.Nodes = append(out.Nodes, GraphNode{Path: n.Path, Title: n.Title, Degree: degree[nid], Distance: n.Distance})
				}
				out.Truncated = out.Truncated || more
			}
			for _, e := range edges {
				if keep[e[0]] && keep[e[1]] {
					out.Edges = append(out.Edges, GraphEdge{Source: paths[e[0]], Target: paths[e[1]]})
				}
			}
			sort.Slice(out.Edges, func(i, j int) bool {
				a, b := out.Edges[i], out.Edges[j]
				if a.Source != b.Source {
					return a.Source < b.Source
				}
				return a.Target < b.Target
			})
			return out, nil
		},
	}
}

func textGraph(o any) string {
	out := o.(*GetGraphOut)
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d notes, %d links\n", len(out.Nodes), out.Total, len(out.Edges))
	for _, n := range out.Nodes {
		fmt.Fprintf(&b, "%5d  %s\n", n.Degree, n.Path)
	}
	for _, e := range out.Edges {
		fmt.Fprintf(&b, "  %s → %s\n", e.Source, e.Target)
	}
	return b.String()
}
