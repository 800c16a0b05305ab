package markdown

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// corpusDir finds shared/corpora/<name> by walking up from the package
// directory (the corpora live beside the repository). It skips the test
// when the folder is absent, as it is for anyone who cloned the repo alone.
func corpusDir(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Skipf("corpus %s: %v", name, err)
	}
	for {
		c := filepath.Join(dir, "shared", "corpora", name)
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			return c
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skipf("corpus %s not found (looked for shared/corpora beside the repository); skipping", name)
		}
		dir = parent
	}
}

// corpusFile is one Markdown file of a corpus.
type corpusFile struct {
	rel string // slash-separated path relative to the corpus root
	src []byte
}

// readCorpus loads every .md file under root/sub (sub "" for all).
func readCorpus(tb testing.TB, root string, subs ...string) []corpusFile {
	tb.Helper()
	if len(subs) == 0 {
		subs = []string{""}
	}
	var out []corpusFile
	for _, sub := range subs {
		err := filepath.WalkDir(filepath.Join(root, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.EqualFold(filepath.Ext(p), ".md") {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			out = append(out, corpusFile{rel: filepath.ToSlash(rel), src: src})
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// linkCounts tallies links by kind.
func linkCounts(docs []*Doc) map[string]int {
	m := map[string]int{}
	for _, d := range docs {
		for _, l := range d.Links {
			m[l.Kind]++
		}
	}
	return m
}

func TestCorpusObsidianHub(t *testing.T) {
	root := corpusDir(t, "obsidian-hub")
	files := readCorpus(t, root)
	if len(files) < 6000 {
		t.Fatalf("expected ~6.5k notes, found %d", len(files))
	}
	var docs []*Doc
	tags, fm, fmErr := 0, 0, 0
	for _, f := range files {
		d := Parse(f.src, Options{Path: f.rel})
		checkDoc(t, f.rel, f.src, d)
		docs = append(docs, d)
		tags += len(d.Tags)
		if d.Frontmatter != nil {
			fm++
		}
		if d.FrontmatterError != "" {
			fmErr++
		}
	}
	c := linkCounts(docs)
	t.Logf("obsidian-hub: %d notes, links %v, %d tags, %d with frontmatter, %d frontmatter errors",
		len(files), c, tags, fm, fmErr)
	// The raw corpus has ~39k "[[" and 3.5k "![[", but ~3.4k of the embeds
	// are template leftovers inside %% comments ("%% ![[x#Sponsor]] %%"),
	// which are not links, and a few hundred links sit in code.
	if c[LinkWiki] < 36000 {
		t.Errorf("wikilinks = %d, want >= 36000", c[LinkWiki])
	}
	if c[LinkEmbed] < 100 {
		t.Errorf("embeds = %d, want >= 100", c[LinkEmbed])
	}
	if tags < 700 {
		t.Errorf("tags = %d, want >= 700", tags)
	}
	if fm < 6000 {
		t.Errorf("notes with frontmatter = %d, want >= 6000", fm)
	}

	for _, f := range files {
		if f.rel != "00 - Start here.md" {
			continue
		}
		d := Parse(f.src, Options{Path: f.rel})
		if d.Title != "00 - Start here" || d.TitleSource != "h1" {
			t.Errorf("Start here: title %q (%s)", d.Title, d.TitleSource)
		}
		want := []Link{
			{Kind: LinkEmbed, Target: "README", Heading: "What is the Obsidian Hub", Line: 10},
			{Kind: LinkWiki, Target: "Digital garden", Line: 13},
		}
		if len(d.Links) < 2 || noAnchor(d.Links[0]) != want[0] || noAnchor(d.Links[1]) != want[1] {
			t.Errorf("Start here: first links %+v", d.Links[:min(2, len(d.Links))])
		}
		var last Heading
		if len(d.Headings) > 0 {
			last = d.Headings[len(d.Headings)-1]
		}
		if last.Text != "This note in GitHub" {
			t.Errorf("Start here: headings %+v", d.Headings)
		}
	}
}

func TestCorpusObsidianHelp(t *testing.T) {
	root := corpusDir(t, "obsidian-help")
	files := readCorpus(t, root)
	var docs []*Doc
	for _, f := range files {
		d := Parse(f.src, Options{Path: f.rel})
		checkDoc(t, f.rel, f.src, d)
		docs = append(docs, d)
	}
	c := linkCounts(docs)
	t.Logf("obsidian-help: %d notes, links %v", len(files), c)
	for _, f := range files {
		if f.rel != "en/Linking notes and files/Internal links.md" {
			continue
		}
		d := Parse(f.src, Options{Path: f.rel})
		if !slices.Equal(d.Aliases, []string{"How to/Internal link", "How to/Link to blocks"}) {
			t.Errorf("Internal links: aliases %v", d.Aliases)
		}
		if len(d.BlockIDs) == 0 || d.BlockIDs[0] != (BlockID{ID: "b15695", Line: 13}) {
			t.Errorf("Internal links: block ids %v", d.BlockIDs)
		}
		if !slices.Contains(noAnchors(d.Links), Link{Kind: LinkWiki, Target: "Settings", Heading: "Files and links", Display: "Files and links", Line: 17}) {
			t.Errorf("Internal links: missing [[Settings#Files and links|...]] in %v", d.Links[:min(5, len(d.Links))])
		}
		for _, l := range d.Links {
			if l.Target == "Three laws of motion" {
				t.Errorf("Internal links: link inside a code span: %+v", l)
			}
		}
	}
	// 7.2k "[[" and 0.9k "![[" in the raw text; the rest are examples in code.
	if c[LinkWiki] < 6000 || c[LinkEmbed] < 600 {
		t.Errorf("too few links: %v", c)
	}
}

func TestCorpusLogseqDocs(t *testing.T) {
	root := corpusDir(t, "logseq-docs")
	files := readCorpus(t, root, "pages", "journals")
	if len(files) < 300 {
		t.Fatalf("expected ~318 pages and journals, found %d", len(files))
	}
	var docs []*Doc
	uuids, blocks, props := 0, 0, 0
	byName := map[string]*Doc{}
	for _, f := range files {
		d := Parse(f.src, Options{Path: f.rel, Logseq: true, Journal: strings.HasPrefix(f.rel, "journals/")})
		checkDoc(t, f.rel, f.src, d)
		docs = append(docs, d)
		byName[f.rel] = d
		blocks += len(d.Blocks)
		for _, b := range d.Blocks {
			if b.UUID != "" {
				uuids++
			}
			props += len(b.Properties)
		}
	}
	c := linkCounts(docs)
	t.Logf("logseq-docs: %d files, %d blocks, %d block uuids, %d block properties, links %v",
		len(files), blocks, uuids, props, c)
	if uuids < 120 {
		t.Errorf("block uuids = %d, want >= 120", uuids)
	}
	if c[LinkBlockRef] < 60 {
		t.Errorf("blockrefs = %d, want >= 60", c[LinkBlockRef])
	}
	if c[LinkWiki] < 1000 || c[LinkTyped] < 200 || c[LinkTagRef] < 50 {
		t.Errorf("too few links: %v", c)
	}

	d := byName["pages/Block Reference.md"]
	if d == nil {
		t.Fatal("pages/Block Reference.md not parsed")
	}
	for _, k := range []string{"type", "platforms", "alias", "description"} {
		if _, ok := d.Frontmatter[k]; !ok {
			t.Errorf("Block Reference: page property %q missing (keys %v)", k, d.FrontmatterKeys)
		}
	}
	if !slices.Contains(d.Aliases, "term/block reference") {
		t.Errorf("Block Reference: aliases = %v", d.Aliases)
	}
	typed := map[string]string{}
	for _, l := range d.Links {
		if l.Kind == LinkTyped {
			typed[l.Key] = l.Target
		}
	}
	if typed["type"] != "Feature" || typed["platforms"] != "All Platforms" {
		t.Errorf("Block Reference: typed links = %v", typed)
	}
	if d.Title != "Block Reference" || d.TitleSource != "filename" {
		t.Errorf("Block Reference: title = %q (%s)", d.Title, d.TitleSource)
	}
	if len(d.Headings) == 0 || d.Headings[0].Text != "Usage" {
		t.Errorf("Block Reference: headings = %v", d.Headings)
	}

	if d := byName["pages/New to Logseq%3F.md"]; d == nil || d.Title != "New to Logseq?" {
		t.Errorf("New to Logseq%%3F: %+v", d)
	}
	if d := byName["journals/2020_09_14.md"]; d == nil || d.Title != "Sep 14th, 2020" || d.TitleSource != "frontmatter" {
		t.Errorf("journal 2020_09_14: %+v", d)
	}
	// A tab-indented page: Zotero has nested blocks with ids after the first line.
	if d := byName["pages/Zotero.md"]; d != nil {
		found := false
		for _, b := range d.Blocks {
			if b.UUID == "6103e488-22d4-4751-b27a-69b278067c26" {
				found = true
				if b.Depth != 1 || strings.Contains(b.Content, "id::") || !strings.Contains(b.Content, "zotero-search.gif") {
					t.Errorf("Zotero block: %+v", b)
				}
			}
		}
		if !found {
			t.Error("Zotero: block 6103e488 not found")
		}
	}
}

// checkDoc asserts the invariants every Doc must satisfy.
func checkDoc(t testing.TB, name string, src []byte, d *Doc) {
	t.Helper()
	n := countLines(src)
	in := func(what string, l int) {
		if l < 0 || l > n+1 {
			t.Errorf("%s: %s line %d outside [0,%d]", name, what, l, n+1)
		}
	}
	in("body", d.BodyLine)
	for _, x := range d.Tags {
		in("tag", x.Line)
		if x.Name == "" {
			t.Errorf("%s: empty tag at line %d", name, x.Line)
		}
	}
	for _, x := range d.Headings {
		in("heading", x.Line)
	}
	for _, x := range d.Links {
		in("link", x.Line)
	}
	for _, x := range d.Tasks {
		in("task", x.Line)
	}
	for _, x := range d.BlockIDs {
		in("block id", x.Line)
	}
	prev := 0
	for i, c := range d.Chunks {
		in("chunk start", c.StartLine)
		in("chunk end", c.EndLine)
		if c.StartLine > c.EndLine || c.StartLine < prev {
			t.Errorf("%s: chunk %d span %d-%d out of order (previous start %d)", name, i, c.StartLine, c.EndLine, prev)
		}
		prev = c.StartLine
	}
	for i, b := range d.Blocks {
		in("block", b.Line)
		in("block end", b.EndLine)
		if b.Parent >= i || b.Parent < -1 || b.Line > b.EndLine {
			t.Errorf("%s: block %d bad parent/span: %+v", name, i, b)
		}
		if b.Parent >= 0 && d.Blocks[b.Parent].Depth != b.Depth-1 {
			t.Errorf("%s: block %d depth %d under parent depth %d", name, i, b.Depth, d.Blocks[b.Parent].Depth)
		}
		if b.Parent == -1 && b.Depth != 0 {
			t.Errorf("%s: top-level block %d has depth %d", name, i, b.Depth)
		}
	}
}

// countLines counts lines the way Parse does (a final newline ends the last line).
func countLines(src []byte) int {
	n := strings.Count(string(src), "\n")
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// noAnchor is l without its anchor context (tested in anchors_test.go).
func noAnchor(l Link) Link {
	l.Context = ""
	return l
}

func noAnchors(ls []Link) []Link {
	out := make([]Link, len(ls))
	for i, l := range ls {
		out[i] = noAnchor(l)
	}
	return out
}
