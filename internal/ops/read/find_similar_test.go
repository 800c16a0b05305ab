package read_test

import (
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
)

func TestFindSimilar(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[read.FindSimilarOut](t, env, "find_similar", `{"path": "Ideas/Zettelkasten.md", "limit": 3}`)
	if out.Path != "Ideas/Zettelkasten.md" || len(out.Notes) == 0 || len(out.Notes) > 3 || !strings.HasPrefix(out.Model, "builtin/") {
		t.Fatalf("find_similar = %+v", out)
	}
	for i, n := range out.Notes {
		if n.Path == out.Path || n.Title == "" || n.HeadingPath == nil || n.Score <= 0 || n.Score > 1.0001 {
			t.Errorf("note = %+v", n)
		}
		if i > 0 && n.Score > out.Notes[i-1].Score {
			t.Errorf("not sorted: %+v", out.Notes)
		}
	}
	// By reference, with a glob.
	out = opstest.Call[read.FindSimilarOut](t, env, "find_similar", `{"note": "[[Spaced repetition]]", "path_glob": "Projects/**"}`)
	for _, n := range out.Notes {
		if !strings.HasPrefix(n.Path, "Projects/") {
			t.Errorf("glob leaked %s", n.Path)
		}
	}
	opstest.WantCode(t, env, "find_similar", `{"path": "Nope.md"}`, errs.CodeNotFound)
	opstest.WantCode(t, env, "find_similar", `{}`, errs.CodeInvalidInput)
	opstest.WantCode(t, env, "find_similar", `{"path": "../x.md"}`, errs.CodePathDenied)
	opstest.WantCode(t, env, "find_similar", `{"path": "Welcome.md", "limit": 51}`, errs.CodeInvalidInput)
}

func TestSearchModesExplain(t *testing.T) {
	env := opstest.DemoEnv(t)
	out := opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"query": "remember facts longer", "explain": true, "expand_links": true, "limit": 5}`)
	if out.Mode != "hybrid" || len(out.Results) == 0 {
		t.Fatalf("search = %+v", out)
	}
	for _, r := range out.Results {
		if r.Explain == nil || r.Explain.Fused <= 0 || (r.Explain.LexicalRank == 0 && r.Explain.VectorRank == 0 && r.Explain.Graph == 0) {
			t.Errorf("explain of %s = %+v", r.Path, r.Explain)
		}
	}
	op, _ := opstest.Reg.Get("search_notes")
	if txt := op.CLI.Text(out); !strings.Contains(txt, "explain: ") {
		t.Errorf("text output lacks explain: %s", txt)
	}
	sem := opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"query": "remember facts longer", "mode": "semantic"}`)
	if sem.Mode != "semantic" || len(sem.Results) == 0 || sem.Results[0].Explain != nil {
		t.Errorf("semantic = %+v", sem)
	}
	ctxOut := opstest.Call[read.GetContextOut](t, env, "get_context", `{"query": "remember facts longer", "explain": true}`)
	if ctxOut.Mode != "hybrid" || len(ctxOut.Notes) == 0 || ctxOut.Notes[0].Explain == nil {
		t.Errorf("get_context = %+v", ctxOut)
	}
	lex := opstest.Call[read.SearchNotesOut](t, env, "search_notes", `{"query": "spaced repetition", "mode": "lexical"}`)
	if lex.Mode != "lexical" || lex.Results[0].Path != "Ideas/Spaced repetition.md" || lex.Results[0].Explain != nil {
		t.Errorf("lexical = %+v", lex)
	}
}
