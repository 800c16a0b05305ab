package markdown

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Task fields, as the Obsidian Tasks plugin writes them (an emoji followed
// by a date) and as Logseq writes them (SCHEDULED/DEADLINE lines under the
// task block, a [#A] priority). Dates are kept only when they are real
// calendar dates in YYYY-MM-DD form; anything else is ignored.

// taskDateEmoji maps an Obsidian Tasks date emoji to the field it sets.
var taskDateEmoji = []struct {
	emoji string
	field int
}{
	{"📅", fieldDue}, {"📆", fieldDue}, {"🗓", fieldDue},
	{"⏳", fieldScheduled}, {"⌛", fieldScheduled},
	{"🛫", fieldStart},
	{"✅", fieldDone},
}

const (
	fieldDue = iota
	fieldScheduled
	fieldStart
	fieldDone
)

// taskPriorityEmoji maps an Obsidian Tasks priority emoji to a priority.
var taskPriorityEmoji = []struct{ emoji, prio string }{
	{"🔺", "highest"}, {"⏫", "high"}, {"🔼", "medium"}, {"🔽", "low"}, {"⏬", "lowest"},
}

// IsTaskDate reports whether s is a valid YYYY-MM-DD calendar date.
func IsTaskDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// obsidianFields fills the date and priority fields of t from its text.
// The first occurrence of each field wins.
func obsidianFields(t *Task) {
	s := t.Text
	for _, e := range taskDateEmoji {
		if !strings.Contains(s, e.emoji) {
			continue
		}
		rest := s
		for {
			i := strings.Index(rest, e.emoji)
			if i < 0 {
				break
			}
			rest = rest[i+len(e.emoji):]
			d := strings.TrimLeft(strings.TrimPrefix(rest, "\ufe0f"), " \t")
			if len(d) >= 10 && IsTaskDate(d[:10]) {
				setField(t, e.field, d[:10])
				break
			}
		}
	}
	best := -1
	for _, p := range taskPriorityEmoji {
		if i := strings.Index(s, p.emoji); i >= 0 && (best < 0 || i < best) {
			best, t.Priority = i, p.prio
		}
	}
}

func setField(t *Task, f int, v string) {
	var p *string
	switch f {
	case fieldDue:
		p = &t.Due
	case fieldScheduled:
		p = &t.Scheduled
	case fieldStart:
		p = &t.Start
	case fieldDone:
		p = &t.Done
	}
	if *p == "" {
		*p = v
	}
}

// logseqPriority returns the priority of a Logseq task text: "[#A]" is
// high, "[#B]" medium, "[#C]" low ("" when there is none).
func logseqPriority(text string) string {
	for _, p := range []struct{ tag, prio string }{{"[#A]", "high"}, {"[#B]", "medium"}, {"[#C]", "low"}} {
		if strings.Contains(text, p.tag) {
			return p.prio
		}
	}
	return ""
}

// logseqDateLine reads a "SCHEDULED: <2026-11-25 Wed>" or
// "DEADLINE: <2026-11-25 Wed 10:00 .+1d>" line.
func logseqDateLine(l string) (field int, date string, ok bool) {
	l = trimSpace(l)
	var rest string
	switch {
	case strings.HasPrefix(l, "SCHEDULED:"):
		field, rest = fieldScheduled, l[len("SCHEDULED:"):]
	case strings.HasPrefix(l, "DEADLINE:"):
		field, rest = fieldDue, l[len("DEADLINE:"):]
	default:
		return 0, "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	if len(rest) < 11 || rest[0] != '<' || !IsTaskDate(rest[1:11]) {
		return 0, "", false
	}
	return field, rest[1:11], true
}

// CheckboxSpan locates the status character of a checkbox task line
// ("- [ ] x", "> 1. [x] y"): the byte range of the character between the
// brackets and the character itself.
func CheckboxSpan(line string) (start, end int, r rune, ok bool) {
	rest, ok := listMarker(stripContainer(line))
	if !ok || len(rest) < 3 || rest[0] != '[' {
		return 0, 0, 0, false
	}
	r, size := utf8.DecodeRuneInString(rest[1:])
	if r == utf8.RuneError && size <= 1 {
		return 0, 0, 0, false
	}
	if 1+size >= len(rest) || rest[1+size] != ']' {
		return 0, 0, 0, false
	}
	if after := rest[2+size:]; after != "" && !isSpace(after[0]) {
		return 0, 0, 0, false
	}
	start = len(line) - len(rest) + 1
	return start, start + size, r, true
}

// LogseqMarkerSpan locates the task marker (TODO, DONE, ...) of a Logseq
// bullet line ("  - TODO x"): its byte range and the marker.
func LogseqMarkerSpan(line string) (start, end int, marker string, ok bool) {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i >= len(line) || line[i] != '-' || i+1 >= len(line) || !isSpace(line[i+1]) {
		return 0, 0, "", false
	}
	i++
	for i < len(line) && isSpace(line[i]) {
		i++
	}
	// A heading block ("- ## TODO x") keeps its marker after the hashes.
	if h := strings.IndexFunc(line[i:], func(r rune) bool { return r != '#' }); h > 0 && h <= 6 && isSpace(line[i+h]) {
		i += h
		for i < len(line) && isSpace(line[i]) {
			i++
		}
	}
	j := i
	for j < len(line) && !isSpace(line[j]) {
		j++
	}
	if markerStatus(line[i:j]) == "" {
		return 0, 0, "", false
	}
	return i, j, line[i:j], true
}

// LogseqMarkerStatus maps a Logseq task marker to its status ("" if w is
// not a marker).
func LogseqMarkerStatus(w string) string { return markerStatus(w) }
