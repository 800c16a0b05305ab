package markdown

import (
	"reflect"
	"strings"
	"testing"
)

func TestTaskFieldsObsidian(t *testing.T) {
	src := strings.Join([]string{
		"- [ ] pay rent 📅 2026-12-01 ⏫",
		"- [x] file taxes ⏳ 2026-03-01 🛫 2026-02-20 📅 2026-04-15 ✅ 2026-04-10 🔽",
		"- [ ] bogus 📅 2026-02-30 📅 2026-13-01 📅 soon",
		"- [ ] late second 📅 nope 📅 2026-01-05 🔺",
		"- [/] lowest ⏬ and medium 🔼",
		"plain 📅 2026-12-01",
	}, "\n")
	d := Parse([]byte(src), Options{})
	want := []Task{
		{Line: 1, Status: "todo", Text: "pay rent 📅 2026-12-01 ⏫", Marker: " ", Due: "2026-12-01", Priority: "high"},
		{Line: 2, Status: "done", Text: "file taxes ⏳ 2026-03-01 🛫 2026-02-20 📅 2026-04-15 ✅ 2026-04-10 🔽", Marker: "x",
			Due: "2026-04-15", Scheduled: "2026-03-01", Start: "2026-02-20", Done: "2026-04-10", Priority: "low"},
		{Line: 3, Status: "todo", Text: "bogus 📅 2026-02-30 📅 2026-13-01 📅 soon", Marker: " "},
		{Line: 4, Status: "todo", Text: "late second 📅 nope 📅 2026-01-05 🔺", Marker: " ", Due: "2026-01-05", Priority: "highest"},
		{Line: 5, Status: "in_progress", Text: "lowest ⏬ and medium 🔼", Marker: "/", Priority: "lowest"},
	}
	if !reflect.DeepEqual(d.Tasks, want) {
		t.Errorf("got  %+v\nwant %+v", d.Tasks, want)
	}
}

func TestTaskFieldsLogseq(t *testing.T) {
	src := strings.Join([]string{
		"- TODO [#A] write report",
		"  SCHEDULED: <2026-11-25 Wed>",
		"  DEADLINE: <2026-11-30 Mon 10:00 .+1w>",
		"  id:: 6561f2c0-0000-4000-8000-000000000001",
		"- DONE [#C] tidy",
		"  :LOGBOOK:",
		"  CLOCK: [2026-11-20 Fri 09:00:00]--[2026-11-20 Fri 09:30:00] =>  00:30:00",
		"  :END:",
		"  - LATER child",
		"    DEADLINE: <2026-02-31 Tue>",
		"- not a task",
		"  SCHEDULED: <2026-11-25 Wed>",
	}, "\n")
	d := Parse([]byte(src), Options{Logseq: true})
	want := []Task{
		{Line: 1, Status: "todo", Text: "[#A] write report", Marker: "TODO", Due: "2026-11-30", Scheduled: "2026-11-25", Priority: "high",
			Block: "6561f2c0-0000-4000-8000-000000000001"},
		{Line: 5, Status: "done", Text: "[#C] tidy", Marker: "DONE", Priority: "low"},
		{Line: 9, Status: "todo", Text: "child", Marker: "LATER"},
	}
	if !reflect.DeepEqual(d.Tasks, want) {
		t.Errorf("got  %+v\nwant %+v", d.Tasks, want)
	}
}

func TestTaskSpans(t *testing.T) {
	for _, c := range []struct {
		line       string
		start, end int
		ok         bool
	}{
		{"- [ ] a", 3, 4, true},
		{"> 1. [x] b", 6, 7, true},
		{"  * [é] c", 5, 7, true},
		{"- [] no", 0, 0, false},
		{"plain", 0, 0, false},
	} {
		s, e, _, ok := CheckboxSpan(c.line)
		if s != c.start || e != c.end || ok != c.ok {
			t.Errorf("CheckboxSpan(%q) = %d %d %v", c.line, s, e, ok)
		}
	}
	for _, c := range []struct {
		line   string
		marker string
		start  int
	}{
		{"- TODO a", "TODO", 2},
		{"\t  - DOING x", "DOING", 5},
		{"- todo a", "", 0},
		{"- ## DONE heading", "DONE", 5},
		{"- ####### TODO x", "", 0},
		{"- ##", "", 0},
		{"TODO a", "", 0},
	} {
		s, _, m, _ := LogseqMarkerSpan(c.line)
		if m != c.marker || s != c.start {
			t.Errorf("LogseqMarkerSpan(%q) = %d %q", c.line, s, m)
		}
	}
}

func TestTaskHugeLine(t *testing.T) {
	line := "- [ ] " + strings.Repeat("📅 x", 250_000) + " 📅 2026-01-02"
	d := Parse([]byte(line), Options{})
	if len(d.Tasks) != 1 || d.Tasks[0].Due != "2026-01-02" {
		t.Fatalf("got %d tasks", len(d.Tasks))
	}
}
