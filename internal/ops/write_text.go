package ops

import (
	"fmt"
	"strings"
)

// textWrite renders a write's result for the CLI: the diffs, then one line
// saying what happened (or would happen) and what to do next.
func textWrite(o any) string {
	ro, ok := o.(resultOf)
	if !ok {
		return ""
	}
	r := ro.result()
	var b strings.Builder
	for _, c := range r.Changes {
		switch {
		case c.Diff != "":
			b.WriteString(c.Diff)
		case c.Action == "delete":
			fmt.Fprintf(&b, "delete %s → %s\n", c.Path, orText(c.TrashPath, ".trash/"))
		default:
			fmt.Fprintf(&b, "%s %s\n", c.Action, c.Path)
		}
	}
	if bo, ok := o.(*BlockWriteOut); ok && bo.UUID != "" {
		fmt.Fprintf(&b, "block %s", bo.UUID)
		if bo.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", bo.Line)
		}
		b.WriteString("\n")
	}
	if fo, ok := o.(*ImproveFrontmatterOut); ok {
		for _, f := range fo.Fixes {
			fmt.Fprintf(&b, "fix: %s\n", f)
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	what := fmt.Sprintf("%s %s", r.Action, r.Path)
	for _, c := range r.Changes {
		if c.Action == "move" && c.To == r.Path {
			what = fmt.Sprintf("move %s → %s", c.Path, c.To)
		}
	}
	switch {
	case r.Replayed:
		fmt.Fprintf(&b, "already applied (same idempotency key): %s, etag %s, undo id %s\n", what, short12(r.Etag), r.UndoID)
	case r.Action == "none":
		fmt.Fprintf(&b, "nothing to change in %s\n", r.Path)
	case r.Applied:
		fmt.Fprintf(&b, "applied: %s", what)
		if r.Etag != "" {
			fmt.Fprintf(&b, " (etag %s)", short12(r.Etag))
		}
		if r.UndoID != "" {
			fmt.Fprintf(&b, "; undo with: loci undo %s --apply", r.UndoID)
		}
		b.WriteString("\n")
	default:
		fmt.Fprintf(&b, "preview: would %s; nothing was written. Add --apply to write it", what)
		if r.OldEtag != "" {
			fmt.Fprintf(&b, " (and --if-match %s to be safe)", r.OldEtag)
		}
		b.WriteString(".\n")
	}
	return b.String()
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func short12(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func textHistory(o any) string {
	out := o.(*WriteHistoryOut)
	var b strings.Builder
	if len(out.Entries) == 0 {
		return "no journaled writes\n"
	}
	for _, e := range out.Entries {
		fmt.Fprintf(&b, "%s  %s  %s", e.ID, e.Time, e.Operation)
		if e.Surface != "" {
			fmt.Fprintf(&b, "  [%s", e.Surface)
			if e.Session != "" {
				fmt.Fprintf(&b, " %s", e.Session)
			}
			b.WriteString("]")
		}
		if e.UndoneBy != "" {
			fmt.Fprintf(&b, "  (undone by %s)", e.UndoneBy)
		}
		b.WriteString("\n")
		for _, f := range e.Files {
			fmt.Fprintf(&b, "    %-7s %s", f.Action, f.Path)
			if f.TrashPath != "" {
				fmt.Fprintf(&b, " → %s", f.TrashPath)
			}
			b.WriteString("\n")
		}
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}
