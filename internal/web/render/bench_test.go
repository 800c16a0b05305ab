package render

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/loci-dev/loci/internal/testutil"
)

func corpusNotes(b *testing.B) [][]byte {
	root := filepath.Join(testutil.Corpus(b, "obsidian-help"), "en")
	var notes [][]byte
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			if s, err := os.ReadFile(p); err == nil {
				notes = append(notes, s)
			}
		}
		return nil
	})
	return notes
}

// BenchmarkRender renders obsidian-help/en (171 notes, no resolver) per
// op; BenchmarkRenderGFM is the baseline, goldmark's GFM alone (what the
// note view ran before, less its wikilink regexp pass).
func BenchmarkRender(b *testing.B) {
	notes := corpusNotes(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range notes {
			Render(n, Options{Path: "x.md"})
		}
	}
}

func BenchmarkRenderGFM(b *testing.B) {
	notes := corpusNotes(b)
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range notes {
			buf.Reset()
			md.Convert(n, &buf)
		}
	}
}
