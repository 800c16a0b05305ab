package write

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/ops"
)

// SetTaskStatusIn is the input of set_task_status.
type SetTaskStatusIn struct {
	Path   string `json:"path,omitempty" jsonschema:"vault-relative path of the note holding the task (or use note, or block alone)"`
	Note   string `json:"note,omitempty" jsonschema:"the note by frontmatter id, title, alias, file name or [[wikilink]] text; instead of path"`
	Line   int    `json:"line,omitempty" jsonschema:"1-based line of the task, as list_tasks and read_note give it"`
	Block  string `json:"block,omitempty" jsonschema:"instead of line: the Logseq block's id:: uuid (the note is found from the index when path and note are empty)"`
	Status string `json:"status" jsonschema:"done, open, todo, in_progress, waiting, cancelled, a checkbox character (x, -, /, ...) or a Logseq marker (TODO, DOING, DONE, LATER, NOW, WAITING, CANCELED)"`
	ops.Guard
	ops.WriteOpts
}

// Validate checks the target and the status.
func (in *SetTaskStatusIn) Validate() error {
	switch {
	case in.Line == 0 && in.Block == "":
		return errs.New(errs.CodeInvalidInput, "pass line (with path or note) or block")
	case in.Line != 0 && in.Block != "":
		return errs.New(errs.CodeInvalidInput, "pass line or block, not both")
	case in.Line < 0 || in.Line > 10_000_000:
		return errs.New(errs.CodeInvalidInput, "line must be a 1-based line number").With("line", in.Line)
	case len(in.Status) > 32:
		return errs.New(errs.CodeInvalidInput, "status is too long: use done, open or a marker")
	case len(in.Block) > 200 || strings.ContainsAny(in.Block, " \t\r\n"):
		return errs.New(errs.CodeInvalidInput, "block must be a Logseq block uuid").With("block", in.Block)
	case in.Line != 0:
		if err := ops.EitherPathOrNote(in.Path, in.Note); err != nil {
			return err
		}
	}
	if _, err := statusTarget(in.Status); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// taskTarget is a requested status, resolved against both task syntaxes.
type taskTarget struct {
	status string // todo, done, in_progress, waiting, cancelled, or "" for a raw character
	char   rune   // the checkbox character to write
	marker string // the Logseq marker to write ("" when only the family decides)
}

// statusTarget reads the status input.
func statusTarget(s string) (taskTarget, error) {
	bad := errs.New(errs.CodeInvalidInput, "status must be done, open, todo, in_progress, waiting, cancelled, a checkbox character or a Logseq marker").With("status", s)
	switch strings.ToLower(s) {
	case "done":
		return taskTarget{status: "done", char: 'x', marker: "DONE"}, nil
	case "open", "todo":
		return taskTarget{status: "todo", char: ' '}, nil
	case "in_progress":
		return taskTarget{status: "in_progress", char: '/'}, nil
	case "cancelled", "canceled":
		return taskTarget{status: "cancelled", char: '-', marker: "CANCELED"}, nil
	case "waiting":
		return taskTarget{status: "waiting", char: '?', marker: "WAITING"}, nil
	}
	if st := markdown.LogseqMarkerStatus(s); st != "" {
		return taskTarget{status: st, marker: s}, nil
	}
	if r, n := utf8.DecodeRuneInString(s); n == len(s) && n > 0 && r != utf8.RuneError && r != '[' && r != ']' && r >= ' ' && r != 0x7f {
		t := taskTarget{char: r}
		switch r {
		case 'x', 'X':
			t.status, t.marker = "done", "DONE"
		case ' ':
			t.status = "todo"
		case '-':
			t.status, t.marker = "cancelled", "CANCELED"
		case '/':
			t.status = "in_progress"
		}
		return t, nil
	}
	return taskTarget{}, bad
}

// SetTaskStatus is the set_task_status operation.
func SetTaskStatus() ops.Def[SetTaskStatusIn, ops.WriteResult] {
	return ops.Def[SetTaskStatusIn, ops.WriteResult]{
		Name:  "set_task_status",
		Title: "Set a task's status",
		Description: "Mark one task done, open again, or any other status, by path and line (from list_tasks) or by Logseq block uuid. " +
			"A checkbox flips between [ ] and [x] (or takes the character given); done stamps ✅ and today's date as the Obsidian Tasks plugin does, reopening removes it. " +
			"A Logseq block swaps its marker (TODO→DONE, LATER→DONE, DONE→TODO or LATER...), and when the block already has a :LOGBOOK: drawer, starting or stopping DOING/NOW clocks in or out there. " +
			"Only that line (and the block's logbook) changes. A line that is not a task is refused (conflict). Pass the etag you read as if_match. Preview by default; apply=true writes it.",
		Annotations: ops.Annotations{Destructive: true},
		CLI:         ops.CLI{Use: "task-status", Args: []string{"path"}, Text: ops.TextWrite, Short: "Mark a task done or open (preview; --apply writes it)"},
		Errors:      ops.WithErrors(errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeBlockNotFound, errs.CodeInvalidUTF8),
		Example:     `{"path": "Projects/Project Atlas.md", "line": 12, "status": "done", "apply": true}`,
		Toolset:     ops.ToolsetWrites,
		Handler:     setTaskStatus,
	}
}

func setTaskStatus(ctx context.Context, env *ops.Env, in *SetTaskStatusIn) (*ops.WriteResult, error) {
	target, err := statusTarget(in.Status)
	if err != nil {
		return nil, err
	}
	path := in.Path
	if in.Block != "" && path == "" && in.Note == "" {
		vh, err := env.Vault(in.Vault)
		if err != nil {
			return nil, err
		}
		p, ok, err := vh.Index.BlockNote(ctx, in.Block)
		if err != nil {
			return nil, err
		}
		if !ok || !env.ReadFence(ctx, vh).Allows(p) {
			return nil, errs.New(errs.CodeBlockNotFound, "no block with id %s", in.Block).With("block", in.Block)
		}
		path = p
	}
	now := time.Now()
	if env.Now != nil {
		now = env.Now()
	}
	return noteWrite(ctx, env, "set_task_status", in, in.Vault, path, in.Note, &in.Guard, &in.WriteOpts, func(s *ops.Stage, rel, want string) error {
		f, err := s.ReadGuarded(rel, want)
		if err != nil {
			return err
		}
		outline, _ := s.Vault.Vault.LogseqFile(rel)
		lines := strings.Split(f.Text, "\n")
		ln := in.Line
		if in.Block != "" {
			if ln = blockLine(lines, in.Block); ln == 0 {
				return errs.New(errs.CodeBlockNotFound, "no block with id %s in %s", in.Block, rel).With("block", in.Block).With("path", rel)
			}
		}
		if ln > len(lines) || (ln == len(lines) && lines[ln-1] == "") {
			return errs.New(errs.CodeConflict, "line %d is past the end of %s", ln, rel).With("line", ln).With("path", rel).With("reason", "not_a_task")
		}
		// Only what the parser calls a task: not a checkbox in a code
		// block or in the frontmatter, nor a child line of a Logseq block.
		if !isTaskLine(f.Text, rel, outline, ln) {
			return errs.New(errs.CodeConflict, "line %d of %s is not a task", ln, rel).With("line", ln).With("path", rel).With("reason", "not_a_task")
		}
		if outline && target.marker == "" && target.status == "" {
			return errs.New(errs.CodeInvalidInput, "status %q is not a Logseq marker: use done, open, in_progress, waiting, cancelled or a marker (TODO, DOING, DONE...)", in.Status).With("status", in.Status)
		}
		warn, err := retask(&lines, ln-1, target, outline, now)
		if err != nil {
			return errs.New(errs.CodeConflict, "line %d of %s is not a task: %v", ln, rel, err).With("line", ln).With("path", rel).With("reason", "not_a_task")
		}
		if warn != "" {
			s.Warnings = append(s.Warnings, warn)
		}
		s.Main = rel
		s.Put(f, strings.Join(lines, "\n"))
		return nil
	})
}

// isTaskLine reports whether the parser finds a task on line ln of text.
func isTaskLine(text, rel string, outline bool, ln int) bool {
	d := markdown.Parse([]byte(text), markdown.Options{Path: rel, Logseq: outline})
	for _, t := range d.Tasks {
		if t.Line == ln {
			return true
		}
	}
	return false
}

// blockLine finds the bullet line (1-based) of the block whose id:: is uuid.
func blockLine(lines []string, uuid string) int {
	for i, l := range lines {
		t := strings.TrimSpace(l)
		k, v, ok := strings.Cut(t, "::")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "id") || strings.TrimSpace(v) != uuid {
			continue
		}
		ind := indentWidth(l)
		for j := i; j >= 0; j-- {
			lt := strings.TrimLeft(lines[j], " \t")
			if (lt == "-" || strings.HasPrefix(lt, "- ") || strings.HasPrefix(lt, "-\t")) && indentWidth(lines[j]) < ind {
				return j + 1
			}
		}
	}
	return 0
}

func indentWidth(l string) int {
	w := 0
	for _, c := range l {
		switch c {
		case ' ':
			w++
		case '\t':
			w += 4
		default:
			return w
		}
	}
	return w
}

var doneStamp = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` *✅\x{fe0f}? *\d{4}-\d{2}-\d{2}`) })
var blockAnchor = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\s\^[A-Za-z0-9-]+\s*$`) })

// retask changes the status of the task on lines[i] in place.
func retask(pl *[]string, i int, t taskTarget, outline bool, now time.Time) (warn string, err error) {
	lines := *pl
	line := lines[i]
	if outline {
		if s, e, old, ok := markdown.LogseqMarkerSpan(line); ok {
			m := logseqMarker(old, t)
			lines[i] = line[:s] + m + line[e:]
			logbook(pl, i, old, m, now)
			return "", nil
		}
	}
	s, e, old, ok := markdown.CheckboxSpan(line)
	if !ok {
		if outline {
			return "", fmt.Errorf("no TODO/DOING/DONE... marker or checkbox")
		}
		return "", fmt.Errorf("no checkbox")
	}
	c := t.char
	if c == 0 {
		// A Logseq marker on a checkbox: its status picks the character.
		c = map[string]rune{"todo": ' ', "done": 'x', "in_progress": '/', "cancelled": '-', "waiting": '?'}[t.status]
	}
	nl := line[:s] + string(c) + line[e:]
	wasDone := old == 'x' || old == 'X'
	isDone := c == 'x' || c == 'X'
	switch {
	case isDone && !wasDone && !strings.Contains(nl, "✅"):
		stamp := " ✅ " + now.Format("2006-01-02")
		if loc := blockAnchor().FindStringIndex(nl); loc != nil {
			nl = strings.TrimRight(nl[:loc[0]], " \t") + stamp + nl[loc[0]:]
		} else {
			nl = strings.TrimRight(nl, " \t") + stamp
		}
	case !isDone:
		nl = doneStamp().ReplaceAllString(nl, "")
	}
	lines[i] = nl
	if isDone && !wasDone && strings.Contains(line, "🔁") {
		warn = "the task recurs (🔁): no next occurrence was created; the Obsidian Tasks plugin does that when the box is ticked in Obsidian"
	}
	return warn, nil
}

// logseqMarker picks the new marker: the one asked for, or the one of the
// block's workflow (NOW/LATER or TODO/DOING) for the status.
func logseqMarker(old string, t taskTarget) string {
	if t.marker != "" && strings.ToUpper(t.marker) == t.marker {
		return t.marker
	}
	nowLater := old == "NOW" || old == "LATER"
	switch t.status {
	case "done":
		return "DONE"
	case "in_progress":
		if nowLater {
			return "NOW"
		}
		return "DOING"
	case "cancelled":
		return "CANCELED"
	case "waiting":
		return "WAITING"
	}
	if nowLater {
		return "LATER"
	}
	return "TODO"
}

const logseqClock = "2006-01-02 Mon 15:04:05"

// logbook clocks in or out in the :LOGBOOK: drawer of the block whose
// bullet is lines[i], when the block has one: into DOING/NOW opens a
// CLOCK entry, out of it closes the open one. A block without a drawer is
// left alone.
func logbook(pl *[]string, i int, old, now string, at time.Time) {
	lines := *pl
	active := func(m string) bool { return m == "DOING" || m == "NOW" }
	if active(old) == active(now) {
		return
	}
	ind := indentWidth(lines[i])
	start, end := -1, -1
	for j := i + 1; j < len(lines); j++ {
		l := lines[j]
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if indentWidth(l) <= ind || t == "-" || strings.HasPrefix(t, "- ") {
			break
		}
		switch {
		case t == ":LOGBOOK:" && start < 0:
			start = j
		case t == ":END:" && start >= 0:
			end = j
		}
		if end >= 0 {
			break
		}
	}
	if start < 0 || end < 0 {
		return
	}
	pad := lines[start][:len(lines[start])-len(strings.TrimLeft(lines[start], " \t"))]
	if active(now) {
		entry := pad + "CLOCK: [" + at.Format(logseqClock) + "]"
		*pl = append(lines[:end:end], append([]string{entry}, lines[end:]...)...)
		return
	}
	for j := end - 1; j > start; j-- {
		t := strings.TrimSpace(lines[j])
		if !strings.HasPrefix(t, "CLOCK: [") || strings.Contains(t, "--") || !strings.HasSuffix(t, "]") {
			continue
		}
		began, err := time.ParseInLocation(logseqClock, t[len("CLOCK: ["):len(t)-1], at.Location())
		if err != nil {
			return
		}
		d := at.Sub(began)
		if d < 0 {
			d = 0
		}
		h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
		lines[j] = strings.TrimRight(lines[j], " \t") + "--[" + at.Format(logseqClock) + fmt.Sprintf("] =>  %02d:%02d:%02d", h, m, s)
		return
	}
}
