package markdown

import (
	"strings"
	"testing"
	"time"
)

// hostileInputs are ~1 MB inputs built to trigger quadratic behaviour in
// naive scanners (unclosed delimiters repeated on one line, deep nesting).
func hostileInputs() map[string]string {
	const n = 1 << 20
	rep := func(s string) string { return strings.Repeat(s, n/len(s)) }
	return map[string]string{
		"open wikilinks":     rep("[["),
		"open embeds":        rep("![["),
		"nested wikilinks":   rep("[[ ") + "]]",
		"open brackets":      rep("["),
		"open md links":      rep("[a]("),
		"paren md links":     rep("[](") + ")",
		"open titles":        rep("[](a \""),
		"open angle":         rep("<a"),
		"angle dests":        rep("[](<"),
		"backtick runs":      rep("` `` ``` "),
		"tick ladder":        rep("`") + " " + rep("``"),
		"long tick runs":     tickRuns(n),
		"hashes":             rep("#"),
		"tags":               rep("#a "),
		"logseq open tags":   rep("#[["),
		"logseq nested tags": rep("#[[ ") + "]]",
		"block refs":         rep("(("),
		"block refs close":   rep("((") + "))",
		"comments":           rep("%%"),
		"urls":               rep("a://"),
		"carets":             rep(" ^a"),
		"many lines":         rep("- [ ] x\n"),
		"many headings":      rep("# h\n"),
		"many blocks":        rep("- a\n\t- b\n"),
		"deep blocks":        "- a\n" + strings.Repeat("\t", 100000) + "- b\n",
		"stair blocks":       stair(5000),
		"setext paragraph":   rep("word\n") + "---\n",
		"many fences":        rep("```\n"),
		"property lines":     rep("a:: [[b]]\n"),
		"crlf paragraphs":    rep("x\r\n\r\n"),
		"yaml":               "---\n" + rep("k: [[v]]\n") + "---\n",
		"yaml deep flow":     "---\na: " + rep("[") + "\n---\n",
		"yaml deep block":    "---\n" + yamlStair(2000) + "---\n",
		"yaml aliases":       "---\n" + billionLaughs() + "---\n",
		"yaml long scalar":   "---\na: " + rep("x") + "\n---\n",
	}
}

// stair makes Logseq blocks indented 0, 1, 2, ..., n tabs.
func stair(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat("\t", i))
		b.WriteString("- x\n")
	}
	return b.String()
}

func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("slow in -short mode")
	}
	for name, in := range hostileInputs() {
		for _, logseq := range []bool{false, true} {
			start := time.Now()
			d := Parse([]byte(in), Options{Logseq: logseq, MaxChunkChars: 50})
			el := time.Since(start)
			checkDoc(t, name, []byte(in), d)
			// Generous bound: linear work on 1 MB takes milliseconds; a
			// quadratic path takes minutes.
			if el > 5*time.Second {
				t.Errorf("%s (logseq=%v): %v", name, logseq, el)
			}
			if el > 200*time.Millisecond {
				t.Logf("%s (logseq=%v): %v", name, logseq, el)
			}
		}
	}
}

// tickRuns makes backtick runs of growing length (17, 18, ...), none closed.
func tickRuns(n int) string {
	var b strings.Builder
	for l := 17; b.Len() < n; l++ {
		b.WriteString(strings.Repeat("`", l))
		b.WriteByte(' ')
	}
	return b.String()
}

// yamlStair nests n block mappings.
func yamlStair(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i))
		b.WriteString("k:\n")
	}
	return b.String()
}

// TestPercentDecodingNeverMakesControlCharacters: a Markdown link keeps its
// destination as written when decoding would put a NUL, a newline or
// another control character (or invalid UTF-8) into the stored target,
// heading or block id; ordinary escapes are still decoded.
func TestPercentDecodingNeverMakesControlCharacters(t *testing.T) {
	cases := []struct{ src, target, heading string }{
		{"[x](a%00b.md)", "a%00b.md", ""},
		{"![](0%000)", "0%000", ""},
		{"[x](a%0Ab.md)", "a%0Ab.md", ""},
		{"[x](a%0D%0Ab.md)", "a%0D%0Ab.md", ""},
		{"[x](a%7Fb.md)", "a%7Fb.md", ""},
		{"[x](a%C2%85b.md)", "a%C2%85b.md", ""}, // U+0085, a C1 control
		{"[x](a%FFb.md)", "a%FFb.md", ""},       // not UTF-8
		{"[x](a.md#h%00i)", "a.md", "h%00i"},
		{"[x](my%20note.md#sec%20one)", "my note.md", "sec one"},
		{"[x](caf%C3%A9.md)", "café.md", ""},
	}
	for _, c := range cases {
		d := Parse([]byte(c.src), Options{Path: "n.md"})
		if len(d.Links) != 1 {
			t.Errorf("%q: %d links", c.src, len(d.Links))
			continue
		}
		if l := d.Links[0]; l.Target != c.target || l.Heading != c.heading {
			t.Errorf("%q: target %q heading %q, want %q %q", c.src, l.Target, l.Heading, c.target, c.heading)
		}
	}
}
