package markdown

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Logseq journal dates. A graph's logseq/config.edn names its journals'
// files with :journal/file-name-format (default yyyy_MM_dd) and titles
// them with :journal/page-title-format (default "MMM do, yyyy"); both are
// Java-style date patterns. These helpers are shared by the index (the
// title of a journal), the query languages (journal days) and the Logseq
// operations (a journal's file for a date).

// Logseq's default journal formats.
const (
	DefaultJournalFileFormat  = "yyyy_MM_dd"
	DefaultJournalTitleFormat = "MMM do, yyyy"
)

// JournalFormats are a graph's journal date patterns ("" is the default).
type JournalFormats struct {
	File, Title string
}

// ReadJournalFormats reads :journal/file-name-format and
// :journal/page-title-format from the bytes of a config.edn (a value on a
// line commented out with ; does not count); what it does not set is "".
func ReadJournalFormats(configEDN []byte) JournalFormats {
	return JournalFormats{
		File:  EDNString(configEDN, ":journal/file-name-format"),
		Title: EDNString(configEDN, ":journal/page-title-format"),
	}
}

// FileFormat is the file-name pattern, the default when unset.
func (f JournalFormats) FileFormat() string {
	if f.File == "" {
		return DefaultJournalFileFormat
	}
	return f.File
}

// TitleFormat is the page-title pattern, the default when unset.
func (f JournalFormats) TitleFormat() string {
	if f.Title == "" {
		return DefaultJournalTitleFormat
	}
	return f.Title
}

// EDNString finds key "..." in a config.edn, a value of 1 to 64 bytes on
// one line, not on a line commented out with ;. "" when absent.
func EDNString(b []byte, key string) string {
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(key))
		if i < 0 {
			return ""
		}
		i += off
		off = i + len(key)
		start := bytes.LastIndexByte(b[:i], '\n') + 1
		if bytes.IndexByte(b[start:i], ';') >= 0 {
			continue
		}
		rest := b[off:]
		j := 0
		for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t' || rest[j] == '\n' || rest[j] == '\r' || rest[j] == '\f') {
			j++
		}
		if j == 0 || j >= len(rest) || rest[j] != '"' {
			continue
		}
		end := bytes.IndexAny(rest[j+1:], "\"\n")
		if end < 1 || end > 64 || rest[j+1+end] != '"' {
			continue
		}
		return string(rest[j+1 : j+1+end])
	}
}

var ordinalRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(\d)(?:st|nd|rd|th)\b`) })

// dateTokens maps Logseq (Java-style) date pattern letters to Go layouts,
// longest first.
var dateTokens = []struct{ logseq, goLayout string }{
	{"yyyy", "2006"}, {"yy", "06"},
	{"MMMM", "January"}, {"MMM", "Jan"}, {"MM", "01"}, {"M", "1"},
	{"EEEE", "Monday"}, {"EEE", "Mon"}, {"E", "Mon"},
	{"do", "2"}, {"dd", "02"}, {"d", "2"},
}

// DateLayout turns a Logseq date pattern into a Go time layout ('quoted'
// text is literal; "do" reads a day whose ordinal suffix was removed, see
// ParseDate).
func DateLayout(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); {
		if p[i] == '\'' {
			j := strings.IndexByte(p[i+1:], '\'')
			if j < 0 {
				b.WriteString(p[i+1:])
				break
			}
			b.WriteString(p[i+1 : i+1+j])
			i += j + 2
			continue
		}
		matched := false
		for _, t := range dateTokens {
			if strings.HasPrefix(p[i:], t.logseq) {
				b.WriteString(t.goLayout)
				i += len(t.logseq)
				matched = true
				break
			}
		}
		if !matched {
			b.WriteByte(p[i])
			i++
		}
	}
	return b.String()
}

// FileDateLayout is the Go layout of the file stems a journal file-name
// pattern writes (/ and \ become _, as in Logseq's file names).
func FileDateLayout(p string) string {
	return strings.NewReplacer("/", "_", "\\", "_").Replace(DateLayout(p))
}

// ParseDate reads s with a Go layout from DateLayout or FileDateLayout
// (an ordinal suffix such as the "th" of 25th is dropped first). It is
// lenient about the suffix: "Nov 25, 2026" reads as "Nov 25th, 2026".
func ParseDate(layout, s string) (time.Time, bool) {
	t, err := time.Parse(layout, ordinalRe().ReplaceAllString(strings.TrimSpace(s), "$1"))
	return t, err == nil
}

// FormatDate renders t in a Logseq date pattern ("do" is the day with its
// English ordinal suffix, as in Nov 25th, 2026).
func FormatDate(t time.Time, pattern string) string {
	const mark = "\x00"
	s := t.Format(DateLayout(strings.ReplaceAll(pattern, "do", "d'"+mark+"'")))
	return strings.ReplaceAll(s, mark, OrdinalSuffix(t.Day()))
}

// JournalFileName is the file stem of the journal of day t under a
// file-name pattern ("/" and "\" become "_").
func JournalFileName(t time.Time, pattern string) string {
	return strings.NewReplacer("/", "_", "\\", "_").Replace(FormatDate(t, pattern))
}

// ParseTitleDate reads a page name written exactly in the title pattern
// (case aside): "Nov 25th, 2026" is a date under "MMM do, yyyy", "Nov 25,
// 2026" is not.
func ParseTitleDate(name, pattern string) (time.Time, bool) {
	n := strings.TrimSpace(name)
	t, ok := ParseDate(DateLayout(pattern), n)
	if !ok || !strings.EqualFold(FormatDate(t, pattern), n) {
		return time.Time{}, false
	}
	return t, true
}

// JournalFileDate reads the day of a journal file stem: by the graph's
// file-name pattern when set, else (and as a fallback) Logseq's default
// yyyy_MM_dd or yyyy-MM-dd.
func JournalFileDate(stem string, f JournalFormats) (time.Time, bool) {
	if f.File != "" && f.File != DefaultJournalFileFormat {
		if t, ok := ParseDate(FileDateLayout(f.File), stem); ok {
			return t, true
		}
	}
	t, err := time.Parse("2006_01_02", strings.ReplaceAll(stem, "-", "_"))
	return t, err == nil
}

// journalTitle is the title of the journal whose file stem is stem: its
// date in the graph's title pattern (false when stem is no date).
func journalTitle(stem string, f JournalFormats) (string, bool) {
	if f == (JournalFormats{}) {
		return JournalTitle(stem) // the defaults: no layout to build
	}
	t, ok := JournalFileDate(stem, f)
	if !ok {
		return "", false
	}
	return FormatDate(t, f.TitleFormat()), true
}
