package markdown

import (
	"os"
	"testing"
)

// BenchmarkParse parses the Obsidian fixture, a ~2.5 KB note with
// frontmatter, headings, links, tags, tasks and code.
func BenchmarkParse(b *testing.B) {
	src, err := os.ReadFile("testdata/obsidian.md")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(src, Options{Path: "notes/obsidian.md"})
	}
}

// BenchmarkParseLogseq parses the Logseq page fixture.
func BenchmarkParseLogseq(b *testing.B) {
	src, err := os.ReadFile("testdata/logseq_Test Page___Sub.md")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(src, Options{Path: "pages/Test Page___Sub.md", Logseq: true})
	}
}

// BenchmarkParseCorpus parses every note of obsidian-hub (the indexer's
// target corpus); ns/op is per note on average. Skipped without the corpus.
func BenchmarkParseCorpus(b *testing.B) {
	files := readCorpus(b, corpusDir(b, "obsidian-hub"))
	var total int64
	for _, f := range files {
		total += int64(len(f.src))
	}
	b.SetBytes(total / int64(len(files)))
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		f := files[i%len(files)]
		Parse(f.src, Options{Path: f.rel})
		i++
	}
}
