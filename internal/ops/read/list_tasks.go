package read

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/query"
)

// ListTasksIn is the input of list_tasks.
type ListTasksIn struct {
	Status   string `json:"status,omitempty" jsonschema:"open (not done or cancelled; the default), done, all, a status (todo, in_progress, waiting, cancelled) or a marker as written: TODO, DOING, LATER, x, -, /"`
	DueFrom  string `json:"due_from,omitempty" jsonschema:"only tasks due on or after this day: YYYY-MM-DD, today, tomorrow, yesterday, or an offset from today like -7d, +3d, 2w, 1m"`
	DueTo    string `json:"due_to,omitempty" jsonschema:"only tasks due on or before this day (same forms as due_from)"`
	PathGlob string `json:"path_glob,omitempty" jsonschema:"only tasks in notes whose path matches this glob, e.g. Projects/**"`
	Tag      string `json:"tag,omitempty" jsonschema:"only tasks in notes carrying this tag (or one nested under it)"`
	Page     string `json:"page,omitempty" jsonschema:"only tasks on this note or Logseq page: its title or its path without .md (case-insensitive)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"tasks per call, 1-1000 (default 100)"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault    string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the glob, limit, status and dates.
func (in *ListTasksIn) Validate() error {
	if err := ops.CheckGlob(in.PathGlob); err != nil {
		return err
	}
	if len(in.Status) > 64 || len(in.Tag) > 1024 || len(in.Page) > 4096 {
		return errs.New(errs.CodeInvalidInput, "status, tag or page is too long")
	}
	for _, d := range []struct{ name, v string }{{"due_from", in.DueFrom}, {"due_to", in.DueTo}} {
		if _, err := TaskDay(d.v, time.Now()); err != nil {
			return errs.New(errs.CodeInvalidInput, "%s: %v", d.name, err).With(d.name, d.v)
		}
	}
	return ops.CheckLimit(in.Limit, 1000)
}

// ListTasksOut is the output of list_tasks.
type ListTasksOut struct {
	Tasks      []index.TaskRow `json:"tasks" jsonschema:"tasks by due date (tasks without one last), then path and line"`
	Total      int             `json:"total" jsonschema:"number of tasks matching, over all calls"`
	NextCursor string          `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get the next tasks"`
}

// TaskDay turns a day as a caller writes it into YYYY-MM-DD: a date,
// today, tomorrow, yesterday, or a signed offset from today (-7d, +2w, 1m;
// query.RelativeDay). "" stays "".
func TaskDay(s string, now time.Time) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	if d, ok := query.RelativeDay(s, now); ok {
		return d.Format("2006-01-02"), nil
	}
	return "", fmt.Errorf("not a day: %q (use YYYY-MM-DD, today, tomorrow, yesterday, -7d, +2w)", s)
}

// taskStatusFilter narrows f to the tasks a status filter keeps: open
// (not done or cancelled; the default), all, a status, or a marker as
// written (one character also in any case: X for x).
func taskStatusFilter(filter string, f *index.TaskFilter) {
	switch strings.ToLower(filter) {
	case "", "open":
		f.NotStatuses = []string{"done", "cancelled"}
	case "all":
	case "done", "todo", "in_progress", "waiting", "cancelled":
		f.Statuses = []string{strings.ToLower(filter)}
	default:
		f.Markers = []string{filter}
		if r := []rune(filter); len(r) == 1 {
			// strings.EqualFold's matches of one rune: its simple-fold orbit.
			for c := unicode.SimpleFold(r[0]); c != r[0]; c = unicode.SimpleFold(c) {
				f.Markers = append(f.Markers, string(c))
			}
		}
	}
}

// globPrefix is the literal start of a path glob, which every path it
// matches begins with, and whether the glob matches exactly the paths
// that begin with it ("Projects/**", "**", "").
func globPrefix(g string) (string, bool) {
	i := strings.IndexAny(g, "*?[{\\")
	if i < 0 {
		return g, g == ""
	}
	p := g[:i]
	return p, g[i:] == "**" && (p == "" || strings.HasSuffix(p, "/"))
}

// ListTasks is the list_tasks operation.
func ListTasks() ops.Def[ListTasksIn, ListTasksOut] {
	return ops.Def[ListTasksIn, ListTasksOut]{
		Name:  "list_tasks",
		Title: "List tasks",
		Description: "Tasks across the vault: Markdown checkboxes (- [ ] / - [x], with Obsidian Tasks emoji fields 📅 due, ⏳ scheduled, 🛫 start, ✅ done and priorities 🔺⏫🔼🔽⏬) " +
			"and Logseq TODO/DOING/DONE... blocks (with SCHEDULED/DEADLINE and [#A] priorities). Open tasks by default; filter by status or marker, due range " +
			"(dates or today, -7d, +2w), path glob, tag or page. Sorted by due date (none last), then path and line; each row has the path and line " +
			"set_task_status takes. Paginate with next_cursor.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "tasks", Text: textTasks},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{"status": "open", "due_to": "+7d", "path_glob": "Projects/**"}`,
		Handler: func(ctx context.Context, env *ops.Env, in *ListTasksIn) (*ListTasksOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := ops.DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			now := time.Now()
			if env.Now != nil {
				now = env.Now()
			}
			f := index.TaskFilter{Tag: in.Tag, Page: strings.ToLower(strings.TrimSpace(in.Page))}
			if f.DueFrom, err = TaskDay(in.DueFrom, now); err != nil {
				return nil, errs.New(errs.CodeInvalidInput, "due_from: %v", err)
			}
			if f.DueTo, err = TaskDay(in.DueTo, now); err != nil {
				return nil, errs.New(errs.CodeInvalidInput, "due_to: %v", err)
			}
			taskStatusFilter(in.Status, &f)
			prefix, exact := globPrefix(in.PathGlob)
			f.PathPrefix = prefix
			limit := ops.OrDefault(in.Limit, 100)
			fence := env.ReadFence(ctx, vh)
			if !fence.Active() && exact {
				// Every filter is in SQL: read one page and the count.
				rows, total, err := vh.Index.TasksPage(ctx, f, off, limit)
				if err != nil {
					return nil, err
				}
				out := &ListTasksOut{Tasks: rows, Total: total}
				if out.Tasks == nil {
					out.Tasks = []index.TaskRow{}
				}
				if end := off + len(rows); end < total {
					out.NextCursor = ops.EncodeCursor(end)
				}
				return out, nil
			}
			all, err := vh.Index.Tasks(ctx, f)
			if err != nil {
				return nil, err
			}
			all = ops.Visible(fence, all, func(t index.TaskRow) string { return t.Path })
			kept := []index.TaskRow{}
			for _, t := range all {
				if ops.GlobMatch(in.PathGlob, t.Path) {
					kept = append(kept, t)
				}
			}
			out := &ListTasksOut{Total: len(kept)}
			out.Tasks, out.NextCursor = ops.Page(kept, off, limit)
			if out.Tasks == nil {
				out.Tasks = []index.TaskRow{}
			}
			return out, nil
		},
	}
}

func textTasks(o any) string {
	out := o.(*ListTasksOut)
	if out.Total == 0 {
		return "no tasks\n"
	}
	var b strings.Builder
	for _, t := range out.Tasks {
		due := t.Due
		if due == "" {
			due = "          "
		}
		box := "[" + t.Marker + "]"
		if len(t.Marker) > 1 {
			box = t.Marker
		}
		fmt.Fprintf(&b, "%s  %s:%d  %s %s\n", due, t.Path, t.Line, box, t.Text)
	}
	fmt.Fprintf(&b, "%d tasks\n", out.Total)
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}
