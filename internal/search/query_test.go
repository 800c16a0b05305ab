package search

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
)

func TestBuildMatch(t *testing.T) {
	cases := []struct {
		q, strict, relaxed string
	}{
		{"spaced repetition", `("spaced" AND "repetition")`, `("spaced" OR "repetition")`},
		{"zettelkasten", `("zettelkasten")`, ``},
		{`"slip box"`, `("slip box")`, ``},
		{`note*`, `("note"*)`, ``},
		{`obsidian -plugin`, `("obsidian") NOT ("plugin")`, ``},
		{`obsidian-hub`, `("obsidian hub")`, ``},
		{`知识管理`, `("知识 识管 管理")`, ``},
		{`知`, `("知"*)`, ``},
		{`how do I get it back`, `("how" AND "do" AND "I" AND "get" AND "it" AND "back")`, `("get" OR "back")`},
		{`the`, `("the")`, ``},
		{`"unclosed phrase`, `("unclosed phrase")`, ``},
		{`a:b (c) "d" * - -- NEAR( AND OR NOT ^`, `("a b" AND "c" AND "d" AND "NEAR" AND "AND" AND "OR" AND "NOT")`, `("a b" OR "c" OR "d" OR "NEAR")`},
		{`-only`, ``, ``},
		{`***`, ``, ``},
		{`""`, ``, ``},
	}
	for _, c := range cases {
		s, r := buildMatch(parseQuery(c.q))
		if s != c.strict || r != c.relaxed {
			t.Errorf("buildMatch(%q)\n got  %s | %s\n want %s | %s", c.q, s, r, c.strict, c.relaxed)
		}
	}
}

func TestSnippet(t *testing.T) {
	text := "Intro line.\n\nReview a fact just before you would forget it, at growing intervals. Each successful recall strengthens the memory."
	h := highlighter(parseQuery("recall memories"))
	got := h.snippet(text, 240)
	want := "Intro line. Review a fact just before you would forget it, at growing intervals. Each successful **recall** strengthens the **memory**."
	if got != want {
		t.Errorf("snippet =\n%q\nwant\n%q", got, want)
	}
	cjk := "个人知识管理是一种收集、整理和检索笔记的方法。"
	if got := highlighter(parseQuery("知识管理")).snippet(cjk, 240); got != "个人**知识管理**是一种收集、整理和检索笔记的方法。" {
		t.Errorf("cjk snippet = %q", got)
	}
	if got := highlighter(parseQuery("cafe")).snippet("Notes written in a café in Zürich", 240); got != "Notes written in a **café** in Zürich" {
		t.Errorf("folded snippet = %q", got)
	}
	long := ""
	for i := 0; i < 100; i++ {
		long += "filler words here "
	}
	long += "needle at the end"
	got = highlighter(parseQuery("needle")).snippet(long, 120)
	if len(got) > 140 || got[:3] != "…" || !contains(got, "**needle**") {
		t.Errorf("windowed snippet = %q", got)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func FuzzQuery(f *testing.F) {
	for _, s := range []string{`"a b" c* -d`, `知识 "管理`, `NEAR(a b)`, `col:val`, `-`, `"*"`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		terms, err := compileQuery(q)
		if err != nil {
			if errs.Code(err) != errs.CodeInvalidInput {
				t.Fatalf("compileQuery(%q): %v", q, err)
			}
			terms = parseQuery(q) // refused, but parsing must still be safe
		} else {
			tokens := 0
			for _, tm := range terms {
				tokens += termTokens(tm)
			}
			if len(terms) > MaxTerms || tokens > MaxTokens {
				t.Fatalf("accepted %d terms, %d tokens", len(terms), tokens)
			}
		}
		seen := map[string]bool{}
		for _, tm := range terms {
			if k := termKey(tm); seen[k] {
				t.Fatalf("term %q repeated", k)
			} else {
				seen[k] = true
			}
		}
		s, _ := buildMatch(terms)
		_ = s
		highlighter(terms).snippet(q+" some text "+q, 50)
	})
}

// TestHostileQueriesBounded: whatever a client sends, the parsed query is
// bounded (distinct terms, FTS5 tokens, prefix terms, expression size, the
// highlighter's and the embedder's input) or it is refused with
// invalid_input. Sizes and counts, not time: time follows from them.
func TestHostileQueriesBounded(t *testing.T) {
	var distinct, distinctNeg, phrases, prefixes, mixed []string
	for i := 0; i < 2000; i++ {
		distinct = append(distinct, fmt.Sprintf("w%d", i))
		distinctNeg = append(distinctNeg, fmt.Sprintf("-n%d", i))
		phrases = append(phrases, fmt.Sprintf(`"p%d q%d"`, i, i))
		prefixes = append(prefixes, fmt.Sprintf("%c*", 'a'+i%26))
		mixed = append(mixed, []string{"知识", "plugin", "Ωμέγα", "كتاب", "ไทย", "한국어", "-x", "y*"}[i%8])
	}
	cut := func(s string, n int) string { // under MaxQueryBytes, on a rune boundary
		for len(s) > n {
			_, size := utf8.DecodeLastRuneInString(s)
			s = s[:len(s)-size]
		}
		return s
	}
	cases := []struct {
		name, q string
		terms   int // exact number of terms expected; -1: refused
	}{
		{"'a ' x 2000", strings.Repeat("a ", 2000), 1},
		{"'plugin ' x 500", strings.Repeat("plugin ", 500), 1},
		{"case and accents repeat", strings.Repeat("Café cafe CAFÉ ", 200), 1},
		{"thousands of distinct terms", cut(strings.Join(distinct, " "), MaxQueryBytes), -1},
		{"32 distinct terms", strings.Join(distinct[:32], " "), 32},
		{"33 distinct terms", strings.Join(distinct[:33], " "), -1},
		{"very long word", strings.Repeat("x", MaxQueryBytes), 1},
		{"longer than the limit", strings.Repeat("x", 100000), -1},
		{"one phrase repeated", strings.Repeat(`"plugin theme" `, 250), 1},
		{"many distinct phrases", cut(strings.Join(phrases, " "), MaxQueryBytes), -1},
		{"long phrase", `"` + strings.Repeat("plugin ", 500) + `"`, -1},
		{"unbalanced quotes", strings.Repeat(`"`, MaxQueryBytes), 0},
		{"quoted stars", strings.Repeat(`"*" `, 1000), 0},
		{"one exclusion repeated", "plugin " + strings.Repeat("-theme ", 500), 2},
		{"many distinct exclusions", "plugin " + cut(strings.Join(distinctNeg, " "), MaxQueryBytes-7), -1},
		{"stars", strings.Repeat("*", 2000) + " plugin " + strings.Repeat("*", 2000), 1},
		{"star suffixes", strings.Repeat("plugin*** ", 400), 1},
		{"all prefixes", strings.Join(prefixes[:26], " "), -1},
		{"4 prefixes", "a* b* c* d*", 4},
		{"CJK run of 100k characters", strings.Repeat("知识管理笔记方法", 12500), -1},
		{"CJK run under the byte limit", cut(strings.Repeat("知识管理笔记方法", 200), MaxQueryBytes), -1},
		{"CJK run of 66 characters", strings.Repeat("知", 66), -1},
		{"CJK run of 65 characters", strings.Repeat("知", 65), 1},
		{"mixed scripts", strings.Join(mixed[:480], " "), 8},
		{"dashes", strings.Repeat("- -- --- ", 400), 0},
		{"control characters", strings.Repeat("\x00\x01\x7f", 1000), 0},
		{"invalid UTF-8", strings.Repeat("\xff\xfe", 1000), 0},
	}
	for _, c := range cases {
		terms, err := compileQuery(c.q)
		if c.terms < 0 {
			if errs.Code(err) != errs.CodeInvalidInput {
				t.Errorf("%s: got %d terms, err %v; want invalid_input", c.name, len(terms), err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(terms) != c.terms {
			t.Errorf("%s: %d terms, want %d", c.name, len(terms), c.terms)
		}
		tokens, pre := 0, 0
		for _, tm := range terms {
			tokens += termTokens(tm)
			if tm.prefix {
				pre++
			}
		}
		strict, relaxed := buildMatch(terms)
		hl := highlighter(terms)
		sem := semanticText(terms, c.q)
		if len(terms) > MaxTerms || tokens > MaxTokens || pre > MaxPrefixTerms ||
			len(strict) > 3*MaxQueryBytes || len(relaxed) > 3*MaxQueryBytes ||
			len(hl.words)+len(hl.runs) > MaxTokens || len(sem) > MaxQueryBytes {
			t.Errorf("%s: not bounded: %d terms, %d tokens, %d prefixes, expressions %d/%d bytes, %d highlight words, %d bytes embedded",
				c.name, len(terms), tokens, pre, len(strict), len(relaxed), len(hl.words)+len(hl.runs), len(sem))
		}
	}
}

// TestSnippetLinearInMatches: a chunk with a huge number of matches (a long
// CJK text, two query runs whose spans interleave) is highlighted without
// the quadratic sort and window scan it used to take.
func TestSnippetManyMatches(t *testing.T) {
	text := strings.Repeat("笔记知识", 50000) // 200k runes: 100k matches of the two runs, interleaved
	h := highlighter(parseQuery("知识 笔记"))
	sp := h.spans(text)
	if len(sp) != 100000 {
		t.Fatalf("%d spans, want 100000", len(sp))
	}
	for i := 1; i < len(sp); i++ {
		if sp[i].start < sp[i-1].end {
			t.Fatalf("spans out of order at %d", i)
		}
	}
	if s := h.snippet(text, 240); !strings.Contains(s, "**笔记**") || len(s) > 3*240 {
		t.Fatalf("snippet = %q", s)
	}
}

func TestClipQuery(t *testing.T) {
	long := strings.Repeat("word ", 20) + strings.Repeat("other ", 3)
	for i := 0; i < 40; i++ {
		long += fmt.Sprintf("w%d ", i)
	}
	for _, q := range []string{"plugin theme", long, strings.Repeat("知识管理", 40), strings.Repeat("x", 5000), "a* b* c* d* e* f*"} {
		c := ClipQuery(q)
		if _, err := compileQuery(c); err != nil {
			t.Errorf("ClipQuery(%.20q…) = %.40q…, still refused: %v", q, c, err)
		}
		if q == "plugin theme" && c != q {
			t.Errorf("a query within the limits changed: %q", c)
		}
		if c == "" {
			t.Errorf("ClipQuery(%.20q…) kept nothing", q)
		}
	}
}

// TestLexicalPart: hybrid's BM25 half keeps every exclusion, wherever it
// stands, then the other terms in order while they fit the limits; an
// unspaced run too long for the tokens left is cut to its start.
func TestLexicalPart(t *testing.T) {
	var words []string
	for i := 0; i < 40; i++ {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	terms, err := compileSemantic(strings.Join(words, " ") + " -late a* b* c* d* e* f*")
	if err != nil {
		t.Fatal(err)
	}
	lex := lexicalPart(terms)
	if err := checkTerms(lex, "the lexical part has"); err != nil {
		t.Fatalf("lexical part over the limits: %v", err)
	}
	if len(lex) != MaxTerms || !lex[len(lex)-1].neg || lex[0].words[0].Text != "w0" || lex[MaxTerms-2].words[0].Text != "w30" {
		t.Fatalf("lexical part = %d terms, first %q, last neg %v", len(lex), lex[0].words[0].Text, lex[len(lex)-1].neg)
	}
	terms, _ = compileSemantic("a* b* c* d* e* f* plain")
	lex = lexicalPart(terms)
	var kept []string
	for _, t := range lex {
		kept = append(kept, t.words[0].Text)
	}
	if strings.Join(kept, " ") != "a b c d plain" {
		t.Errorf("prefixes kept: %v", kept)
	}
	run := strings.Repeat("漢字", 100) // 199 character pairs
	terms, _ = compileSemantic("note " + run)
	lex = lexicalPart(terms)
	if len(lex) != 2 || termTokens(lex[0])+termTokens(lex[1]) != MaxTokens {
		t.Errorf("a long unspaced run: %d terms, %d tokens", len(lex), termTokens(lex[len(lex)-1]))
	}
}
