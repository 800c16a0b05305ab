package write_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/ops/write"
)

// The write tests' clock (opstest.Now) is 2026-11-20.
var taskFiles = map[string]string{
	"Projects/Atlas.md":       "---\ntags: [work]\n---\n# Atlas\n\n- [ ] ship v1 📅 2026-11-25 ⏫\n- [x] kickoff ✅ 2026-11-01\n- [ ] write docs 📅 2026-11-18\n- [-] old idea\n",
	"Home.md":                 "# Home\n\n- [ ] fix sink\n- [/] paint wall 📅 2026-12-24 🔽 ^paint\n- [ ] weekly review 🔁 every week 📅 2026-11-20\nnot a task\n",
	"graph/logseq/config.edn": "{:meta/version 1}\n",
	"code.md":                 "---\n- [ ] not: a task\n---\n```\n- [ ] in code\n```\n",
	"graph/pages/Garden.md":   "- TODO [#A] plant bulbs\n  DEADLINE: <2026-11-22 Sun>\n  id:: 6561f2c0-0000-4000-8000-0000000000aa\n- LATER prune roses\n- DOING water\n  :LOGBOOK:\n  CLOCK: [2026-11-20 Fri 09:15:30]\n  :END:\n- DONE mulch\n",
}

func taskRows(out *read.ListTasksOut) string {
	var b []string
	for _, t := range out.Tasks {
		b = append(b, fmt.Sprintf("%s:%d %s %s", t.Path, t.Line, t.Marker, t.Due))
	}
	return strings.Join(b, " | ")
}

func TestListTasks(t *testing.T) {
	env := opstest.WriteEnv(t, taskFiles)
	cases := []struct{ in, want string }{
		// Open by default; by due date, undated last, then path and line.
		{`{}`, "Projects/Atlas.md:8   2026-11-18 | Home.md:5   2026-11-20 | graph/pages/Garden.md:1 TODO 2026-11-22 | " +
			"Projects/Atlas.md:6   2026-11-25 | Home.md:4 / 2026-12-24 | Home.md:3    | graph/pages/Garden.md:4 LATER  | graph/pages/Garden.md:5 DOING "},
		{`{"status": "done"}`, "Projects/Atlas.md:7 x  | graph/pages/Garden.md:9 DONE "},
		{`{"status": "cancelled"}`, "Projects/Atlas.md:9 - "},
		{`{"status": "-"}`, "Projects/Atlas.md:9 - "},
		{`{"status": "DOING"}`, "graph/pages/Garden.md:5 DOING "},
		{`{"status": "in_progress"}`, "Home.md:4 / 2026-12-24 | graph/pages/Garden.md:5 DOING "},
		{`{"due_from": "today", "due_to": "+5d"}`, "Home.md:5   2026-11-20 | graph/pages/Garden.md:1 TODO 2026-11-22 | Projects/Atlas.md:6   2026-11-25"},
		{`{"due_to": "yesterday"}`, "Projects/Atlas.md:8   2026-11-18"},
		{`{"due_from": "2026-12-01", "status": "all"}`, "Home.md:4 / 2026-12-24"},
		{`{"tag": "work", "status": "all"}`, "Projects/Atlas.md:8   2026-11-18 | Projects/Atlas.md:6   2026-11-25 | Projects/Atlas.md:7 x  | Projects/Atlas.md:9 - "},
		{`{"path_glob": "graph/**"}`, "graph/pages/Garden.md:1 TODO 2026-11-22 | graph/pages/Garden.md:4 LATER  | graph/pages/Garden.md:5 DOING "},
		{`{"page": "garden", "status": "x"}`, ""},
		{`{"page": "Home", "limit": 2}`, "Home.md:5   2026-11-20 | Home.md:4 / 2026-12-24"},
	}
	for _, c := range cases {
		out := opstest.Call[read.ListTasksOut](t, env, "list_tasks", c.in)
		if got := taskRows(out); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	first := opstest.Call[read.ListTasksOut](t, env, "list_tasks", `{"page": "Home", "limit": 2}`)
	if first.Total != 3 || first.NextCursor == "" {
		t.Fatalf("page 1: %+v", first)
	}
	next := opstest.Call[read.ListTasksOut](t, env, "list_tasks", `{"page": "Home", "limit": 2, "cursor": "`+first.NextCursor+`"}`)
	if got := taskRows(next); got != "Home.md:3   " || next.NextCursor != "" {
		t.Errorf("page 2: %s %q", got, next.NextCursor)
	}
	g := opstest.Call[read.ListTasksOut](t, env, "list_tasks", `{"page": "Garden", "due_to": "+2d"}`).Tasks
	if len(g) != 1 || g[0].Priority != "high" || g[0].Block != "6561f2c0-0000-4000-8000-0000000000aa" || g[0].Text != "[#A] plant bulbs" || g[0].Status != "todo" {
		t.Errorf("logseq row: %+v", g)
	}
	for _, in := range []string{`{"due_from": "2026-02-30"}`, `{"due_to": "soon"}`, `{"due_to": "99999999d"}`, `{"path_glob": "[["}`, `{"limit": 5000}`} {
		opstest.WantCode(t, env, "list_tasks", in, errs.CodeInvalidInput)
	}
}

func TestListTasksFence(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{"HR/pay.md": "- [ ] raise quokka 📅 2026-11-21\n", "pub.md": "- [ ] public\n"})
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"HR/**"}}
	out := opstest.Call[read.ListTasksOut](t, env, "list_tasks", `{"status": "all"}`)
	if got := taskRows(out); got != "pub.md:1   " || out.Total != 1 {
		t.Errorf("fenced tasks shown: %s", got)
	}
}

func TestSetTaskStatusObsidian(t *testing.T) {
	env := opstest.WriteEnv(t, taskFiles)
	orig := taskFiles["Projects/Atlas.md"]
	etag := opstest.EtagOf(t, env, "Projects/Atlas.md")
	pre := opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "Projects/Atlas.md", "line": 6, "status": "done"}`)
	if pre.Applied || len(pre.Changes) != 1 || !strings.Contains(pre.Changes[0].Diff, "+- [x] ship v1 📅 2026-11-25 ⏫ ✅ 2026-11-20") {
		t.Fatalf("preview %+v", pre)
	}
	if opstest.ReadFile(t, env, "Projects/Atlas.md") != orig {
		t.Fatal("a preview wrote the note")
	}
	// A stale etag is refused and nothing is written.
	opstest.WantCode(t, env, "set_task_status", `{"path": "Projects/Atlas.md", "line": 6, "status": "done", "apply": true, "if_match": "`+strings.Repeat("0", 64)+`"}`, errs.CodeEtagMismatch)
	out := opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "Projects/Atlas.md", "line": 6, "status": "done", "apply": true, "if_match": "`+etag+`"}`)
	want := strings.Replace(orig, "- [ ] ship v1 📅 2026-11-25 ⏫", "- [x] ship v1 📅 2026-11-25 ⏫ ✅ 2026-11-20", 1)
	if got := opstest.ReadFile(t, env, "Projects/Atlas.md"); got != want || !out.Applied || out.UndoID == "" {
		t.Fatalf("after apply:\n%s\n%+v", got, out)
	}
	// The next list_tasks sees it at once.
	done := opstest.Call[read.ListTasksOut](t, env, "list_tasks", `{"status": "done", "path_glob": "Projects/**"}`)
	if got := taskRows(done); got != "Projects/Atlas.md:6 x 2026-11-25 | Projects/Atlas.md:7 x " || done.Tasks[0].Done != "2026-11-20" {
		t.Errorf("list after apply: %s %+v", got, done.Tasks)
	}
	// Reopening removes the done date; undo restores the note.
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "Projects/Atlas.md", "line": 7, "status": "open", "apply": true}`)
	want2 := strings.Replace(want, "- [x] kickoff ✅ 2026-11-01", "- [ ] kickoff", 1)
	if got := opstest.ReadFile(t, env, "Projects/Atlas.md"); got != want2 {
		t.Fatalf("after reopen:\n%s", got)
	}
	opstest.Call[write.UndoOut](t, env, "undo", `{"apply": true}`)
	if got := opstest.ReadFile(t, env, "Projects/Atlas.md"); got != want {
		t.Fatalf("after undo:\n%s", got)
	}
	// The block anchor stays last; a recurring task warns.
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "Home.md", "line": 4, "status": "x", "apply": true}`)
	rec := opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "Home.md", "line": 5, "status": "done", "apply": true}`)
	home := opstest.ReadFile(t, env, "Home.md")
	if !strings.Contains(home, "- [x] paint wall 📅 2026-12-24 🔽 ✅ 2026-11-20 ^paint\n") || !strings.Contains(home, "- [x] weekly review 🔁 every week 📅 2026-11-20 ✅ 2026-11-20\n") {
		t.Errorf("home:\n%s", home)
	}
	if len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "🔁") {
		t.Errorf("recurring warning: %v", rec.Warnings)
	}
	// Not a task (plain text, a heading, a checkbox in a code block or in
	// the frontmatter), past the end, bogus input.
	for _, in := range []string{`{"path": "Home.md", "line": 6, "status": "done"}`, `{"path": "Home.md", "line": 1, "status": "done"}`, `{"path": "Home.md", "line": 99, "status": "done"}`,
		`{"path": "code.md", "line": 5, "status": "done"}`, `{"path": "code.md", "line": 2, "status": "done"}`} {
		d := opstest.WantCode(t, env, "set_task_status", in, errs.CodeConflict)
		if d["reason"] != "not_a_task" {
			t.Errorf("%s: details %v", in, d)
		}
	}
	for _, in := range []string{`{"path": "Home.md", "line": 3, "status": "finished"}`, `{"path": "Home.md", "line": 3, "status": "]"}`,
		`{"path": "Home.md", "status": "done"}`, `{"line": 3, "status": "done"}`, `{"path": "Home.md", "line": -1, "status": "done"}`,
		`{"path": "Home.md", "line": 3, "block": "x", "status": "done"}`, `{"path": "Home.md", "line": 3, "status": ""}`,
		`{"path": "Home.md", "line": 3, "status": "` + strings.Repeat("x", 1<<20) + `"}`} {
		opstest.WantCode(t, env, "set_task_status", in, errs.CodeInvalidInput)
	}
	opstest.WantCode(t, env, "set_task_status", `{"path": "../x.md", "line": 1, "status": "done", "apply": true}`, errs.CodePathDenied)
}

func TestSetTaskStatusLogseq(t *testing.T) {
	env := opstest.WriteEnv(t, taskFiles)
	p := "graph/pages/Garden.md"
	orig := taskFiles[p]
	// By block uuid alone: the marker swaps, nothing else changes.
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"block": "6561f2c0-0000-4000-8000-0000000000aa", "status": "done", "apply": true}`)
	want := strings.Replace(orig, "- TODO [#A] plant bulbs", "- DONE [#A] plant bulbs", 1)
	if got := opstest.ReadFile(t, env, p); got != want {
		t.Fatalf("by uuid:\n%s", got)
	}
	// LATER reopens as LATER, starts as NOW (no logbook: none added).
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "`+p+`", "line": 4, "status": "in_progress", "apply": true}`)
	want = strings.Replace(want, "- LATER prune roses", "- NOW prune roses", 1)
	if got := opstest.ReadFile(t, env, p); got != want {
		t.Fatalf("LATER → NOW:\n%s", got)
	}
	// DOING → DONE closes the open clock of the existing logbook.
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "`+p+`", "line": 5, "status": "done", "apply": true}`)
	want = strings.Replace(want, "- DOING water\n  :LOGBOOK:\n  CLOCK: [2026-11-20 Fri 09:15:30]\n",
		"- DONE water\n  :LOGBOOK:\n  CLOCK: [2026-11-20 Fri 09:15:30]--[2026-11-20 Fri 10:15:30] =>  01:00:00\n", 1)
	if got := opstest.ReadFile(t, env, p); got != want {
		t.Fatalf("DOING → DONE:\n%s", got)
	}
	// Back to DOING opens a new clock before :END:.
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "`+p+`", "line": 5, "status": "DOING", "apply": true}`)
	want = strings.Replace(want, "01:00:00\n  :END:\n", "01:00:00\n  CLOCK: [2026-11-20 Fri 10:15:30]\n  :END:\n", 1)
	want = strings.Replace(want, "- DONE water", "- DOING water", 1)
	if got := opstest.ReadFile(t, env, p); got != want {
		t.Fatalf("DONE → DOING:\n%s", got)
	}
	// DONE → open is TODO; the index follows.
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "`+p+`", "line": 10, "status": "open", "apply": true}`)
	out := opstest.Call[read.ListTasksOut](t, env, "list_tasks", `{"page": "Garden", "status": "all"}`)
	if got := taskRows(out); got != "graph/pages/Garden.md:1 DONE 2026-11-22 | graph/pages/Garden.md:4 NOW  | graph/pages/Garden.md:5 DOING  | graph/pages/Garden.md:10 TODO " {
		t.Errorf("list after writes: %s", got)
	}
	opstest.WantCode(t, env, "set_task_status", `{"block": "6561f2c0-0000-4000-8000-0000000000ff", "status": "done"}`, errs.CodeBlockNotFound)
	opstest.WantCode(t, env, "set_task_status", `{"path": "`+p+`", "line": 4, "status": "?"}`, errs.CodeInvalidInput)
	d := opstest.WantCode(t, env, "set_task_status", `{"path": "`+p+`", "line": 2, "status": "done"}`, errs.CodeConflict)
	if d["reason"] != "not_a_task" {
		t.Errorf("details %v", d)
	}
}

func TestSetTaskStatusHugeLine(t *testing.T) {
	long := strings.Repeat("word ", 200_000) // 1 MB
	env := opstest.WriteEnv(t, map[string]string{"big.md": "- [ ] " + long + "📅 2026-02-30\n"})
	out := opstest.Call[read.ListTasksOut](t, env, "list_tasks", `{}`)
	if out.Total != 1 || out.Tasks[0].Due != "" {
		t.Fatalf("big task: total %d due %q", out.Total, out.Tasks[0].Due)
	}
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "big.md", "line": 1, "status": "done", "apply": true}`)
	if got := opstest.ReadFile(t, env, "big.md"); got != "- [x] "+long+"📅 2026-02-30 ✅ 2026-11-20\n" {
		t.Errorf("big task after done: %d bytes, ends %q", len(got), got[len(got)-40:])
	}
}

func TestSetTaskStatusKeepsCRLFAndBOM(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"w.md": "\ufeff# W\r\n\r\n- [x] done ✅ 2026-11-01 ^w1\r\n- [ ] b\r\n"})
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"note": "W", "line": 3, "status": "open", "apply": true}`)
	if got := opstest.ReadFile(t, env, "w.md"); got != "\ufeff# W\r\n\r\n- [ ] done ^w1\r\n- [ ] b\r\n" {
		t.Errorf("got %q", got)
	}
}

func TestSetTaskStatusLogseqHeading(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"logseq/config.edn": "{}\n", "pages/H.md": "- ## TODO heading task\n\t- [ ] not a logseq task\n"})
	opstest.Call[ops.WriteResult](t, env, "set_task_status", `{"path": "pages/H.md", "line": 1, "status": "done", "apply": true}`)
	if got := opstest.ReadFile(t, env, "pages/H.md"); got != "- ## DONE heading task\n\t- [ ] not a logseq task\n" {
		t.Errorf("got %q", got)
	}
	opstest.WantCode(t, env, "set_task_status", `{"path": "pages/H.md", "line": 2, "status": "done"}`, errs.CodeConflict)
}
