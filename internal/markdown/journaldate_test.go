package markdown

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestFileNameFormat(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{:journal/file-name-format "yyyy-MM-dd"}`, "yyyy-MM-dd"},
		{"{:meta/version 1\n ;; :journal/file-name-format \"yyyy\"\n :journal/file-name-format\n   \"dd.MM.yyyy\"}", "dd.MM.yyyy"},
		{`{:journal/page-title-format "yyyy"}`, ""},
		{`{:journal/file-name-format ""}`, ""},
		{`{:journal/file-name-format "unclosed}`, ""},
		{"{:journal/file-name-format \"a\nb\"}", ""},
		{`{:journal/file-name-format yyyy}`, ""},
		{`{:journal/file-name-format"yyyy"}`, ""},
		{`{:journal/file-name-format "` + strings.Repeat("y", 65) + `"}`, ""},
		{`{:journal/file-name-format "` + strings.Repeat("y", 64) + `"}`, strings.Repeat("y", 64)},
		{`:journal/file-name-format`, ""},
		{"", ""},
	} {
		if got := EDNString([]byte(c.in), ":journal/file-name-format"); got != c.want {
			t.Errorf("EDNString(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzEDNString: any config text reads without a panic, and what it
// finds is a quoted value of at most 64 bytes on one line.
func FuzzEDNString(f *testing.F) {
	f.Add([]byte(`{:journal/file-name-format "yyyy_MM_dd"}`))
	f.Add([]byte("; :journal/file-name-format \"x\"\n:journal/file-name-format \t\"y\""))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := EDNString(b, ":journal/file-name-format")
		if len(s) > 64 || strings.ContainsAny(s, "\"\n") || s != "" && !bytes.Contains(b, []byte(`"`+s+`"`)) {
			t.Fatalf("%q: %q", b, s)
		}
		// Whatever pattern a config holds, the date helpers read and
		// write with it without a panic.
		f := JournalFormats{File: s, Title: s}
		_, _ = JournalFileDate(s, f)
		_, _ = journalTitle("20261120", f)
		_, _ = ParseTitleDate(s, s)
	})
}

func TestJournalDates(t *testing.T) {
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	if got := FormatDate(day, "MMM do, yyyy"); got != "Nov 20th, 2026" {
		t.Errorf("FormatDate = %q", got)
	}
	if got := FormatDate(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), "EEEE, do MMMM yyyy"); got != "Monday, 23rd November 2026" {
		t.Errorf("FormatDate = %q", got)
	}
	if got := JournalFileName(day, "yyyy/MM/dd"); got != "2026_11_20" {
		t.Errorf("JournalFileName = %q", got)
	}
	for _, c := range []struct {
		name, pattern string
		ok            bool
	}{
		{"Nov 20th, 2026", "MMM do, yyyy", true},
		{"nov 20TH, 2026", "MMM do, yyyy", true},
		{"Nov 20, 2026", "MMM do, yyyy", false}, // not as the pattern writes it
		{"2026-11-20", "yyyy-MM-dd", true},
		{"2026-11-31", "yyyy-MM-dd", false},
		{"20261120", "MMM do, yyyy", false},
	} {
		got, ok := ParseTitleDate(c.name, c.pattern)
		if ok != c.ok || ok && !got.Equal(day) {
			t.Errorf("ParseTitleDate(%q, %q) = %v %v", c.name, c.pattern, got, ok)
		}
	}
	for _, c := range []struct {
		stem string
		f    JournalFormats
		ok   bool
	}{
		{"2026_11_20", JournalFormats{}, true},
		{"2026-11-20", JournalFormats{}, true},
		{"20261120", JournalFormats{}, false},
		{"20261120", JournalFormats{File: "yyyyMMdd"}, true},
		{"2026_11_20", JournalFormats{File: "yyyyMMdd"}, true}, // the default names still read
		{"20261320", JournalFormats{File: "yyyyMMdd"}, false},
	} {
		got, ok := JournalFileDate(c.stem, c.f)
		if ok != c.ok || ok && !got.Equal(day) {
			t.Errorf("JournalFileDate(%q, %+v) = %v %v", c.stem, c.f, got, ok)
		}
	}
	for _, c := range []struct {
		stem string
		f    JournalFormats
		want string
	}{
		{"2026_11_20", JournalFormats{}, "Nov 20th, 2026"},
		{"20261120", JournalFormats{File: "yyyyMMdd"}, "Nov 20th, 2026"},
		{"20261120", JournalFormats{File: "yyyyMMdd", Title: "MMM do, yyyy"}, "Nov 20th, 2026"},
		{"2026_11_20", JournalFormats{Title: "yyyy-MM-dd"}, "2026-11-20"},
		{"20261120", JournalFormats{}, ""},
		{"notadate", JournalFormats{File: "yyyyMMdd"}, ""},
	} {
		got, _ := journalTitle(c.stem, c.f)
		if got != c.want {
			t.Errorf("journalTitle(%q, %+v) = %q, want %q", c.stem, c.f, got, c.want)
		}
	}
	f := ReadJournalFormats([]byte("{:journal/page-title-format \"EEE, dd.MM.yyyy\"\n ; :journal/file-name-format \"x\"\n :journal/file-name-format \"yyyyMMdd\"}"))
	if f != (JournalFormats{File: "yyyyMMdd", Title: "EEE, dd.MM.yyyy"}) || f.FileFormat() != "yyyyMMdd" || (JournalFormats{}).TitleFormat() != DefaultJournalTitleFormat {
		t.Errorf("ReadJournalFormats = %+v", f)
	}
}

// A journal's title follows its graph's formats (Options.JournalFormats).
func TestJournalTitleOption(t *testing.T) {
	d := Parse([]byte("- hello\n"), Options{Path: "journals/20261120.md", Logseq: true, Journal: true, JournalFormats: JournalFormats{File: "yyyyMMdd"}})
	if d.Title != "Nov 20th, 2026" {
		t.Errorf("title %q", d.Title)
	}
	d = Parse([]byte("- hello\n"), Options{Path: "journals/20261120.md", Logseq: true, Journal: true})
	if d.Title != "20261120" {
		t.Errorf("title without the format %q", d.Title)
	}
}
