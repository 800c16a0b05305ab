package search

import "testing"

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
		terms := parseQuery(q)
		s, _ := buildMatch(terms)
		_ = s
		highlighter(terms).snippet(q+" some text "+q, 50)
	})
}
