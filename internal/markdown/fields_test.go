package markdown

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestInlineFields(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []Field
	}{
		{"Rating:: 9", []Field{{Key: "Rating", Value: "9"}}},
		{"- Status:: in progress ", []Field{{Key: "Status", Value: "in progress"}}},
		{"> * **Due Date**:: 2026-12-01", []Field{{Key: "Due Date", Value: "2026-12-01"}}},
		{"1. author:: [[Ann Lee]]", []Field{{Key: "author", Value: "[[Ann Lee]]"}}},
		// A task's line has bracketed fields only.
		{"- [ ] owner:: bob", nil},
		{"- [x] done [owner:: bob]", []Field{{Key: "owner", Value: "bob"}}},
		{"I read it [rating:: 8] and (mood:: good), twice", []Field{{Key: "rating", Value: "8"}, {Key: "mood", Value: "good"}}},
		{"- [ ] pay rent [due:: 2026-12-01] [links:: [[A]], [[B]]]", []Field{{Key: "due", Value: "2026-12-01"}, {Key: "links", Value: "[[A]], [[B]]"}}},
		// A line with bracketed fields has only those.
		{"key:: v [a:: 1]", []Field{{Key: "a", Value: "1"}}},
		{"empty::", []Field{{Key: "empty", Value: ""}}},
		{"🎯 goal:: ship", []Field{{Key: "🎯 goal", Value: "ship"}}},
		// Not fields.
		{"no fields here", nil},
		{"a single: colon", nil},
		{"`code:: x` and ``[k:: v]``", nil},
		{":: no key", nil},
		{"[[note:: x]]", nil},
		{"[open:: never closed", nil},
		{"- [ ] plain task", nil},
		{"k:: " + strings.Repeat("v", maxFieldLine), nil},
	} {
		if got := InlineFields(tc.line); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("InlineFields(%q) = %#v, want %#v", tc.line, got, tc.want)
		}
	}
}

func TestNormalizeFieldKey(t *testing.T) {
	for in, want := range map[string]string{"Due Date": "due-date", "**Bold**": "bold", "rating": "rating", " Two  Spaces ": "two-spaces", "Ünï": "ünï"} {
		if got := NormalizeFieldKey(in); got != want {
			t.Errorf("NormalizeFieldKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseInlineFields(t *testing.T) {
	src := "---\nkey:: in frontmatter\n---\n# Title\nRating:: 7\n```\ncode:: no\n```\n%%\nhidden:: no\n%%\n- [ ] pay rent [due:: 2026-12-01] [start:: 2026-11-20]\n- [x] filed 📅 2026-10-01 [due:: 2026-09-01] (completion:: 2026-09-30)\n- [ ] bad [due:: someday] [scheduled:: 2026-02-30]\n"
	d := Parse([]byte(src), Options{Path: "n.md"})
	want := []Field{
		{Key: "Rating", Value: "7", Line: 5},
		{Key: "due", Value: "2026-12-01", Line: 12},
		{Key: "start", Value: "2026-11-20", Line: 12},
		{Key: "due", Value: "2026-09-01", Line: 13},
		{Key: "completion", Value: "2026-09-30", Line: 13},
		{Key: "due", Value: "someday", Line: 14},
		{Key: "scheduled", Value: "2026-02-30", Line: 14},
	}
	if !reflect.DeepEqual(d.Fields, want) {
		t.Fatalf("fields = %#v\nwant %#v", d.Fields, want)
	}
	if len(d.Tasks) != 3 {
		t.Fatalf("tasks = %#v", d.Tasks)
	}
	if tk := d.Tasks[0]; tk.Due != "2026-12-01" || tk.Start != "2026-11-20" || tk.Done != "" {
		t.Errorf("task 1 = %+v", tk)
	}
	// The emoji wins over the inline field.
	if tk := d.Tasks[1]; tk.Due != "2026-10-01" || tk.Done != "2026-09-30" {
		t.Errorf("task 2 = %+v", tk)
	}
	if tk := d.Tasks[2]; tk.Due != "" || tk.Scheduled != "" {
		t.Errorf("task 3 = %+v", tk)
	}
	// A Logseq page has properties, not inline fields.
	if d := Parse([]byte("- a\n  rating:: 9\n"), Options{Path: "pages/p.md", Logseq: true}); len(d.Fields) != 0 {
		t.Errorf("logseq fields = %#v", d.Fields)
	}
}

// FuzzInlineFields checks that inline fields read from one line are well
// formed: a non-empty key of at most maxFieldKey bytes without "::" or a
// bracket, a value and key that are parts of the line.
func FuzzInlineFields(f *testing.F) {
	for _, s := range []string{
		"Key:: value", "- [ ] t [due:: 2026-12-01] (x:: [[a]])", "**B**:: `c:: d`", "[a:: [b:: c]]", "(k:: (nested) v)", "🎯:: x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n") {
			return
		}
		for _, fl := range InlineFields(line) {
			if fl.Key == "" || len(fl.Key) > maxFieldKey || strings.Contains(fl.Key, "::") || strings.ContainsAny(fl.Key, "[]()") {
				t.Fatalf("bad key %q", fl.Key)
			}
			if !strings.Contains(line, fl.Key) || !strings.Contains(line, fl.Value) {
				t.Fatalf("field %+v not in line", fl)
			}
			if utf8.ValidString(line) && (!utf8.ValidString(fl.Key) || !utf8.ValidString(fl.Value)) {
				t.Fatalf("field %+v not UTF-8", fl)
			}
			_ = NormalizeFieldKey(fl.Key)
		}
	})
}

// TestInlineFieldsHostile: lines built to make a naive scan quadratic
// still give the right answer (the parser is linear in the line).
func TestInlineFieldsHostile(t *testing.T) {
	open := strings.Repeat("[a:: ", 6000)
	if got := InlineFields(open); got != nil {
		t.Errorf("unclosed fields: %d", len(got))
	}
	got := InlineFields(open + "[b:: c]")
	if len(got) != 1 || got[0].Key != "b" || got[0].Value != "c" {
		t.Errorf("one closed field after unclosed ones: %#v", got)
	}
	ticks := strings.Repeat("`", 3000) + " x:: y"
	if got := InlineFields(ticks); len(got) != 0 {
		t.Errorf("backticks: %#v", got)
	}
}
