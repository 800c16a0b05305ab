package markdown

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the current output")

// goldenOptions derives Parse options from a fixture name:
// logseq_X.md is the Logseq page pages/X.md, journal_X.md is the Logseq
// journal journals/X.md, split_X.md uses MaxChunkChars 200.
func goldenOptions(name string) Options {
	switch {
	case strings.HasPrefix(name, "logseq_"):
		return Options{Path: "pages/" + strings.TrimPrefix(name, "logseq_"), Logseq: true}
	case strings.HasPrefix(name, "journal_"):
		return Options{Path: "journals/" + strings.TrimPrefix(name, "journal_"), Logseq: true, Journal: true}
	case strings.HasPrefix(name, "split_"):
		return Options{Path: name, MaxChunkChars: 200}
	}
	return Options{Path: "notes/" + name}
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures in testdata")
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			doc := Parse(src, goldenOptions(name))
			got := marshalGolden(t, doc)
			golden := strings.TrimSuffix(f, ".md") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (run with -update to accept):\n%s", golden, firstDiff(string(want), string(got)))
			}
		})
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return ""
}

// marshalGolden is json.MarshalIndent without HTML escaping, so goldens stay
// readable ("<", ">" and "&" appear as themselves).
func marshalGolden(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
