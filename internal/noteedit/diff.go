package noteedit

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// maxDiffEdit bounds the Myers search; beyond it the differing middle is
// shown as one replaced block (still a correct diff, just not a minimal one).
const maxDiffEdit = 1000

// DiffOp is one line of a line diff: kept (' '), removed ('-', line A of
// the old text) or added ('+', line B of the new text).
type DiffOp struct {
	Kind byte // ' ', '-', '+'
	A, B int  // line indexes in old / new
}

// DiffLines computes a line diff (Myers' O(ND) algorithm after trimming the
// common prefix and suffix).
func DiffLines(a, b []string) []DiffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []DiffOp
	for i := 0; i < pre; i++ {
		ops = append(ops, DiffOp{' ', i, i})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for i := 0; i < suf; i++ {
		ops = append(ops, DiffOp{' ', len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

func myers(a, b []string, offA, offB int) []DiffOp {
	n, m := len(a), len(b)
	replace := func() []DiffOp {
		var ops []DiffOp
		for i := 0; i < n; i++ {
			ops = append(ops, DiffOp{'-', offA + i, offB})
		}
		for j := 0; j < m; j++ {
			ops = append(ops, DiffOp{'+', offA + n, offB + j})
		}
		return ops
	}
	if n == 0 || m == 0 {
		return replace()
	}
	maxD := min(n+m, maxDiffEdit)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := false
	for d := 0; d <= maxD && !found; d++ {
		// The frontier after step d-1, for k in [-d, d] (snap[k+d]).
		snap := make([]int, 2*d+1)
		copy(snap, v[off-d:off+d+1])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	if !found {
		return replace()
	}
	// Backtrack from (n, m) through the saved frontiers.
	var rev []DiffOp
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		if d == 0 {
			for x > 0 && y > 0 {
				x--
				y--
				rev = append(rev, DiffOp{' ', offA + x, offB + y})
			}
			break
		}
		vd := trace[d]
		at := func(k int) int { return vd[k+d] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, DiffOp{' ', offA + x, offB + y})
		}
		if d > 0 {
			if x == prevX {
				y--
				rev = append(rev, DiffOp{'+', offA + x, offB + y})
			} else {
				x--
				rev = append(rev, DiffOp{'-', offA + x, offB + y})
			}
		}
	}
	ops := make([]DiffOp, len(rev))
	for i := range rev {
		ops[i] = rev[len(rev)-1-i]
	}
	return ops
}

// UnifiedDiff renders the change from old to new text as a unified diff
// (git's format: --- a/path, +++ b/path, @@ hunks with 3 lines of context,
// "\ No newline at end of file" where it applies). Identical texts give "".
func UnifiedDiff(fromPath, toPath, oldText, newText string, created bool) string {
	if oldText == newText && fromPath == toPath {
		return ""
	}
	a, aEOL := SplitLines(oldText)
	b, bEOL := SplitLines(newText)
	ops := DiffLines(a, b)
	var sb strings.Builder
	if created {
		sb.WriteString("--- /dev/null\n")
	} else {
		fmt.Fprintf(&sb, "--- a/%s\n", fromPath)
	}
	fmt.Fprintf(&sb, "+++ b/%s\n", toPath)
	if oldText == newText {
		return sb.String()
	}
	// A line that ends the file without a newline on one side only differs.
	nlA := func(i int) bool { return i < len(a)-1 || aEOL }
	nlB := func(i int) bool { return i < len(b)-1 || bEOL }
	for i := 0; i < len(ops); i++ {
		if o := ops[i]; o.Kind == ' ' && nlA(o.A) != nlB(o.B) {
			ops = append(ops[:i], append([]DiffOp{{'-', o.A, o.B}, {'+', o.A + 1, o.B}}, ops[i+1:]...)...)
			i++
		}
	}
	// Group the ops into hunks.
	var changes []int
	for i, o := range ops {
		if o.Kind != ' ' {
			changes = append(changes, i)
		}
	}
	for h := 0; h < len(changes); {
		start := max(changes[h]-diffContext, 0)
		end := changes[h]
		for h < len(changes) && changes[h] <= end+2*diffContext+1 {
			end = changes[h]
			h++
		}
		end = min(end+diffContext, len(ops)-1)
		var aStart, bStart, aLen, bLen int
		aStart, bStart = -1, -1
		for _, o := range ops[start : end+1] {
			switch o.Kind {
			case ' ':
				aLen++
				bLen++
			case '-':
				aLen++
			case '+':
				bLen++
			}
			if aStart < 0 && o.Kind != '+' {
				aStart = o.A
			}
			if bStart < 0 && o.Kind != '-' {
				bStart = o.B
			}
		}
		if aStart < 0 {
			aStart = ops[start].A
		}
		if bStart < 0 {
			bStart = ops[start].B
		}
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, o := range ops[start : end+1] {
			line, noNL := "", false
			switch o.Kind {
			case '+':
				line, noNL = b[o.B], !nlB(o.B)
			default:
				line, noNL = a[o.A], !nlA(o.A)
			}
			sb.WriteByte(o.Kind)
			sb.WriteString(line)
			sb.WriteByte('\n')
			if noNL {
				sb.WriteString("\\ No newline at end of file\n")
			}
		}
	}
	return sb.String()
}

// hunkRange formats "start,len" (1-based; an empty range names the line before).
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
