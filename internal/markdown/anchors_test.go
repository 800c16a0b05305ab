package markdown

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// linkBy returns the first link to target in d.
func linkBy(t *testing.T, d *Doc, target string) Link {
	t.Helper()
	for _, l := range d.Links {
		if l.Target == target {
			return l
		}
	}
	t.Fatalf("no link to %q in %+v", target, d.Links)
	return Link{}
}

func TestLinkContext(t *testing.T) {
	src := strings.Join([]string{
		"# Guide",
		"## Plugins",
		"Intro text. Open the [[Manage vaults|vault switcher]] to pick a vault! Then relax.",
		"",
		"### Lists",
		"- [ ] Try the [[Sidebar|right sidebar]] for history ![[icon.svg]] here",
		"1. Read [the guide](Docs/Setup%20guide.md) first",
		"> [!tip] Fold with [[Folding]] and [[Other#Part]]",
		"| `image` | See [[Social media link previews#Image\\|Image]]. |",
		"## Back",
		"Plain [[Target]]",
		"```",
		"[[InCode]]",
		"```",
	}, "\n")
	d := Parse([]byte(src), Options{Path: "g.md"})
	cases := []struct {
		target, context string
	}{
		// A paragraph: the sentence only, the link as its display text.
		{"Manage vaults", "Open the vault switcher to pick a vault!"},
		// A list item: the whole item, without its markers; attachments dropped.
		{"Sidebar", "Try the right sidebar for history here"},
		{"Docs/Setup guide.md", "Read the guide first"},
		{"Folding", "Fold with Folding and Other Part"},
		// A table row.
		{"Social media link previews", "| `image` | See Image. |"},
		{"Target", "Plain Target"},
	}
	for _, c := range cases {
		l := linkBy(t, d, c.target)
		if l.Context != c.context {
			t.Errorf("%s: context %q, want %q", c.target, l.Context, c.context)
		}
	}
	for _, l := range d.Links {
		if l.Target == "InCode" {
			t.Errorf("a link in code: %+v", l)
		}
	}
}

func TestLinkContextBounded(t *testing.T) {
	long := strings.Repeat("word ", 400)
	src := "# H\n" + long + "[[A|shown]] " + long + "\n- " + strings.Repeat("[[B]] ", 2000) + "\n# " + strings.Repeat("x", 500) + "\n[[C]]\n[[D|" + long + "]]"
	d := Parse([]byte(src), Options{Path: "n.md"})
	for _, l := range d.Links {
		if len(l.Context) > 4*MaxContextSide+2 {
			t.Fatalf("context of %s: %d bytes", l.Target, len(l.Context))
		}
	}
	a := linkBy(t, d, "A")
	if !strings.Contains(a.Context, "word shown word") {
		t.Errorf("A: %q", a.Context)
	}
}

func TestLinkContextLogseq(t *testing.T) {
	d := Parse([]byte("- Keep notes with [[Daily journal]] every day. Another one.\n  - child [[B]]"), Options{Path: "pages/p.md", Logseq: true})
	if got := linkBy(t, d, "Daily journal").Context; got != "Keep notes with Daily journal every day." {
		t.Errorf("logseq context %q", got)
	}
	// Typed links (frontmatter) get no context.
	d = Parse([]byte("---\nup: \"[[Parent]]\"\n---\nbody"), Options{Path: "n.md"})
	if l := linkBy(t, d, "Parent"); l.Context != "" {
		t.Errorf("typed link context %q", l.Context)
	}
}

func TestLinkContextValidUTF8(t *testing.T) {
	// The scan window starts and ends inside a multi-byte character, and
	// the spaces collapse below the cut.
	line := "- é" + strings.Repeat(" ", contextScan-1) + "[[A]]" + strings.Repeat(" ", contextScan-1) + "é"
	d := Parse([]byte(line), Options{Path: "n.md"})
	if c := linkBy(t, d, "A").Context; !utf8.ValidString(c) || c != "A" {
		t.Errorf("context %q", c)
	}
}
