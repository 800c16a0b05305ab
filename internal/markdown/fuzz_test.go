package markdown

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// fuzzSeeds returns the fixtures plus small tricky inputs.
func fuzzSeeds(tb testing.TB) [][]byte {
	seeds := [][]byte{
		[]byte(""),
		[]byte("---\ntitle: x\ntags: [a, b]\nup: [[P]]\n---\n# H\ntext #tag [[L|a]] ![[e.png]]\n"),
		[]byte("\uFEFF---\r\na: &a [1, *a]\r\n---\r\nSetext\r\n===\r\n"),
		[]byte("```\n[[x]]\n~~~\n```\n%% [[y]]\n%% ^id\n- [ ] task ^blk\n"),
		[]byte("type:: [[X]]\n\n- ## H\n  id:: 6103e488-22d4-4751-b27a-69b278067c26\n\t- ((6103e488-22d4-4751-b27a-69b278067c26)) #[[a b]]\n\t\t- TODO x\n"),
		[]byte("- ```\n  - y\n- #+BEGIN_QUERY\n  {{query}}\n  #+END_QUERY\n"),
		[]byte("[a](<b c.md>) [![i](j.png)](k.md) [x](y.md#^z \"t\") <https://a/#b>"),
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.md"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			seeds = append(seeds, b)
		}
	}
	return seeds
}

// FuzzParse checks that Parse never panics and that its output is consistent:
// every line number lies in [0, lines+1], chunks are ordered, blocks are a tree.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false, 0)
		f.Add(s, true, 40)
	}
	f.Fuzz(func(t *testing.T, src []byte, logseq bool, maxChunk int) {
		opts := Options{Path: "dir/2020_09_14.md", Logseq: logseq, Journal: logseq, MaxChunkChars: maxChunk % 4096}
		d := Parse(src, opts)
		checkDoc(t, "fuzz", src, d)
		limit := opts.MaxChunkChars
		if limit <= 0 {
			limit = DefaultMaxChunkChars
		}
		for _, c := range d.Chunks {
			if strings.Contains(c.Text, "\r\n") && !strings.Contains(string(src), "\r\r\n") {
				t.Errorf("chunk text keeps CRLF: %q", c.Text)
			}
		}
		// Inline findings point at lines that contain them.
		srcLines := strings.Split(string(src), "\n")
		lineHas := func(ln int, s string) bool {
			return ln >= 1 && ln <= len(srcLines) && strings.Contains(srcLines[ln-1], s)
		}
		for _, tg := range d.Tags {
			if tg.Source == "inline" && !lineHas(tg.Line, tg.Name) {
				t.Errorf("tag %q not on line %d", tg.Name, tg.Line)
			}
		}
		for _, l := range d.Links {
			// Wikilinks and embeds are stored as written; a Markdown
			// link's (or image embed's) destination may be
			// percent-decoded and backslash-unescaped.
			if (l.Kind == LinkWiki || l.Kind == LinkEmbed || l.Kind == LinkMarkdown) && l.Target != "" &&
				(l.Line < 1 || l.Line > len(srcLines) || !decodedIn(srcLines[l.Line-1], l.Target)) {
				t.Errorf("link %+v not on its line", l)
			}
			// Decoding never makes a control character (NUL, newline, ...)
			// that the line does not hold as written.
			for _, f := range []string{l.Target, l.Heading, l.BlockID} {
				for _, r := range f {
					if unicode.IsControl(r) && (l.Line < 1 || l.Line > len(srcLines) || !strings.ContainsRune(srcLines[l.Line-1], r)) {
						t.Errorf("link %+v holds control character %U not written on its line", l, r)
					}
				}
			}
			if l.Kind == LinkBlockRef && !lineHas(l.Line, l.Target) {
				t.Errorf("block ref %+v not on its line", l)
			}
		}
		for _, b := range d.BlockIDs {
			if !lineHas(b.Line, "^"+b.ID) {
				t.Errorf("block id %+v not on its line", b)
			}
		}
		for _, h := range d.Headings {
			if !lineHas(h.Line, strings.SplitN(h.Text, " ", 2)[0]) {
				t.Errorf("heading %+v not on its line", h)
			}
		}
		// Determinism.
		d2 := Parse(src, opts)
		if len(d2.Links) != len(d.Links) || len(d2.Chunks) != len(d.Chunks) || len(d2.Tags) != len(d.Tags) {
			t.Errorf("Parse is not deterministic")
		}
	})
}

// decodedIn reports whether want can be read from a run of line where each
// byte is written as itself, as a backslash escape ("\\_") or percent-encoded
// ("%20"): the ways a Markdown link destination may spell its target.
func decodedIn(line, want string) bool {
	failed := map[[2]int]bool{} // (i, j) pairs known not to match: linear, not exponential
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if j == len(want) {
			return true
		}
		if i >= len(line) || failed[[2]int{i, j}] {
			return false
		}
		defer func() { failed[[2]int{i, j}] = true }() // a success returns at once, so a revisit means failure
		c := want[j]
		if line[i] == c && match(i+1, j+1) {
			return true
		}
		if line[i] == '\\' && i+1 < len(line) && line[i+1] == c && match(i+2, j+1) {
			return true
		}
		if line[i] == '%' && i+2 < len(line) {
			if v, err := strconv.ParseUint(line[i+1:i+3], 16, 8); err == nil && byte(v) == c && match(i+3, j+1) {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(line); i++ {
		if match(i, 0) {
			return true
		}
	}
	return false
}

// FuzzSplitFrontmatter checks the returned slice lies inside src and the
// body line is consistent with the number of lines.
func FuzzSplitFrontmatter(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte("---\n---"))
	f.Add([]byte("\uFEFF---\r\n...\r\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		y, bodyLine, ok := SplitFrontmatter(src)
		if !ok {
			if y != nil || bodyLine != 1 {
				t.Fatalf("not ok but got (%q, %d)", y, bodyLine)
			}
			return
		}
		if bodyLine < 3 || bodyLine > countLines(src)+1 {
			t.Fatalf("bodyLine %d outside [3, %d]", bodyLine, countLines(src)+1)
		}
		if !strings.Contains(string(src), string(y)) {
			t.Fatalf("yaml %q not in src", y)
		}
		// The YAML text covers exactly the lines between the fences.
		if got := strings.Count(string(y), "\n"); got != bodyLine-3 {
			t.Fatalf("yaml has %d lines, body starts at %d", got, bodyLine)
		}
	})
}

// FuzzInline checks that links and tags found in a single line are well
// formed: tags are non-empty runs of tag characters, link lines are 1.
func FuzzInline(f *testing.F) {
	for _, s := range []string{
		"#tag [[a#b|c]] ![[d]] [e](f.md) `#x` %% #y %% #z",
		"#[[multi word]] ((6103e488-22d4-4751-b27a-69b278067c26)) [#A]",
		"&#123; C# http://x/#y <a href='#z'> \\#w",
		"[[a\\|b]] [![i](j.png)](k.md) [l](<m n.md>) ^blk",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, line string, logseq bool) {
		if strings.ContainsAny(line, "\r\n") {
			return
		}
		doc := &Doc{}
		sc := scanner{doc: doc, logseq: logseq}
		sc.scanLine(line, 1)
		for _, tg := range doc.Tags {
			if tg.Name == "" || tg.Line != 1 {
				t.Fatalf("bad tag %+v", tg)
			}
			if !logseq && (strings.ContainsAny(tg.Name, " #[]") || !utf8.ValidString(tg.Name) || strings.HasSuffix(tg.Name, "/")) {
				t.Fatalf("bad tag name %q", tg.Name)
			}
			if !strings.Contains(line, tg.Name) {
				t.Fatalf("tag %q not in line", tg.Name)
			}
		}
		for _, l := range doc.Links {
			if l.Line != 1 || l.Kind == "" {
				t.Fatalf("bad link %+v", l)
			}
			if l.Kind == LinkBlockRef && !isUUID(l.Target) {
				t.Fatalf("bad block ref %+v", l)
			}
			if l.Target == "" && l.Heading == "" && l.BlockID == "" {
				t.Fatalf("empty link %+v", l)
			}
		}
		for _, b := range doc.BlockIDs {
			if b.ID == "" || !strings.HasSuffix(strings.TrimRight(line, " \t"), b.ID) {
				t.Fatalf("bad block id %+v", b)
			}
		}
	})
}
