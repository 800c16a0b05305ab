package render

import (
	"strings"
	"testing"
)

// TestSyntax renders each construct with no resolver (the web package's
// tests cover embeds, attachments and block references against a real
// index) and checks the HTML, expected by hand.
func TestSyntax(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
		not       []string
	}{
		{"callout with title", "> [!warning] Mind the gap\n> body **bold**\n",
			[]string{`<div class="callout" data-callout="warning"><div class="callout-title">Mind the gap</div>`, "<p>body <strong>bold</strong></p>"},
			[]string{"[!warning]", "<blockquote>"}},
		{"callout default title, type lower-cased", "> [!NOTE]\n> plain\n",
			[]string{`data-callout="note"><div class="callout-title">Note</div>`, "<p>plain</p>"}, []string{"[!NOTE]"}},
		{"folded callout", "> [!faq]- Why?\n> Because.\n",
			[]string{`<details class="callout" data-callout="faq"><summary class="callout-title">Why?</summary>`, "<p>Because.</p>", "</div></details>"},
			[]string{" open>"}},
		{"foldable open callout", "> [!tip]+ Open\n> x\n",
			[]string{`<details class="callout" data-callout="tip" open><summary class="callout-title">Open</summary>`}, nil},
		{"title only callout", "> [!info] Just a title\n",
			[]string{`<div class="callout-title">Just a title</div>` + "\n" + `<div class="callout-content">` + "\n</div></div>"}, []string{"<p>"}},
		{"nested callout", "> [!note] Outer\n> > [!bug] Inner\n> > deep\n",
			[]string{`data-callout="note"`, `data-callout="bug"><div class="callout-title">Inner</div>`, "<p>deep</p>"}, []string{"<blockquote>"}},
		{"plain quote stays a quote", "> just [!text] here\n", []string{"<blockquote>"}, []string{"callout"}},
		{"callout title is escaped", "> [!note] <b>x</b> & y\n", []string{`<div class="callout-title">&lt;b&gt;x&lt;/b&gt; &amp; y</div>`}, []string{"<b>"}},
		{"callout of any type", "> [!注意]\n> x\n", []string{`<div class="callout" data-callout="注意"><div class="callout-title">注意</div>`}, []string{"[!"}},
		{"block anchor on a paragraph", "some text ^abc-1\n\nsee [[#^abc-1]]", []string{`<p id="^abc-1">some text</p>`, `<a class="wikilink" href="#%5Eabc-1">^abc-1</a>`}, []string{"text ^abc"}},
		{"block anchor on a list item", "- one ^li1\n- two\n", []string{`<li id="^li1">one</li>`}, []string{"^li1<"}},
		{"block anchor after a table", "| a |\n| - |\n| 1 |\n\n^tbl\n", []string{`<table id="^tbl">`}, []string{"<p>^tbl"}},
		{"caret inside a word is text", "x^2 and a^b", []string{"<p>x^2 and a^b</p>"}, []string{"id="}},
		{"link to another note's block", "[[Other#^b1]]", []string{`<a class="wikilink" href="/ui/note?note=Other#%5Eb1">Other &gt; ^b1</a>`}, nil},
		{"wikilink alias in a table", "| a |\n| - |\n| [[Note\\|alias]] |\n", []string{`<td><a class="wikilink" href="/ui/note?note=Note">alias</a></td>`}, nil},
		{"logseq page embed", "{{embed [[Some Page]]}}", []string{`<a class="wikilink embed-link" href="/ui/note?note=Some+Page">Some Page</a>`}, []string{"{{"}},
		{"logseq block embed unresolved", "{{embed ((11111111-2222-3333-4444-555555555555))}}", []string{`<span class="wikilink unresolved">((11111111-2222-3333-4444-555555555555))</span>`}, []string{"{{"}},
		{"other macros stay text", "{{embed nope}} {{query (a)}}", []string{"{{embed nope}} {{query (a)}}"}, []string{"wikilink"}},
		{"comments hidden", "seen %%hidden1%% seen2\n\n%%\nhidden2\nhidden3\n%%\n\nafter\n\n%% one-line hidden4 %%\n", []string{"<p>seen  seen2</p>", "<p>after</p>"}, []string{"hidden", "%%"}},
		{"comment in code stays", "`%%x%%`", []string{"<code>%%x%%</code>"}, nil},
		{"a lone %% opens a comment to the end", "text\n\n%%\nrest", []string{"<p>text</p>"}, []string{"rest"}},
		{"50%% off is text", "50% off and 20% more", []string{"50% off and 20% more"}, nil},
		{"remote image is a link", "![a cat](https://example.org/cat.png) ![](http://x.org/y.png)", []string{`<a href="https://example.org/cat.png" class="external-image">a cat</a>`, `<a href="http://x.org/y.png" class="external-image">http://x.org/y.png</a>`}, []string{"<img"}},
		{"heading ids keep every script", "# 知识 管理\n\n## Café Été\n\n## Café Été\n\n[[#知识 管理]] [[Other#日本語]]", []string{`<h1 id="知识-管理">`, `<h2 id="café-été">`, `<h2 id="café-été-1">`, `href="#知识-管理"`, `href="/ui/note?note=Other#日本語"`}, nil},
		{"highlight", "a ==marked== b", []string{"a <mark>marked</mark> b"}, nil},
		{"not a highlight", "a === b and ==x", []string{"a === b and ==x"}, []string{"<mark>"}},
		{"tags", "#tag and #a/b-c_d, x#no, #123, #日本", []string{`<a class="tag" href="/ui/tags?tag=tag">#tag</a>`, `<a class="tag" href="/ui/tags?tag=a%2Fb-c_d">#a/b-c_d</a>`, "x#no", "#123", `href="/ui/tags?tag=%E6%97%A5%E6%9C%AC">#日本</a>`}, []string{"tag=no", "tag=123"}},
		{"logseq multi-word tag", "see #[[two words]]", []string{`<a class="tag" href="/ui/tags?tag=two+words">#two words</a>`}, nil},
		{"heading is not a tag", "# Title\n", []string{`<h1 id="title">Title</h1>`}, []string{"tag"}},
		{"inline math", "area $\\pi r^2$ here", []string{`<span class="math math-inline">\pi r^2</span>`}, nil},
		{"money is not math", "costs $5 and $6 today", []string{"costs $5 and $6 today"}, []string{"math"}},
		{"math keeps markdown characters", "$a_1 * b_2 * c$", []string{`<span class="math math-inline">a_1 * b_2 * c</span>`}, []string{"<em>"}},
		{"math escapes markup", "$a<b$", []string{`<span class="math math-inline">a&lt;b</span>`}, nil},
		{"block math", "text\n\n$$\n\\int_0^1 x\\,dx\n= \\frac12\n$$\n\nafter", []string{`<div class="math math-display">\int_0^1 x\,dx` + "\n" + `= \frac12</div>`, "<p>after</p>"}, nil},
		{"one-line block math", "$$E=mc^2$$\n", []string{`<div class="math math-display">E=mc^2</div>`}, nil},
		{"inline display math", "so $$x$$ too", []string{`<span class="math math-display">x</span>`}, nil},
		{"math in code is code", "`$x$`\n\n```\n$$\n```\n", []string{"<code>$x$</code>", "<pre><code>$$\n</code></pre>"}, []string{"math"}},
		{"mermaid", "```mermaid\ngraph TD; A-->B\n```\n", []string{"<pre class=\"mermaid\">graph TD; A--&gt;B\n</pre>"}, []string{"language-mermaid"}},
		{"other code stays code", "```go\nx := 1\n```\n", []string{`<pre><code class="language-go">x := 1`}, []string{"mermaid"}},
		{"footnote", "Claim[^1].\n\n[^1]: Source.\n", []string{`<sup id="fnref:1"><a href="#fn:1" class="footnote-ref" role="doc-noteref">1</a></sup>`, `<li id="fn:1">`, "Source."}, nil},
		{"same-note heading link", "# Goals and Plans\n\nsee [[#Goals and Plans]]", []string{`<a class="wikilink" href="#goals-and-plans">Goals and Plans</a>`}, nil},
		{"same-note heading link to a missing heading", "see [[#Nowhere Land|there]]", []string{`<a class="wikilink" href="#nowhere-land">there</a>`}, nil},
		{"wikilink with heading and display", "[[Project Atlas#Goals|the goals]]", []string{`<a class="wikilink" href="/ui/note?note=Project+Atlas#goals">the goals</a>`}, nil},
		{"wikilink label", "[[Note#Part]] [[Note#^abc]]", []string{">Note &gt; Part</a>", ">Note &gt; ^abc</a>"}, nil},
		{"wikilink in code is code", "`[[x]]`", []string{"<code>[[x]]</code>"}, []string{"wikilink"}},
		{"embed without resolver is a link", "![[Other]]", []string{`<a class="wikilink embed-link" href="/ui/note?note=Other">Other</a>`}, nil},
		{"raw html dropped", "<script>alert(1)</script>\n\nhi <b onclick=x>b</b>", []string{"<!-- raw HTML omitted -->"}, []string{"<script", "<b"}},
		{"javascript link dropped", "[x](javascript:alert(1))", []string{`<a href="">x</a>`}, []string{"javascript:"}},
		{"frontmatter dropped", "---\ntitle: x\n---\nbody\n", []string{"<p>body</p>"}, []string{"title: x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Render([]byte(c.src), Options{Path: "a.md"}).HTML
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q\n%s", w, got)
				}
			}
			for _, w := range c.not {
				if strings.Contains(got, w) {
					t.Errorf("has %q\n%s", w, got)
				}
			}
		})
	}
}

func TestResultFlags(t *testing.T) {
	if r := Render([]byte("plain"), Options{}); r.Math || r.Mermaid {
		t.Fatalf("plain: %+v", r)
	}
	if r := Render([]byte("$x$"), Options{}); !r.Math || r.Mermaid {
		t.Fatalf("math: %+v", r)
	}
	if r := Render([]byte("```mermaid\na\n```"), Options{}); r.Math || !r.Mermaid {
		t.Fatalf("mermaid: %+v", r)
	}
}

// TestLogseqOutline: blocks with children become <details> (closed when
// collapsed:: true), id:: becomes the element id, properties leave the
// text, and an unresolved ((uuid)) stays visible as written.
func TestLogseqOutline(t *testing.T) {
	src := "type:: [[Tool]]\ntags:: a, b\n\n- top\n  id:: 11111111-2222-3333-4444-555555555555\n  collapsed:: true\n\t- child ((11111111-2222-3333-4444-555555555555))\n- open parent\n\t- kid\n- leaf\n- with prop\n  status:: <stable>\n- TODO write it\n- DONE shipped\n- TODOS are text\n"
	got := Render([]byte(src), Options{Path: "p.md", Logseq: true}).HTML
	for _, w := range []string{
		`<li id="block-11111111-2222-3333-4444-555555555555" class="block">` + "\n" + `<details class="outline"><summary>top</summary>`,
		`<li class="block">child <span class="block-ref unresolved">((11111111-2222-3333-4444-555555555555))</span></li>`,
		`<details class="outline" open><summary>open parent`,
		`<li class="block">leaf</li>`,
		`<li class="block"><input type="checkbox" disabled> <span class="task-marker task-todo">TODO</span> write it</li>`,
		`<li class="block"><input type="checkbox" disabled checked> <span class="task-marker task-done">DONE</span> shipped</li>`,
		`<li class="block">TODOS are text</li>`,
		"<li class=\"block\">with prop\n<span class=\"chip prop\"><span class=\"prop-key\">status</span> &lt;stable&gt;</span></li>",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("lacks %q\n%s", w, got)
		}
	}
	for _, w := range []string{"id::", "collapsed::", "type::", "tags::", "status::"} {
		if strings.Contains(got, w) {
			t.Errorf("has %q\n%s", w, got)
		}
	}
	// The same text in a Markdown note is a plain list.
	if got := Render([]byte(src), Options{Path: "p.md"}).HTML; strings.Contains(got, "<details") || !strings.Contains(got, "id:: 1111") {
		t.Errorf("markdown note rendered as an outline:\n%s", got)
	}
}

func TestBlockText(t *testing.T) {
	content := "# T\n\nfirst para\nsecond line ^p1\n\n- item one ^li\n- item two\n\n| a |\n| - |\n| 1 |\n\n^tbl\n\nno^x\n\n![[img.png]]^glued\n"
	for _, c := range []struct{ id, want string }{
		{"p1", "first para\nsecond line"},
		{"li", "- item one"},
		{"tbl", "| a |\n| - |\n| 1 |"},
		{"glued", "![[img.png]]"},
	} {
		got, ok := blockText(content, c.id)
		if !ok || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.id, got, ok, c.want)
		}
	}
	if _, ok := blockText(content, "x"); ok {
		t.Error("^x glued to a word is not a block id")
	}
	if _, ok := blockText(content, "nope"); ok {
		t.Error("missing id found")
	}
}

func TestSizeAttrs(t *testing.T) {
	for in, want := range map[string]string{"300": ` width="300"`, "300x200": ` width="300" height="200"`, "abc": "", "": "", "1x": "", "123456": ""} {
		if got := sizeAttrs(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestOutputCap: past MaxBytes the note is shown as escaped text.
func TestOutputCap(t *testing.T) {
	src := strings.Repeat("word <x> ", 200)
	got := Render([]byte(src), Options{MaxBytes: 100}).HTML
	if !strings.HasPrefix(got, `<pre class="unrendered">`) || strings.Contains(got, "<x>") {
		t.Fatalf("%s", got)
	}
}

// FuzzRender: any bytes render without a panic, to bounded HTML.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"> [!note]- T\n> x", "$$\n", "$a$", "==a==", "#t", "#[[a", "![[x#^y|300]]", "[[#h]]", "((11111111-2222-3333-4444-555555555555))",
		"- a\n  id:: x\n\t- b", "```mermaid\n", "[^1]\n\n[^1]: x", "> [!a]\n> > [!b]\n> > > [!c]", "---\na: b\n---\n",
		"- a\n  collapsed:: true\n  - b\n    - c", "> [!x]+\n", "$$ $$", "\\$x$", "![[a.png|10x]]",
		"{{embed [[p]]}}", "{{embed ((11111111-2222-3333-4444-555555555555))}}", "%%a%% b\n\n%%\nc\n%%", "![a](https://x/y.png)", "t ^id\n\n^x", "| [[a\\|b]] |\n| - |",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, logseq bool) {
		r := Render(b, Options{Path: "f.md", Logseq: logseq, MaxBytes: 1 << 20})
		if len(r.HTML) > 1<<20+64 {
			t.Fatalf("output %d bytes for %d input bytes", len(r.HTML), len(b))
		}
	})
}
