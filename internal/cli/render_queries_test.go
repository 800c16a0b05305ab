package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

// TestReadRenderQueries: `loci read NOTE --render-queries` prints the note
// then each query's table (or its error); --format json carries the
// queries array for agents; without the flag only the note is printed.
func TestReadRenderQueries(t *testing.T) {
	v := filepath.Join(t.TempDir(), "vault")
	note := "# Dash\n\n```dataview\nTABLE status FROM #proj SORT file.name\n```\n\n```dataviewjs\ndv.list()\n```\n"
	testutil.WriteFiles(t, v, map[string]string{
		"Dash.md": note,
		"A.md":    "---\nstatus: active\ntags: [proj]\n---\n# A\n",
		"B.md":    "---\nstatus: done\ntags: [proj]\n---\n# B\n",
	})
	if out, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Fatalf("index: %d %s %s", code, out, errOut)
	}
	out, errOut, code := run(t, "read", "Dash.md", "--vault", v, "--render-queries")
	if code != 0 {
		t.Fatalf("read: %d %s", code, errOut)
	}
	want := note + "\n── query at line 3 (dataview)\n   TABLE status FROM #proj SORT file.name\n" +
		"Location  File   status\nA.md      [[A]]  active\nB.md      [[B]]  done\n2 row(s)\n" +
		"\n── query at line 7 (dataviewjs)\n   dv.list()\nerror unsupported_query: "
	if !strings.HasPrefix(out, want) {
		t.Errorf("read --render-queries:\n%s\nwant a start of\n%s", out, want)
	}
	if out, _, _ := run(t, "read", "Dash.md", "--vault", v); out != note {
		t.Errorf("read without the flag: %q", out)
	}
	out, _, _ = run(t, "read", "Dash.md", "--vault", v, "--render-queries", "--format", "json")
	var js struct {
		Content string `json:"content"`
		Queries []struct {
			Line   int `json:"line"`
			Result *struct {
				Rows []struct {
					Path string `json:"path"`
				} `json:"rows"`
			} `json:"result"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"queries"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if js.Content != note || len(js.Queries) != 2 || js.Queries[0].Result == nil || len(js.Queries[0].Result.Rows) != 2 ||
		js.Queries[1].Error == nil || js.Queries[1].Error.Code != "unsupported_query" {
		t.Errorf("json: %s", out)
	}
}
