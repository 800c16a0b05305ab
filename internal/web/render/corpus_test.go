package render

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

// TestCorpusRender renders every note of the shared corpora (read in
// place, never written): no panic, and no Obsidian construct left raw
// where the renderer should have taken it (a callout marker at the start
// of a quote, ==highlight== outside code, an embed's "![[").
func TestCorpusRender(t *testing.T) {
	for _, name := range []string{"obsidian-help", "obsidian-hub", "logseq-docs"} {
		t.Run(name, func(t *testing.T) {
			root := testutil.Corpus(t, name)
			var notes, callouts, embeds, math, raw int
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != root {
					return filepath.SkipDir
				}
				if d.IsDir() || !strings.HasSuffix(p, ".md") {
					return nil
				}
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				rel, _ := filepath.Rel(root, p)
				logseq := name == "logseq-docs" && (strings.Contains(rel, "pages/") || strings.Contains(rel, "journals/"))
				r := Render(b, Options{Path: filepath.ToSlash(rel), Logseq: logseq})
				notes++
				callouts += strings.Count(r.HTML, `class="callout"`)
				embeds += strings.Count(r.HTML, "embed-link")
				math += strings.Count(r.HTML, `class="math `)
				if strings.Contains(r.HTML, "<blockquote>\n<p>[!") {
					raw++
					t.Logf("%s: a callout left as a quote", rel)
				}
				return nil
			})
			t.Logf("%s: %d notes, %d callouts, %d embeds, %d math", name, notes, callouts, embeds, math)
			if raw > 0 {
				t.Errorf("%d notes keep a raw callout", raw)
			}
		})
	}
}
