package logseq

import (
	"context"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/ops"
)

// Journal pages: a page named by a date is a journal, kept in the graph's
// journals/ folder under the file name its logseq/config.edn asks for.

// journalFormats are a graph's :journal/file-name-format and
// :journal/page-title-format (Logseq's date patterns).
type journalFormats struct {
	file, title string
}

var (
	ednFileFormat = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^[^;\n]*:journal/file-name-format\s+"([^"\n]{1,64})"`)
	})
	ednTitleFormat = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^[^;\n]*:journal/page-title-format\s+"([^"\n]{1,64})"`)
	})
)

// graphJournalFormats reads the journal formats of the graph at g (a
// vault-relative folder), with Logseq's defaults for what it does not set.
// Only the two keys are read (a line commented out with ; does not count);
// a config that cannot be read gives the defaults.
func graphJournalFormats(vh *ops.VaultHandle, g string) journalFormats {
	f := journalFormats{file: "yyyy_MM_dd", title: "MMM do, yyyy"}
	b, err := vh.Vault.FS().ReadFile(path.Join(g, "logseq", "config.edn"))
	if err != nil || len(b) > 1<<20 {
		return f
	}
	if m := ednFileFormat().FindSubmatch(b); m != nil {
		f.file = string(m[1])
	}
	if m := ednTitleFormat().FindSubmatch(b); m != nil {
		f.title = string(m[1])
	}
	return f
}

// dateTokens maps Logseq (Java-style) date pattern letters to Go layouts,
// longest first.
var dateTokens = []struct{ logseq, goLayout string }{
	{"yyyy", "2006"}, {"yy", "06"},
	{"MMMM", "January"}, {"MMM", "Jan"}, {"MM", "01"}, {"M", "1"},
	{"EEEE", "Monday"}, {"EEE", "Mon"}, {"E", "Mon"},
	{"do", "2"}, {"dd", "02"}, {"d", "2"},
}

// goLayout turns a Logseq date pattern into a Go time layout. Characters
// that are not pattern letters stay; 'quoted' text is literal.
func goLayout(p string) string {
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

// formatDate renders t in a Logseq date pattern ("do" is the day with its
// English ordinal suffix, as in Nov 25th, 2026).
func formatDate(t time.Time, pattern string) string {
	const mark = "\x00"
	s := t.Format(goLayout(strings.ReplaceAll(pattern, "do", "d'"+mark+"'")))
	return strings.ReplaceAll(s, mark, markdown.OrdinalSuffix(t.Day()))
}

var ordinalRe = regexp.MustCompile(`(\d)(?:st|nd|rd|th)\b`)

// journalDay reports the date a page name stands for: an ISO date
// (2026-11-25), the same with _ or /, or a date in the graph's journal
// title format (Nov 25th, 2026 by default).
func journalDay(name string, f journalFormats) (time.Time, bool) {
	n := strings.TrimSpace(name)
	for _, layout := range []string{"2006-01-02", "2006_01_02", "2006/01/02"} {
		if t, err := time.Parse(layout, n); err == nil {
			return t, true
		}
	}
	// Ordinals go before parsing ("25th" → "25"); the title must then read
	// back exactly as the format writes it, so "Nov 25, 2026" is no journal
	// where the format says "Nov 25th, 2026".
	if t, err := time.Parse(goLayout(strings.ReplaceAll(f.title, "do", "d")), ordinalRe.ReplaceAllString(n, "$1")); err == nil &&
		strings.EqualFold(formatDate(t, f.title), n) {
		return t, true
	}
	return time.Time{}, false
}

// journalRel is the vault-relative file of the journal page for day t in
// graph g.
func journalRel(g string, f journalFormats, t time.Time) string {
	name := formatDate(t, f.file)
	name = strings.NewReplacer("/", "_", "\\", "_").Replace(name)
	return path.Join(g, "journals", name+".md")
}

// newJournalPage is the journal file for a page name that is a date and has
// no page yet (notFound is returned for any other name).
func newJournalPage(ctx context.Context, env *ops.Env, vault, name string, notFound error) (*ops.VaultHandle, string, error) {
	vh, w, err := ops.WriteVault(env, vault)
	if err != nil {
		return nil, "", err
	}
	g, err := pageGraph(vh, "")
	if err != nil {
		return nil, "", err
	}
	f := graphJournalFormats(vh, g)
	day, ok := journalDay(name, f)
	if !ok {
		return nil, "", notFound
	}
	rel, err := w.Target(journalRel(g, f, day))
	return vh, rel, err
}
