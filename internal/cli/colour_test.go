package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestColourMatches: the snippets' **markers** become bold yellow, a
// result's title line bold; an unpaired marker is left alone.
func TestColourMatches(t *testing.T) {
	in := " 1. Spaced repetition  (0.05)\n    Ideas/S.md:4\n    the **spaced** and **repetition** idea\n    a ** lone marker\n10. Next\n"
	want := " " + sgrTitle + "1. Spaced repetition  (0.05)" + sgrReset + "\n    Ideas/S.md:4\n" +
		"    the " + sgrMatch + "spaced" + sgrReset + " and " + sgrMatch + "repetition" + sgrReset + " idea\n" +
		"    a ** lone marker\n" + sgrTitle + "10. Next" + sgrReset + "\n"
	if got := colourMatches(in); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestColourDiffs: only the lines of a unified diff are coloured; the
// lines around it (the preview line, a list that starts with "-") are not.
func TestColourDiffs(t *testing.T) {
	in := "--- a/n.md\n+++ b/n.md\n@@ -1,2 +1,2 @@\n same\n-old\n+new\n\\ No newline at end of file\n" +
		"preview: would edit n.md\n- not a diff line\n+ nor this\n"
	want := sgrTitle + "--- a/n.md" + sgrReset + "\n" + sgrTitle + "+++ b/n.md" + sgrReset + "\n" +
		sgrHunk + "@@ -1,2 +1,2 @@" + sgrReset + "\n same\n" + sgrDel + "-old" + sgrReset + "\n" + sgrAdd + "+new" + sgrReset + "\n" +
		"\\ No newline at end of file\npreview: would edit n.md\n- not a diff line\n+ nor this\n"
	if got := colourDiffs(in); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// Which outputs are coloured follows the registry's operations.
	reg := registry()
	for name, want := range map[string]string{"list_tags": in, "read_note": in, "write_note": colourDiffs(in), "undo": colourDiffs(in),
		"search_notes": colourMatches(in), "get_context": colourMatches(in)} {
		op, ok := reg.Get(name)
		if !ok {
			t.Fatalf("no op %s", name)
		}
		if got := colourOutput(op, in); got != want {
			t.Errorf("%s: %q", name, got)
		}
	}
}

// TestUseColour: auto colours a terminal only, and not with NO_COLOR or
// TERM=dumb; always and never decide regardless; a pipe or a buffer is
// never a terminal.
func TestUseColour(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	pty, _ := openPTY(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, c := range []struct {
		mode  string
		out   io.Writer
		env   [2]string
		want  bool
		label string
	}{
		{"auto", pty, [2]string{}, true, "terminal"},
		{"", pty, [2]string{}, true, "terminal, mode unset"},
		{"auto", pty, [2]string{"NO_COLOR", "1"}, false, "terminal with NO_COLOR"},
		{"auto", pty, [2]string{"TERM", "dumb"}, false, "dumb terminal"},
		{"auto", w, [2]string{}, false, "pipe"},
		{"auto", &bytes.Buffer{}, [2]string{}, false, "buffer"},
		{"never", pty, [2]string{}, false, "never on a terminal"},
		{"always", w, [2]string{"NO_COLOR", "1"}, true, "always, piped, NO_COLOR"},
	} {
		if c.env[0] != "" {
			t.Setenv(c.env[0], c.env[1])
		}
		got, err := useColour(c.mode, c.out)
		if err != nil || got != c.want {
			t.Errorf("%s: %v %v, want %v", c.label, got, err, c.want)
		}
		t.Setenv("NO_COLOR", "")
		t.Setenv("TERM", "xterm")
	}
	if _, err := useColour("rainbow", w); err == nil {
		t.Error("--color rainbow accepted")
	}
}

// TestColourEndToEnd: loci search and a write preview, run by Main, carry
// escape codes on a terminal (a real pseudo-terminal as standard output)
// and none when piped or with NO_COLOR; --color always and never decide.
func TestColourEndToEnd(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	v := demoCopy(t)
	search := []string{"search", "spaced", "repetition", "--vault", v, "--limit", "3"}
	write := []string{"write", "Inbox/new.md", "--content", "hello", "--vault", v}
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Fatal(errOut)
	}

	onTTY := func(args ...string) string {
		pty, master := openPTY(t)
		got := make(chan []byte)
		go func() { b, _ := io.ReadAll(master); got <- b }()
		var errb bytes.Buffer
		if code := Main(context.Background(), args, pty, &errb); code != 0 {
			t.Fatalf("%v: code %d %s", args, code, errb.String())
		}
		pty.Close() // the reader sees EIO after the buffered output
		return string(<-got)
	}
	out := onTTY(search...)
	if !strings.Contains(out, sgrMatch+"repetition"+sgrReset) || !strings.Contains(out, sgrTitle+"1. Spaced repetition") {
		t.Errorf("search on a terminal is not coloured:\n%q", out)
	}
	out = onTTY(write...)
	if !strings.Contains(out, sgrAdd+"+hello"+sgrReset) {
		t.Errorf("diff on a terminal is not coloured:\n%q", out)
	}
	t.Setenv("NO_COLOR", "1")
	if out := onTTY(search...); strings.Contains(out, "\x1b[") || !strings.Contains(out, "**repetition**") {
		t.Errorf("NO_COLOR on a terminal: %q", out)
	}
	if out := onTTY(append(search, "--color", "always")...); !strings.Contains(out, sgrMatch) {
		t.Errorf("--color always with NO_COLOR: %q", out)
	}
	t.Setenv("NO_COLOR", "")
	if out := onTTY(append(search, "--color", "never")...); strings.Contains(out, "\x1b[") {
		t.Errorf("--color never on a terminal: %q", out)
	}
	if out := onTTY(append(search, "--format", "json")...); strings.Contains(out, "\x1b[") {
		t.Errorf("JSON on a terminal coloured: %q", out)
	}

	// Piped (a buffer, as in every other test, and a real pipe): no escapes.
	for _, args := range [][]string{search, write} {
		out, _, code := run(t, args...)
		if code != 0 || strings.Contains(out, "\x1b[") {
			t.Errorf("%v piped: code %d %q", args, code, out)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); got <- b }()
	if code := Main(context.Background(), search, w, io.Discard); code != 0 {
		t.Fatalf("code %d", code)
	}
	w.Close()
	if out := string(<-got); strings.Contains(out, "\x1b[") || !strings.Contains(out, "**repetition**") {
		t.Errorf("through a pipe: %q", out)
	}
	out, _, _ = run(t, append(write, "--color", "always")...)
	if !strings.Contains(out, sgrAdd+"+hello"+sgrReset) {
		t.Errorf("--color always piped: %q", out)
	}
	if _, err := os.Stat(filepath.Join(v, "Inbox", "new.md")); !os.IsNotExist(err) {
		t.Errorf("a preview wrote the note: %v", err)
	}
}

// stripSGR removes the escape codes colour.go adds.
func stripSGR(s string) string {
	for _, c := range []string{sgrReset, sgrMatch, sgrTitle, sgrAdd, sgrDel, sgrHunk} {
		s = strings.ReplaceAll(s, c, "")
	}
	return s
}

// FuzzColour: colouring never panics and only adds escape codes: without
// them, a diff's text is the input, and a search output's is the input
// with the paired ** markers removed.
func FuzzColour(f *testing.F) {
	f.Add("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	f.Add(" 1. T  (0.1)\n    the **x** y\n")
	f.Add("**\n--- \n+++ \n**a**b**")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range escapeControls(s) {
			if isControl(r) {
				t.Fatalf("%q: a control character %U left", s, r)
			}
		}
		if strings.Contains(s, "\x1b") {
			return // the property compares texts without escape codes
		}
		if got := stripSGR(colourDiffs(s)); got != s {
			t.Fatalf("diff: %q -> %q", s, got)
		}
		var want strings.Builder
		for _, line := range strings.SplitAfter(s, "\n") {
			if n := strings.Count(line, "**"); n >= 2 && n%2 == 0 && !isResultTitle(line) {
				line = strings.ReplaceAll(line, "**", "")
			}
			want.WriteString(line)
		}
		if got := stripSGR(colourMatches(s)); got != want.String() {
			t.Fatalf("matches: %q -> %q, want %q", s, got, want.String())
		}
	})
}

// TestEscapeControls: control characters are shown, newlines and tabs
// kept, other text untouched.
func TestEscapeControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\nnext ünïcode": "plain\ttext\nnext ünïcode",
		"\x1b]0;pwned\x07title":     `\x1b]0;pwned\x07title`,
		"a\rb\x7fc\u0085d\x00":      `a\x0db\x7fc\u0085d\x00`,
	} {
		if got := escapeControls(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// TestTerminalShowsEscapes: a note holding escape sequences (a hostile
// vault) is printed with them shown on a terminal, with or without
// colour, and byte for byte when piped.
func TestTerminalShowsEscapes(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	v := demoCopy(t)
	body := "# Trap\n\nclear \x1b[2J and title \x1b]0;pwned\x07 end\n"
	if err := os.WriteFile(filepath.Join(v, "Trap.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, colour := range []string{"auto", "never"} {
		pty, master := openPTY(t)
		got := make(chan []byte)
		go func() { b, _ := io.ReadAll(master); got <- b }()
		var errb bytes.Buffer
		if code := Main(context.Background(), []string{"read", "Trap.md", "--vault", v, "--color", colour}, pty, &errb); code != 0 {
			t.Fatalf("code %d %s", code, errb.String())
		}
		pty.Close()
		out := string(<-got)
		if strings.Contains(out, "\x1b") || strings.Contains(out, "\x07") || !strings.Contains(out, `clear \x1b[2J and title \x1b]0;pwned\x07 end`) {
			t.Errorf("--color %s on a terminal: %q", colour, out)
		}
	}
	out, _, code := run(t, "read", "Trap.md", "--vault", v)
	if code != 0 || !strings.Contains(out, "clear \x1b[2J and title \x1b]0;pwned\x07 end") {
		t.Errorf("piped output changed: %q", out)
	}
}
