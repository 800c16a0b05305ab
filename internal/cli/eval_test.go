package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEval(t *testing.T) {
	v := demoCopy(t)
	golden := filepath.Join(t.TempDir(), "golden.json")
	os.WriteFile(golden, []byte(`[
 {"id": "q1", "query": "spaced repetition", "relevant_paths": ["Ideas/Spaced repetition.md"], "partial_paths": [], "category": "keyword"},
 {"id": "q2", "query": "slip box of atomic notes", "relevant_paths": ["Ideas/Zettelkasten.md"], "partial_paths": ["Reading/How to Take Smart Notes.md"], "category": "paraphrase"},
 {"id": "q3", "query": "zzqqxx", "relevant_paths": ["Welcome.md"], "category": "keyword"}
]`), 0o644)
	out, errOut, code := run(t, "eval", "--golden", golden, "--vault", v, "--mode", "lexical")
	if code != 0 || !strings.Contains(out, "mode lexical, k 10") || !strings.Contains(out, "overall") || !strings.Contains(out, "paraphrase") ||
		!strings.Contains(out, "misses (no relevant note in the first 10): 1") || !strings.Contains(out, "[q3]") {
		t.Fatalf("eval: %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = run(t, "eval", "--golden", golden, "--vault", v, "--format", "json", "--k", "5", "--rrf-k", "10")
	var rep struct {
		Mode    string `json:"mode"`
		K       int    `json:"k"`
		Overall struct {
			Queries int     `json:"queries"`
			NDCG10  float64 `json:"ndcg@10"`
			Hit1    float64 `json:"hit@1"`
		} `json:"overall"`
		ByCategory map[string]any `json:"by_category"`
		Queries    []any          `json:"queries"`
		Fusion     struct {
			K float64 `json:"k"`
		} `json:"fusion"`
		Vectors string `json:"vectors"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if rep.Mode != "hybrid" || rep.K != 5 || rep.Overall.Queries != 3 || rep.Overall.Hit1 < 0.66 || len(rep.ByCategory) != 2 || len(rep.Queries) != 3 ||
		rep.Fusion.K != 10 || !strings.HasPrefix(rep.Vectors, "builtin/") {
		t.Errorf("json report: %+v", rep)
	}
	if _, errOut, code := run(t, "eval", "--vault", v); code != 2 || !strings.Contains(errOut, "--golden") {
		t.Errorf("missing --golden: %d %s", code, errOut)
	}
	os.WriteFile(golden, []byte(`{"not": "a list"}`), 0o644)
	if _, errOut, code := run(t, "eval", "--golden", golden, "--vault", v); code != 2 {
		t.Errorf("bad golden: %d %s", code, errOut)
	}
}
