package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// Colour (docs/cli.md#colour): search matches and diffs are coloured when
// standard output is a terminal, unless NO_COLOR is set (no-color.org) or
// TERM is dumb; --color always|never decides regardless. Piped or
// redirected output never carries escape codes, and --format json is
// never coloured.

const (
	sgrReset = "\x1b[0m"
	sgrMatch = "\x1b[1;33m" // bold yellow: a query match in a snippet
	sgrTitle = "\x1b[1m"    // bold: a result's title, a diff's file names
	sgrAdd   = "\x1b[32m"   // green: an added line
	sgrDel   = "\x1b[31m"   // red: a removed line
	sgrHunk  = "\x1b[36m"   // cyan: a hunk header
)

// useColour decides whether text for w is coloured: mode is the --color
// flag (auto, always, never).
func useColour(mode string, w io.Writer) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
	default:
		return false, errs.New(errs.CodeInvalidInput, "--color must be auto, always or never, not %q", mode)
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false, nil
	}
	return isTerminal(w), nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// escapeControls shows the control characters of text written to a
// terminal instead of letting the terminal obey them: a note (a vault is
// input) could otherwise set the window title, clear the screen or hide
// lines with ESC sequences, carriage returns or C1 codes. Newlines and
// tabs stay; every other C0 code, DEL and C1 code is written as \xNN or
// \u00NN. Output that is not a terminal is left byte for byte.
func escapeControls(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !isControl(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

func isControl(r rune) bool {
	return r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f)
}

// colourOutput colours an operation's text output: the matches of search
// results (the snippets' **markers**) and the unified diffs of writes.
func colourOutput(op *ops.Op, s string) string {
	switch op.Name {
	case "search_notes", "get_context":
		return colourMatches(s)
	}
	if op.IsWrite() {
		return colourDiffs(s)
	}
	return s
}

// colourMatches turns the search snippets' highlight markers (**word**,
// internal/search) into bold yellow, and each result's title line
// (" 1. Title  (score)") into bold. A line with an unpaired marker is
// left as it is.
func colourMatches(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, line := range lines {
		if isResultTitle(line) {
			body, nl := strings.CutSuffix(line, "\n")
			lead := len(body) - len(strings.TrimLeft(body, " "))
			end := ""
			if nl {
				end = "\n"
			}
			lines[i] = body[:lead] + sgrTitle + body[lead:] + sgrReset + end
			continue
		}
		if strings.Count(line, "**") < 2 || strings.Count(line, "**")%2 != 0 {
			continue
		}
		var b strings.Builder
		open := true
		for {
			j := strings.Index(line, "**")
			if j < 0 {
				b.WriteString(line)
				break
			}
			b.WriteString(line[:j])
			if open {
				b.WriteString(sgrMatch)
			} else {
				b.WriteString(sgrReset)
			}
			open = !open
			line = line[j+2:]
		}
		lines[i] = b.String()
	}
	return strings.Join(lines, "")
}

// isResultTitle reports whether line is a numbered result's first line
// (" 1. Title  (0.0595)", "12. Title").
func isResultTitle(line string) bool {
	t := strings.TrimLeft(line, " ")
	d := 0
	for d < len(t) && t[d] >= '0' && t[d] <= '9' {
		d++
	}
	return d > 0 && strings.HasPrefix(t[d:], ". ")
}

// colourDiffs colours the unified diffs in s: a diff starts at a "--- "
// line followed by a "+++ " line and runs while lines are hunk headers,
// context, additions, removals or "\ No newline" notes; everything
// around (the preview line, warnings) is left as it is.
func colourDiffs(s string) string {
	lines := strings.SplitAfter(s, "\n")
	in := false
	for i, line := range lines {
		paint := ""
		switch {
		case strings.HasPrefix(line, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			in, paint = true, sgrTitle
		case !in:
		case strings.HasPrefix(line, "+++ "):
			paint = sgrTitle
		case strings.HasPrefix(line, "@@"):
			paint = sgrHunk
		case strings.HasPrefix(line, "+"):
			paint = sgrAdd
		case strings.HasPrefix(line, "-"):
			paint = sgrDel
		case strings.HasPrefix(line, " "), strings.HasPrefix(line, `\`), line == "\n":
		default:
			in = false
		}
		if paint != "" {
			body, nl := strings.CutSuffix(line, "\n")
			lines[i] = paint + body + sgrReset
			if nl {
				lines[i] += "\n"
			}
		}
	}
	return strings.Join(lines, "")
}
