package read_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
)

func graphFiles() map[string]string {
	return map[string]string{
		"a.md":    "# A\n\n[[b]] and [[c]] and [[missing]] and [[x]]\n",
		"b.md":    "# B\n\n[[a]] twice [[a]], then [[c]]\n",
		"c.md":    "# C\n\n[d](d.md)\n",
		"d.md":    "# D\n",
		"e.md":    "# E\n\nitself: [[e]]\n",
		"HR/x.md": "# X\n\n[[a]]\n",
	}
}

func nodeList(out *read.GetGraphOut) []string {
	var s []string
	for _, n := range out.Nodes {
		s = append(s, n.Path)
	}
	return s
}

func edgeList(out *read.GetGraphOut) []string {
	var s []string
	for _, e := range out.Edges {
		s = append(s, e.Source+">"+e.Target)
	}
	return s
}

func TestGetGraph(t *testing.T) {
	env := opstest.FixtureEnv(t, graphFiles())

	// The whole graph, no fence: a and c have 3 distinct neighbours each.
	out := opstest.Call[read.GetGraphOut](t, env, "get_graph", `{}`)
	if got, want := nodeList(out), []string{"a.md", "c.md", "b.md", "HR/x.md", "d.md", "e.md"}; !slices.Equal(got, want) {
		t.Errorf("nodes = %v, want %v", got, want)
	}
	if got, want := edgeList(out), []string{"HR/x.md>a.md", "a.md>HR/x.md", "a.md>b.md", "a.md>c.md", "b.md>a.md", "b.md>c.md", "c.md>d.md"}; !slices.Equal(got, want) {
		t.Errorf("edges = %v, want %v", got, want)
	}
	if out.Total != 6 || out.Truncated || out.Center != "" || out.Nodes[0].Degree != 3 || out.Nodes[5].Degree != 0 || out.Nodes[0].Title != "A" {
		t.Errorf("graph = %+v", out)
	}

	// The vault's read fence hides HR: x is no node and no edge end, and
	// a's degree drops to 2.
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"HR/**"}}
	out = opstest.Call[read.GetGraphOut](t, env, "get_graph", `{}`)
	if got, want := nodeList(out), []string{"c.md", "a.md", "b.md", "d.md", "e.md"}; !slices.Equal(got, want) {
		t.Errorf("fenced nodes = %v, want %v", got, want)
	}
	if got, want := edgeList(out), []string{"a.md>b.md", "a.md>c.md", "b.md>a.md", "b.md>c.md", "c.md>d.md"}; !slices.Equal(got, want) {
		t.Errorf("fenced edges = %v, want %v", got, want)
	}
	if out.Nodes[1].Degree != 2 || out.Total != 5 {
		t.Errorf("fenced graph = %+v", out)
	}

	// Bounded: the two most linked notes and the one link between them.
	out = opstest.Call[read.GetGraphOut](t, env, "get_graph", `{"limit": 2}`)
	if !slices.Equal(nodeList(out), []string{"c.md", "a.md"}) || !slices.Equal(edgeList(out), []string{"a.md>c.md"}) || out.Total != 5 || !out.Truncated {
		t.Errorf("limit 2 = %+v", out)
	}

	// Local graph of a: its neighbours b and c (x fenced), by distance.
	out = opstest.Call[read.GetGraphOut](t, env, "get_graph", `{"path": "a.md"}`)
	if !slices.Equal(nodeList(out), []string{"a.md", "b.md", "c.md"}) || out.Center != "a.md" || out.Total != 3 || out.Truncated {
		t.Errorf("local = %+v", out)
	}
	if got, want := edgeList(out), []string{"a.md>b.md", "a.md>c.md", "b.md>a.md", "b.md>c.md"}; !slices.Equal(got, want) {
		t.Errorf("local edges = %v, want %v", got, want)
	}
	if out.Nodes[0].Distance != 0 || out.Nodes[1].Distance != 1 {
		t.Errorf("distances = %+v", out.Nodes)
	}
	out = opstest.Call[read.GetGraphOut](t, env, "get_graph", `{"note": "[[A]]", "depth": 2}`)
	if !slices.Equal(nodeList(out), []string{"a.md", "b.md", "c.md", "d.md"}) || out.Nodes[3].Distance != 2 || out.Total != 4 {
		t.Errorf("depth 2 = %+v", out)
	}
	out = opstest.Call[read.GetGraphOut](t, env, "get_graph", `{"path": "a.md", "depth": 2, "limit": 2}`)
	if !slices.Equal(nodeList(out), []string{"a.md", "b.md"}) || !slices.Equal(edgeList(out), []string{"a.md>b.md", "b.md>a.md"}) || out.Total != 4 || !out.Truncated {
		t.Errorf("local limit 2 = %+v", out)
	}
	out = opstest.Call[read.GetGraphOut](t, env, "get_graph", `{"path": "e.md"}`)
	if !slices.Equal(nodeList(out), []string{"e.md"}) || len(out.Edges) != 0 || out.Total != 1 {
		t.Errorf("lone note = %+v", out)
	}

	// The whole graph follows the index: a new link after a sync is there
	// (the edges are cached per state of the notes).
	os.WriteFile(filepath.Join(opstest.Root(env), "d.md"), []byte("# D\n\n[[e]]\n"), 0o644)
	if _, err := env.Sync(context.Background(), env.Vaults[0], index.SyncOptions{Paths: []string{"d.md"}}); err != nil {
		t.Fatal(err)
	}
	out = opstest.Call[read.GetGraphOut](t, env, "get_graph", `{}`)
	if got := edgeList(out); !slices.Contains(got, "d.md>e.md") || len(got) != 6 {
		t.Errorf("edges after the sync = %v", got)
	}

	// A fenced note answers like a missing one; bad input is typed.
	opstest.WantCode(t, env, "get_graph", `{"path": "HR/x.md"}`, errs.CodeNotFound)
	opstest.WantCode(t, env, "get_graph", `{"path": "nope.md"}`, errs.CodeNotFound)
	opstest.WantCode(t, env, "get_graph", `{"path": "../outside.md"}`, errs.CodePathDenied)
	for _, in := range []string{`{"depth": 2}`, `{"path": "a.md", "depth": 4}`, `{"limit": 2001}`, `{"limit": -1}`, `{"path": "a.md", "note": "A"}`} {
		opstest.WantCode(t, env, "get_graph", in, errs.CodeInvalidInput)
	}
}
