package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/embed/onnxtest"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestONNXIndexAndSearch: `loci index` and `loci search --mode semantic`
// with embed.provider onnx (a tiny model the test writes) find a note by
// a word it does not contain, through the commands' real path.
func TestONNXIndexAndSearch(t *testing.T) {
	model := filepath.Join(t.TempDir(), "tiny")
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "cat", "kitten", "feline", "zebra", "stripes", "the", "sat", "on", "a", "mat"}
	rows := make([][]float32, len(vocab))
	for i, w := range vocab {
		rows[i] = []float32{0, 0, 0.1}
		switch w {
		case "cat", "kitten", "feline":
			rows[i] = []float32{4, 0, 0}
		case "zebra", "stripes":
			rows[i] = []float32{0, 4, 0}
		}
	}
	onnxtest.WriteFolder(t, model, onnxtest.GatherModel(rows), vocab, nil)
	empty := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(empty, nil, 0o644)
	t.Setenv("LOCI_CONFIG", empty)
	t.Setenv("LOCI_EMBED_PROVIDER", "onnx")
	t.Setenv("LOCI_EMBED_MODEL_PATH", model)

	v := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, v, map[string]string{
		"Pets.md":  "# Pets\n\nThe kitten sat on a mat.\n",
		"Zebra.md": "# Stripes\n\nStripes.\n",
	})
	out, errOut, code := run(t, "index", v, "--format", "json")
	if code != 0 {
		t.Fatalf("index: %d %s %s", code, out, errOut)
	}
	if !strings.Contains(out, `"onnx"`) {
		t.Errorf("index output does not name the onnx provider: %s", out)
	}
	out, errOut, code = run(t, "search", "feline", "--vault", v, "--mode", "semantic", "--format", "json")
	if code != 0 {
		t.Fatalf("search: %d %s", code, errOut)
	}
	var resp struct {
		Results []struct {
			Path string `json:"path"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Results) == 0 || resp.Results[0].Path != "Pets.md" {
		t.Fatalf("semantic search for feline: %v %s", err, out)
	}
}
