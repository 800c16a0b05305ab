package markdown

import (
	"reflect"
	"strings"
	"testing"
)

// lines joins its arguments with "\n" and a final newline.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestSplitFrontmatter(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		yaml     string
		bodyLine int
		ok       bool
	}{
		{"none", "# Title\n", "", 1, false},
		{"empty file", "", "", 1, false},
		{"simple", "---\na: 1\n---\nbody\n", "a: 1\n", 4, true},
		{"dots close", "---\na: 1\n...\nbody\n", "a: 1\n", 4, true},
		{"bom", "\uFEFF---\na: 1\n---\n", "a: 1\n", 4, true},
		{"crlf", "---\r\na: 1\r\nb: 2\r\n---\r\nbody\r\n", "a: 1\r\nb: 2\r\n", 5, true},
		{"trailing spaces on fences", "--- \na: 1\n---\t\n", "a: 1\n", 4, true},
		{"close at EOF", "---\na: 1\n---", "a: 1\n", 4, true},
		{"empty block", "---\n---\nbody\n", "", 3, true},
		{"unterminated", "---\na: 1\nbody\n", "", 1, false},
		{"only fence", "---\n", "", 1, false},
		{"four dashes", "----\na: 1\n---\n", "", 1, false},
		{"not first line", "\n---\na: 1\n---\n", "", 1, false},
		{"indented fence", " ---\na: 1\n---\n", "", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y, bl, ok := SplitFrontmatter([]byte(tt.src))
			if string(y) != tt.yaml || bl != tt.bodyLine || ok != tt.ok {
				t.Errorf("got (%q, %d, %v), want (%q, %d, %v)", y, bl, ok, tt.yaml, tt.bodyLine, tt.ok)
			}
		})
	}
}

func TestFrontmatterValues(t *testing.T) {
	src := lines("---",
		"title: Hello",
		"id: 20240115103000",
		"created: 2024-01-15",
		"updated: 2024-01-15T10:00:00",
		"when: 2024-01-15",
		"quoted: \"2024-01-15\"",
		"n: 42",
		"hex: 0x1F",
		"neg: -7",
		"f: 1.5",
		"inf: .inf",
		"yes: true",
		"no: False",
		"null1:",
		"null2: ~",
		"list: [a, 1, true]",
		"map: {k: v, n: 2}",
		"bin: !!binary aGk=",
		"custom: !mytag 12",
		"nested: [[X]]",
		"strnum: '12'",
		"---",
		"body")
	d := Parse([]byte(src), Options{})
	if d.FrontmatterError != "" {
		t.Fatal(d.FrontmatterError)
	}
	want := map[string]any{
		"title":   "Hello",
		"id":      "20240115103000",
		"created": "2024-01-15",
		"updated": "2024-01-15T10:00:00",
		"when":    "2024-01-15",
		"quoted":  "2024-01-15",
		"n":       int64(42),
		"hex":     int64(31),
		"neg":     int64(-7),
		"f":       1.5,
		"inf":     ".inf",
		"yes":     true,
		"no":      false,
		"null1":   nil,
		"null2":   nil,
		"list":    []any{"a", int64(1), true},
		"map":     map[string]any{"k": "v", "n": int64(2)},
		"bin":     "aGk=",
		"custom":  "12",
		"nested":  "[[X]]",
		"strnum":  "12",
	}
	if !reflect.DeepEqual(d.Frontmatter, want) {
		for k, v := range want {
			if !reflect.DeepEqual(d.Frontmatter[k], v) {
				t.Errorf("%s = %#v, want %#v", k, d.Frontmatter[k], v)
			}
		}
		t.Errorf("extra/missing keys: %v", d.FrontmatterKeys)
	}
	wantKeys := []string{"title", "id", "created", "updated", "when", "quoted", "n", "hex", "neg", "f", "inf",
		"yes", "no", "null1", "null2", "list", "map", "bin", "custom", "nested", "strnum"}
	if !reflect.DeepEqual(d.FrontmatterKeys, wantKeys) {
		t.Errorf("keys = %v", d.FrontmatterKeys)
	}
	if d.BodyLine != 24 {
		t.Errorf("BodyLine = %d", d.BodyLine)
	}
}

func TestFrontmatterErrors(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string // substring; "" means no error
		keys    int
	}{
		{"invalid", "a: [1, 2\n", "yaml:", 0},
		{"tab indent", "a:\n\tb: 1\n", "yaml:", 0},
		{"sequence top", "- a\n- b\n", "not a mapping", 0},
		{"scalar top", "just text\n", "not a mapping", 0},
		{"comment only", "# nothing\n", "", 0},
		{"empty", "", "", 0},
		{"duplicate keys last wins", "a: 1\na: 2\n", "", 1},
		{"anchors", "base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\ncopy: *b\n", "", 3},
		{"billion laughs", billionLaughs(), "too large", 0},
		{"deep nesting", "a: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n", "too large", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Parse([]byte("---\n"+tt.yaml+"---\n# Body Title\n[[Link]]\n"), Options{})
			if tt.wantErr == "" && d.FrontmatterError != "" {
				t.Errorf("unexpected error %q", d.FrontmatterError)
			}
			if tt.wantErr != "" {
				if !strings.Contains(d.FrontmatterError, tt.wantErr) {
					t.Errorf("error %q, want it to contain %q", d.FrontmatterError, tt.wantErr)
				}
				if d.Frontmatter != nil {
					t.Errorf("Frontmatter = %v, want nil on error", d.Frontmatter)
				}
			}
			if len(d.FrontmatterKeys) != tt.keys {
				t.Errorf("keys = %v, want %d", d.FrontmatterKeys, tt.keys)
			}
			// The body is parsed whatever happened to the frontmatter.
			if d.Title != "Body Title" || len(d.Links) != 1 {
				t.Errorf("body not parsed: title %q links %v", d.Title, d.Links)
			}
		})
	}
	d := Parse([]byte("---\nbase: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n---\n"), Options{})
	if want := map[string]any{"x": int64(1), "y": int64(2)}; !reflect.DeepEqual(d.Frontmatter["m"], want) {
		t.Errorf("merge: m = %#v", d.Frontmatter["m"])
	}
}

// billionLaughs builds YAML whose alias expansion would be 10^9 nodes.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestTitle(t *testing.T) {
	tests := []struct {
		name, src string
		opts      Options
		title     string
		source    string
	}{
		{"frontmatter", "---\ntitle: FM\n---\n# H1\n", Options{Path: "a/Note.md"}, "FM", "frontmatter"},
		{"frontmatter non-string", "---\ntitle: 12\n---\n# H1\n", Options{Path: "a/Note.md"}, "H1", "h1"},
		{"h1", "intro\n## H2\n# H1 [[x]]\n", Options{Path: "a/Note.md"}, "H1 [[x]]", "h1"},
		{"setext h1", "Big Title\n=====\n", Options{Path: "Note.md"}, "Big Title", "h1"},
		{"h1 in code ignored", "```\n# Not\n```\n", Options{Path: "dir/My Note.md"}, "My Note", "filename"},
		{"filename", "text\n", Options{Path: "dir/My Note.md"}, "My Note", "filename"},
		{"windows path", "text\n", Options{Path: `dir\sub\Note.MD`}, "Note", "filename"},
		{"no path", "text\n", Options{}, "", ""},
		{"logseq property", "title:: Custom\n- block\n", Options{Path: "pages/x.md", Logseq: true}, "Custom", "property"},
		{"logseq h1 not title", "- # Heading\n", Options{Path: "pages/a___b.md", Logseq: true}, "a/b", "filename"},
		{"logseq yaml beats property", "---\ntitle: Y\n---\ntitle:: P\n", Options{Path: "pages/x.md", Logseq: true}, "Y", "frontmatter"},
		{"journal", "- entry\n", Options{Path: "journals/2021_03_01.md", Logseq: true, Journal: true}, "Mar 1st, 2021", "filename"},
		{"journal bad date", "- entry\n", Options{Path: "journals/notes.md", Logseq: true, Journal: true}, "notes", "filename"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Parse([]byte(tt.src), tt.opts)
			if d.Title != tt.title || d.TitleSource != tt.source {
				t.Errorf("got %q (%s), want %q (%s)", d.Title, d.TitleSource, tt.title, tt.source)
			}
		})
	}
}

func TestAliases(t *testing.T) {
	tests := []struct {
		name, src string
		logseq    bool
		want      []string
	}{
		{"list", "---\naliases:\n  - A\n  - B\n---\n", false, []string{"A", "B"}},
		{"string commas", "---\naliases: A, B ,, C\n---\n", false, []string{"A", "B", "C"}},
		{"alias key and dedupe", "---\nalias: [A, A, ' B ']\naliases: B\n---\n", false, []string{"A", "B"}},
		{"nulls skipped", "---\naliases:\n- \n---\n", false, nil},
		{"numbers", "---\naliases: [2024, x]\n---\n", false, []string{"2024", "x"}},
		{"logseq", "alias:: term/x, [[Other, Name]], [[Y]]\n- b\n", true, []string{"term/x", "Other, Name", "Y"}},
		{"logseq block alias ignored", "- b\n  alias:: nope\n", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Parse([]byte(tt.src), Options{Logseq: tt.logseq})
			if !reflect.DeepEqual(d.Aliases, tt.want) {
				t.Errorf("got %q, want %q", d.Aliases, tt.want)
			}
		})
	}
}

func TestFrontmatterTags(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"list", "tags: [a, '#b', c/d]", []string{"a", "b", "c/d"}},
		{"block list", "tags:\n  - a\n  - \n  - b", []string{"a", "b"}},
		{"string", "tags: a, b c  #d", []string{"a", "b", "c"}},
		{"quoted hash string", "tags: '#a #b'", []string{"a", "b"}},
		{"tag key", "tag: one", []string{"one"}},
		{"cjk", "tags: [笔记]", []string{"笔记"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Parse([]byte("---\n"+tt.yaml+"\n---\n"), Options{})
			var got []string
			for _, tg := range d.Tags {
				if tg.Source != "frontmatter" || tg.Line != 0 {
					t.Errorf("tag %+v", tg)
				}
				got = append(got, tg.Name)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func inlineTags(src string, logseq bool) []string {
	d := Parse([]byte(src), Options{Logseq: logseq})
	var out []string
	for _, t := range d.Tags {
		if t.Source == "inline" {
			out = append(out, t.Name)
		}
	}
	return out
}

func TestInlineTags(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{"#tag", []string{"tag"}},
		{"a #tag b", []string{"tag"}},
		{"#nested/tag/", []string{"nested/tag"}},
		{"#a-b_c #x.y", []string{"a-b_c", "x"}},
		{"(#paren) ,#comma [#br]", []string{"paren", "comma", "br"}},
		{"#123 #1a #a1 #2024-01", []string{"1a", "a1", "2024-01"}},
		{"C# a#b &#123; &#x1F; /#x ##double \\#esc _#u", nil},
		{"# Heading #intitle", []string{"intitle"}},
		{"## Heading", nil},
		{"http://x.com/#frag https://x.com/page#frag www.x.com/#y", nil},
		{"<https://x.com/#frag> and <a href=\"#top\">#real</a>", []string{"real"}},
		{"[[Note#Heading]] [[#Local]] [a](b.md#anchor) [b](#only)", nil},
		{"`#code` ``#code ` x`` #after", []string{"after"}},
		{"%% #hidden %% #shown %%#also-hidden", []string{"shown"}},
		{"#笔记 #日本語/タグ #한국어 #café", []string{"笔记", "日本語/タグ", "한국어", "café"}},
		{"中文#不是", nil},
		{"#हिन्दी", []string{"हिन्दी"}},
		{"#/ #- #_", []string{"-", "_"}},
		{"```\n#incode\n```\n#out", []string{"out"}},
		{"~~~~\n```\n#incode\n~~~~\n#out", []string{"out"}},
		{"%%\n#hidden\n%%\n#out", []string{"out"}},
		{"text #tag,more #end.", []string{"tag", "end"}},
	}
	for _, tt := range tests {
		if got := inlineTags(tt.src, false); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestLogseqInlineTags(t *testing.T) {
	d := Parse([]byte("- #tag and #[[multi word tag]] TODO [#A] #[[unclosed\n"), Options{Logseq: true})
	var got []string
	for _, tg := range d.Tags {
		got = append(got, tg.Name)
	}
	if want := []string{"tag", "multi word tag"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tags = %q, want %q", got, want)
	}
	var refs []string
	for _, l := range d.Links {
		if l.Kind == LinkTagRef {
			refs = append(refs, l.Target)
		}
	}
	if want := []string{"tag", "multi word tag"}; !reflect.DeepEqual(refs, want) {
		t.Errorf("tag refs = %q, want %q", refs, want)
	}
}

func TestHeadings(t *testing.T) {
	tests := []struct {
		name, src string
		want      []Heading
	}{
		{"atx levels", "# One\n## Two\n###### Six\n####### Seven\n", []Heading{{1, "One", 1}, {2, "Two", 2}, {6, "Six", 3}}},
		{"closing hashes", "## Two ##\n# Three#\n# ###\n", []Heading{{2, "Two", 1}, {1, "Three#", 2}, {1, "", 3}}},
		{"empty heading", "#\n", []Heading{{1, "", 1}}},
		{"indent", "   # Three spaces\n    # Four spaces\n", []Heading{{1, "Three spaces", 1}}},
		{"no space", "#tag\n#\tTab\n", []Heading{{1, "Tab", 2}}},
		{"setext", "Title\n===\n\nSub\n---\n", []Heading{{1, "Title", 1}, {2, "Sub", 4}}},
		{"setext multi-line", "Line one\nline two\n---\n", []Heading{{2, "Line one line two", 1}}},
		{"hr after blank", "Para\n\n---\n", nil},
		{"short underline", "Para\n--\n", nil},
		{"list item not setext", "- item\n---\n", nil},
		{"table not setext", "| a |\n---\n", nil},
		{"frontmatter not setext", "---\na: 1\n---\n", nil},
		{"setext after heading", "# H\n---\n", []Heading{{1, "H", 1}}},
		{"in fence", "```\n# no\n```\n~~~\n# no\n~~~\n# yes\n", []Heading{{1, "yes", 7}}},
		{"unterminated fence", "```\n# no\n", nil},
		{"in comment", "%%\n# no\n%%\n", nil},
		{"crlf", "# A\r\nB\r\n===\r\n", []Heading{{1, "A", 1}, {1, "B", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Parse([]byte(tt.src), Options{})
			if !reflect.DeepEqual(d.Headings, tt.want) {
				t.Errorf("got %+v, want %+v", d.Headings, tt.want)
			}
		})
	}
}

func TestLogseqHeadings(t *testing.T) {
	d := Parse([]byte("- ## Usage\n\t- ### Sub\n\t- not #heading\n# Col zero\n"), Options{Logseq: true})
	want := []Heading{{2, "Usage", 1}, {3, "Sub", 2}, {1, "Col zero", 4}}
	if !reflect.DeepEqual(d.Headings, want) {
		t.Errorf("got %+v, want %+v", d.Headings, want)
	}
}

func TestChunks(t *testing.T) {
	src := lines(
		"---",             // 1
		"title: x",        // 2
		"---",             // 3
		"Intro text.",     // 4
		"",                // 5
		"# A",             // 6
		"",                // 7
		"under a",         // 8
		"",                // 9
		"## B",            // 10
		"under b",         // 11
		"### C",           // 12
		"## D",            // 13
		"",                // 14
		"under d",         // 15
		"",                // 16
		"",                // 17
		"# E",             // 18
		"```",             // 19
		"# not a heading", // 20
		"```",             // 21
	)
	d := Parse([]byte(src), Options{})
	want := []Chunk{
		{nil, 4, 4, "Intro text."},
		{[]string{"A"}, 6, 8, "under a"},
		{[]string{"A", "B"}, 10, 11, "under b"},
		{[]string{"A", "B", "C"}, 12, 12, ""},
		{[]string{"A", "D"}, 13, 15, "under d"},
		{[]string{"E"}, 18, 21, "```\n# not a heading\n```"},
	}
	if !reflect.DeepEqual(d.Chunks, want) {
		t.Errorf("got\n%+v\nwant\n%+v", d.Chunks, want)
	}

	// No heading, blank body: no chunks.
	if d := Parse([]byte("---\na: 1\n---\n\n  \n"), Options{}); len(d.Chunks) != 0 {
		t.Errorf("blank body chunks: %+v", d.Chunks)
	}
	// CRLF text is normalised to "\n".
	if d := Parse([]byte("# H\r\na\r\nb\r\n"), Options{}); len(d.Chunks) != 1 || d.Chunks[0].Text != "a\nb" {
		t.Errorf("crlf chunks: %+v", d.Chunks)
	}
}

func TestChunkSplitting(t *testing.T) {
	para := func(word string, n int) string { return strings.TrimSpace(strings.Repeat(word+" ", n)) }
	// Three 59-byte paragraphs with limit 130: two fit together, the third does not.
	src := lines("# H", para("aaaaa", 10), "", para("bbbbb", 10), "", para("ccccc", 10))
	d := Parse([]byte(src), Options{MaxChunkChars: 130})
	if len(d.Chunks) != 2 {
		t.Fatalf("chunks: %+v", d.Chunks)
	}
	if c := d.Chunks[0]; c.StartLine != 1 || c.EndLine != 4 || !strings.HasPrefix(c.Text, "aaaaa") || !strings.HasSuffix(c.Text, "bbbbb") {
		t.Errorf("chunk 0: %+v", c)
	}
	if c := d.Chunks[1]; c.StartLine != 6 || c.EndLine != 6 || c.HeadingPath[0] != "H" {
		t.Errorf("chunk 1: %+v", c)
	}

	// A fenced block with blank lines inside is never split at those blanks.
	code := lines("```", para("x", 30), "", para("y", 30), "", para("z", 30), "```")
	d = Parse([]byte("# H\n"+code+"\nafter\n"), Options{MaxChunkChars: 100})
	if len(d.Chunks) != 2 || !strings.HasPrefix(d.Chunks[0].Text, "```") || !strings.HasSuffix(d.Chunks[0].Text, "```") {
		t.Errorf("code chunks: %+v", d.Chunks)
	}

	// A paragraph larger than 4x the limit is cut at line boundaries.
	var big []string
	for range 40 {
		big = append(big, para("w", 20))
	}
	d = Parse([]byte(lines(big...)), Options{MaxChunkChars: 100})
	if len(d.Chunks) < 10 {
		t.Errorf("big paragraph: %d chunks", len(d.Chunks))
	}
	for _, c := range d.Chunks {
		if len(c.Text) > 100 {
			t.Errorf("piece too long: %d", len(c.Text))
		}
	}
	// A paragraph between 1x and 4x the limit stays whole.
	d = Parse([]byte(lines(big[:8]...)), Options{MaxChunkChars: 100})
	if len(d.Chunks) != 1 {
		t.Errorf("medium paragraph: %d chunks", len(d.Chunks))
	}
}

func TestLinks(t *testing.T) {
	tests := []struct {
		src  string
		want []Link
	}{
		{"[[Note]]", []Link{{Kind: LinkWiki, Target: "Note"}}},
		{"[[ Note | Alias ]]", []Link{{Kind: LinkWiki, Target: "Note", Display: "Alias"}}},
		{"[[Note#Heading]]", []Link{{Kind: LinkWiki, Target: "Note", Heading: "Heading"}}},
		{"[[Note#Heading|alias]]", []Link{{Kind: LinkWiki, Target: "Note", Heading: "Heading", Display: "alias"}}},
		{"[[Note#^blockid]]", []Link{{Kind: LinkWiki, Target: "Note", BlockID: "blockid"}}},
		{"[[#Heading]]", []Link{{Kind: LinkWiki, Heading: "Heading"}}},
		{"[[Folder/Note.md]]", []Link{{Kind: LinkWiki, Target: "Folder/Note.md"}}},
		{"![[embed]] ![[image.png|100]]", []Link{{Kind: LinkEmbed, Target: "embed"}, {Kind: LinkEmbed, Target: "image.png", Display: "100"}}},
		{"| [[Note\\|alias]] |", []Link{{Kind: LinkWiki, Target: "Note", Display: "alias"}}},
		{"[[]] [[ ]] [[unclosed", nil},
		{"[[a [[b]]", []Link{{Kind: LinkWiki, Target: "b"}}},
		{"[text](path/Note.md)", []Link{{Kind: LinkMarkdown, Target: "path/Note.md", Display: "text"}}},
		{"[t](Note%20Name.md#Some%20Heading)", []Link{{Kind: LinkMarkdown, Target: "Note Name.md", Heading: "Some Heading", Display: "t"}}},
		{"[t](<path with spaces.md>)", []Link{{Kind: LinkMarkdown, Target: "path with spaces.md", Display: "t"}}},
		{"[t](Note.md#^blk \"title\")", []Link{{Kind: LinkMarkdown, Target: "Note.md", BlockID: "blk", Display: "t"}}},
		{"[t](../up/x_(1).md)", []Link{{Kind: LinkMarkdown, Target: "../up/x_(1).md", Display: "t"}}},
		{"![alt](img/x.png)", []Link{{Kind: LinkEmbed, Target: "img/x.png", Display: "alt"}}},
		{"[![badge](b.svg)](https://x.y)", []Link{{Kind: LinkEmbed, Target: "b.svg", Display: "badge"}}},
		{"[a](http://x) [b](https://x) [c](mailto:a@b) [d](obsidian://open) [e](file:///x) [f](data:x) [g](#anchor) [h](//cdn/x) [i]()", nil},
		{"[spaces](My Note.md) [unclosed](x.md", nil},
		{"`[[code]]` ``[x](y.md)`` [[after]]", []Link{{Kind: LinkWiki, Target: "after"}}},
		{"%% [[hidden]] %% [[shown]]", []Link{{Kind: LinkWiki, Target: "shown"}}},
		{"\\[[not]] [[yes]]", []Link{{Kind: LinkWiki, Target: "yes"}}},
		{"<https://x.com/[[no]]> [[yes]]", []Link{{Kind: LinkWiki, Target: "yes"}}},
		{"((61024cd6-1951-47cc-8050-25f68960d729))", nil}, // block refs only in Logseq
	}
	for _, tt := range tests {
		d := Parse([]byte(tt.src), Options{})
		for i := range d.Links {
			d.Links[i].Line = 0
			d.Links[i].Context = "" // anchors_test.go
		}
		if !reflect.DeepEqual(d.Links, tt.want) {
			t.Errorf("%q:\n got  %+v\n want %+v", tt.src, d.Links, tt.want)
		}
	}
}

func TestLinksNotInCode(t *testing.T) {
	src := lines("```", "[[a]] ![[b]] [c](c.md)", "```", "    ```", "[[d]]", "    ```", "> ```", "> [[e]]", "> ```", "[[f]]")
	d := Parse([]byte(src), Options{})
	if len(d.Links) != 1 || d.Links[0].Target != "f" || d.Links[0].Line != 10 {
		t.Errorf("links: %+v", d.Links)
	}
}

func TestTypedLinksYAML(t *testing.T) {
	src := lines("---",
		"up: [[Parent]]",
		"quoted: \"[[Q|alias]] and [[R#H]]\"",
		"list:",
		"  - [[L1]]",
		"  - \"[[L2]]\"",
		"  - plain",
		"flow: [\"[[F1]]\", \"[[F2]]\"]",
		"tags: [\"[[not typed]]\"]",
		"aliases: [\"[[not typed]]\"]",
		"nested: {a: \"[[no]]\"}",
		"plain: no links",
		"---")
	d := Parse([]byte(src), Options{})
	want := []Link{
		{Kind: LinkTyped, Key: "up", Target: "Parent", Line: 2},
		{Kind: LinkTyped, Key: "quoted", Target: "Q", Display: "alias", Line: 3},
		{Kind: LinkTyped, Key: "quoted", Target: "R", Heading: "H", Line: 3},
		{Kind: LinkTyped, Key: "list", Target: "L1", Line: 5},
		{Kind: LinkTyped, Key: "list", Target: "L2", Line: 6},
		{Kind: LinkTyped, Key: "flow", Target: "F1", Line: 8},
		{Kind: LinkTyped, Key: "flow", Target: "F2", Line: 8},
	}
	if !reflect.DeepEqual(d.Links, want) {
		t.Errorf("got\n%+v\nwant\n%+v", d.Links, want)
	}
	if d.Frontmatter["up"] != "[[Parent]]" || !reflect.DeepEqual(d.Frontmatter["list"], []any{"[[L1]]", "[[L2]]", "plain"}) {
		t.Errorf("frontmatter: %#v", d.Frontmatter)
	}
	// With a BOM and CRLF the lines stay the same.
	crlf := "\uFEFF" + strings.ReplaceAll(src, "\n", "\r\n")
	d2 := Parse([]byte(crlf), Options{})
	if !reflect.DeepEqual(d2.Links, want) {
		t.Errorf("crlf+bom links differ:\n%+v", d2.Links)
	}
}

func TestTasks(t *testing.T) {
	tests := []struct {
		src  string
		want []Task
	}{
		{"- [ ] todo", []Task{task(1, "todo", "todo")}},
		{"* [x] done\n+ [X] Done", []Task{task(1, "done", "done"), task(2, "done", "Done")}},
		{"1. [-] gone\n2) [/] going", []Task{task(1, "cancelled", "gone"), task(2, "in_progress", "going")}},
		{"- [?] question\n- [>] later\n- [D] upper", []Task{task(1, "?", "question"), task(2, ">", "later"), task(3, "d", "upper")}},
		{"  - [ ] nested\n> - [ ] quoted\n\t- [ ]", []Task{task(1, "todo", "nested"), task(2, "todo", "quoted"), task(3, "todo", "")}},
		{"- [] no\n- [ ]no\n-[ ] no\n[ ] no\n- [xx] no\n- [ ] ", []Task{task(6, "todo", "")}},
		{"```\n- [ ] in code\n```", nil},
		{"- [é] unicode", []Task{task(1, "é", "unicode")}},
	}
	for _, tt := range tests {
		d := Parse([]byte(tt.src), Options{})
		if !reflect.DeepEqual(noMarkers(d.Tasks), tt.want) {
			t.Errorf("%q: got %+v, want %+v", tt.src, d.Tasks, tt.want)
		}
	}
}

func TestLogseqTasks(t *testing.T) {
	src := lines("- TODO a", "- LATER b", "- DOING c", "- NOW d", "- DONE e", "- CANCELED f", "- CANCELLED g",
		"- WAITING h", "- TODOS not", "- todo not", "- ## TODO heading task", "\t- child DONE not")
	d := Parse([]byte(src), Options{Logseq: true})
	want := []Task{task(1, "todo", "a"), task(2, "todo", "b"), task(3, "in_progress", "c"), task(4, "in_progress", "d"),
		task(5, "done", "e"), task(6, "cancelled", "f"), task(7, "cancelled", "g"), task(8, "waiting", "h"), task(11, "todo", "heading task")}
	if !reflect.DeepEqual(noMarkers(d.Tasks), want) {
		t.Errorf("got %+v\nwant %+v", d.Tasks, want)
	}
}

func task(line int, status, text string) Task { return Task{Line: line, Status: status, Text: text} }

// noMarkers drops the markers (tested in tasks_test.go).
func noMarkers(ts []Task) []Task {
	if ts == nil {
		return nil
	}
	out := make([]Task, len(ts))
	for i, t := range ts {
		t.Marker = ""
		out[i] = t
	}
	return out
}

func TestBlockIDs(t *testing.T) {
	tests := []struct {
		src  string
		want []BlockID
	}{
		{"Para ^abc-123", []BlockID{{"abc-123", 1}}},
		{"Para ^abc  \t", []BlockID{{"abc", 1}}},
		{"^own-line", []BlockID{{"own-line", 1}}},
		{"x^no", nil},
		{"Para ^bad_id", nil},
		{"Para ^id more", nil},
		{"`code ^id`", nil},
		{"```\nx ^id\n```", nil},
		{"[^1]: footnote", nil},
		{"%% x ^id %%", nil},
	}
	for _, tt := range tests {
		d := Parse([]byte(tt.src), Options{})
		if !reflect.DeepEqual(d.BlockIDs, tt.want) {
			t.Errorf("%q: got %+v, want %+v", tt.src, d.BlockIDs, tt.want)
		}
	}
}

func TestLogseqBlocks(t *testing.T) {
	src := lines(
		"tags:: page-tag", // 1 page property
		"owner:: [[Bob]]", // 2
		"",                // 3
		"- top one",       // 4
		"  id:: 11111111-1111-1111-1111-111111111111", // 5
		"  more text", // 6
		"\t- child",   // 7
		"\t  ID:: 22222222-2222-2222-2222-222222222222",             // 8
		"\t\t- grandchild ((11111111-1111-1111-1111-111111111111))", // 9
		"\t- second child",         // 10
		"    - mixed spaces child", // 11: the only space-indented bullet sets the unit to 4, so one tab = 4 spaces
		"- top two",                // 12
		"-",                        // 13
		"  key:: [[V1]], [[V2]]",   // 14
	)
	d := Parse([]byte(src), Options{Logseq: true})
	type bl struct {
		parent, depth, line, end int
		content, uuid            string
	}
	var got []bl
	for _, b := range d.Blocks {
		got = append(got, bl{b.Parent, b.Depth, b.Line, b.EndLine, b.Content, b.UUID})
	}
	want := []bl{
		{-1, 0, 4, 6, "top one\nmore text", "11111111-1111-1111-1111-111111111111"},
		{0, 1, 7, 8, "child", "22222222-2222-2222-2222-222222222222"},
		{1, 2, 9, 9, "grandchild ((11111111-1111-1111-1111-111111111111))", ""},
		{0, 1, 10, 10, "second child", ""},
		{0, 1, 11, 11, "mixed spaces child", ""},
		{-1, 0, 12, 12, "top two", ""},
		{-1, 0, 13, 14, "", ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blocks:\n got  %+v\n want %+v", got, want)
	}
	if d.Frontmatter["tags"] != "page-tag" || d.Frontmatter["owner"] != "[[Bob]]" {
		t.Errorf("page properties: %v", d.Frontmatter)
	}
	if len(d.Tags) != 1 || d.Tags[0] != (Tag{Name: "page-tag", Line: 1, Source: "property"}) {
		t.Errorf("tags: %+v", d.Tags)
	}
	wantLinks := []Link{
		{Kind: LinkTyped, Key: "owner", Target: "Bob", Line: 2},
		{Kind: LinkBlockRef, Target: "11111111-1111-1111-1111-111111111111", Line: 9},
		{Kind: LinkTyped, Key: "key", Target: "V1", Line: 14},
		{Kind: LinkTyped, Key: "key", Target: "V2", Line: 14},
	}
	if !reflect.DeepEqual(d.Links, wantLinks) {
		t.Errorf("links:\n got  %+v\n want %+v", d.Links, wantLinks)
	}
	if p := d.Blocks[6].Properties; p["key"] != "[[V1]], [[V2]]" {
		t.Errorf("block properties: %v", p)
	}
}

func TestLogseqCode(t *testing.T) {
	src := lines(
		"- ```clojure",
		"  - not a block [[no]] #no",
		"  key:: not a property",
		"  ```",
		"- after [[yes]]",
		"- ```",
		"  unterminated [[no]]",
		"- bullet at same level ends it [[yes2]]",
	)
	d := Parse([]byte(src), Options{Logseq: true})
	if len(d.Blocks) != 4 {
		t.Fatalf("blocks: %+v", d.Blocks)
	}
	if d.Blocks[0].Properties != nil || !strings.Contains(d.Blocks[0].Content, "key:: not a property") {
		t.Errorf("block 0: %+v", d.Blocks[0])
	}
	var targets []string
	for _, l := range d.Links {
		targets = append(targets, l.Target)
	}
	if !reflect.DeepEqual(targets, []string{"yes", "yes2"}) || len(d.Tags) != 0 {
		t.Errorf("links %q tags %+v", targets, d.Tags)
	}
}

func TestLogseqChunks(t *testing.T) {
	src := lines(
		"type:: [[X]]",
		"",
		"- ## Usage",
		"\t- under usage",
		"- small one",
		"- small two",
		"\t- child of two",
		"- ## Empty heading",
		"- type:: [[Only Props]]",
		"- last",
	)
	d := Parse([]byte(src), Options{Logseq: true})
	want := []Chunk{
		{[]string{"Usage"}, 3, 4, "under usage"},
		{nil, 5, 7, "small one\nsmall two\nchild of two"},
		{[]string{"Empty heading"}, 8, 8, ""},
		{nil, 10, 10, "last"},
	}
	if !reflect.DeepEqual(d.Chunks, want) {
		t.Errorf("got\n%+v\nwant\n%+v", d.Chunks, want)
	}
	// Small blocks merge only up to the limit.
	d = Parse([]byte(lines("- aaaaaaaaaa", "- bbbbbbbbbb", "- cccccccccc")), Options{Logseq: true, MaxChunkChars: 21})
	if len(d.Chunks) != 2 || d.Chunks[0].Text != "aaaaaaaaaa\nbbbbbbbbbb" {
		t.Errorf("merge: %+v", d.Chunks)
	}
	// A large subtree is split at block boundaries, keeping the heading path.
	d = Parse([]byte(lines("- ## H", "\t- "+strings.Repeat("a", 15), "\t- "+strings.Repeat("b", 15), "\t- "+strings.Repeat("c", 15))), Options{Logseq: true, MaxChunkChars: 32})
	if len(d.Chunks) != 2 || d.Chunks[1].HeadingPath[0] != "H" || d.Chunks[0].StartLine != 1 || d.Chunks[1].StartLine != 4 {
		t.Errorf("split: %+v", d.Chunks)
	}
}

func TestLogseqPreBlock(t *testing.T) {
	d := Parse([]byte(lines("- title:: Pre", "  alias:: p1, p2", "  tags:: t", "- body")), Options{Path: "pages/x.md", Logseq: true})
	if d.Title != "Pre" || d.TitleSource != "property" {
		t.Errorf("title %q (%s)", d.Title, d.TitleSource)
	}
	if !reflect.DeepEqual(d.Aliases, []string{"p1", "p2"}) || len(d.Tags) != 1 || d.Tags[0].Source != "property" {
		t.Errorf("aliases %v tags %v", d.Aliases, d.Tags)
	}
	if !reflect.DeepEqual(d.FrontmatterKeys, []string{"title", "alias", "tags"}) {
		t.Errorf("keys %v", d.FrontmatterKeys)
	}
	// Properties in a later block are not page properties.
	d = Parse([]byte(lines("- body", "- title:: Not Page")), Options{Path: "pages/x.md", Logseq: true})
	if d.Title != "x" || d.Frontmatter != nil {
		t.Errorf("title %q fm %v", d.Title, d.Frontmatter)
	}
}

func TestLogseqPageName(t *testing.T) {
	tests := map[string]string{
		"pages/Block Reference.md":           "Block Reference",
		"pages/Whiteboard___Action Bar.md":   "Whiteboard/Action Bar",
		"pages/a%2Fb.md":                     "a/b",
		"pages/New to Logseq%3F.md":          "New to Logseq?",
		"pages/100%.md":                      "100%",
		"journals/2020_09_14.md":             "2020_09_14",
		"custom.css.md":                      "custom.css",
		`pages\win___path.MD`:                "win/path",
		"":                                   "",
		"pages/Tweet___This 1 Tiny...___.md": "Tweet/This 1 Tiny.../",
	}
	for in, want := range tests {
		if got := LogseqPageName(in); got != want {
			t.Errorf("LogseqPageName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJournalTitle(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"2020_09_14", "Sep 14th, 2020", true},
		{"2021_01_01", "Jan 1st, 2021", true},
		{"2021_02_02", "Feb 2nd, 2021", true},
		{"2021_03_03", "Mar 3rd, 2021", true},
		{"2021_04_11", "Apr 11th, 2021", true},
		{"2021_05_12", "May 12th, 2021", true},
		{"2021_06_13", "Jun 13th, 2021", true},
		{"2021_07_21", "Jul 21st, 2021", true},
		{"2021_08_22", "Aug 22nd, 2021", true},
		{"2021_10_23", "Oct 23rd, 2021", true},
		{"2021_12_31", "Dec 31st, 2021", true},
		{"2024-02-29", "Feb 29th, 2024", true},
		{"2023_02_29", "", false},
		{"2021_13_01", "", false},
		{"2021_00_10", "", false},
		{"2021_01_32", "", false},
		{"2021_01-01", "", false},
		{"21_01_01", "", false},
		{"2021_+1_01", "", false},
		{"notes", "", false},
	}
	for _, tt := range tests {
		got, ok := JournalTitle(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("JournalTitle(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNormalizeTagAndKey(t *testing.T) {
	tests := []struct{ in, norm, key string }{
		{"#Tag", "Tag", "tag"},
		{"  ##Project/Alpha ", "Project/Alpha", "project/alpha"},
		{"# spaced", "spaced", "spaced"},
		{"Café", "Café", "café"},
		{"Cafe\u0301", "Cafe\u0301", "café"}, // decomposed → NFC
		{"ÄRGER", "ÄRGER", "ärger"},
		{"笔记", "笔记", "笔记"},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := NormalizeTag(tt.in); got != tt.norm {
			t.Errorf("NormalizeTag(%q) = %q, want %q", tt.in, got, tt.norm)
		}
		if got := TagKey(tt.in); got != tt.key {
			t.Errorf("TagKey(%q) = %q, want %q", tt.in, got, tt.key)
		}
	}
}

func TestNeverPanics(t *testing.T) {
	inputs := []string{
		"", "\n", "\r\n", "\uFEFF", "\uFEFF---", "---", "---\n", "---\n---", "---\r\n...\r\n",
		"\xff\xfe#\xff [[\xff]] #\xc3", "[[", "]]", "![[", "![", "[](", "[a](<", "#", "#[[", "((", "%%",
		"```", "~~~", "- ", "-", "\t\t\t- x", "  - a\n\t- b\n - c\n\t  d", "- ```\n\t- x",
		"a\n===", "===", "- [", "- [ ", "1.", "1. [", strings.Repeat("[", 10000), strings.Repeat("#", 10000),
		strings.Repeat("`", 10001), strings.Repeat("a", 1<<20),
		"---\n" + strings.Repeat("- ", 5000) + "x\n---\n",
		"---\n" + strings.Repeat("{", 5000) + "\n---\n",
		"key:: value", "- key::", "- ::", ":: x", "- #+BEGIN_SRC\n  x", "- #+BEGIN_QUERY",
	}
	for _, in := range inputs {
		for _, logseq := range []bool{false, true} {
			d := Parse([]byte(in), Options{Logseq: logseq, Path: "p/x.md", MaxChunkChars: 10})
			checkDoc(t, "input", []byte(in), d)
		}
	}
}
