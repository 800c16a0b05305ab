package logseq

import (
	"context"
	"path"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/ops"
)

// Journal pages: a page named by a date is a journal, kept in the graph's
// journals/ folder under the file name its logseq/config.edn asks for.

// graphJournalFormats reads the journal formats of the graph at g (a
// vault-relative folder), with Logseq's defaults for what it does not set.
// Only the two keys are read (a line commented out with ; does not count);
// a config that cannot be read gives the defaults. The date patterns are
// markdown's, as the index's journal titles and the query languages use
// them.
func graphJournalFormats(vh *ops.VaultHandle, g string) markdown.JournalFormats {
	f := markdown.JournalFormats{File: markdown.DefaultJournalFileFormat, Title: markdown.DefaultJournalTitleFormat}
	b, err := vh.Vault.FS().ReadFile(path.Join(g, "logseq", "config.edn"))
	if err != nil || len(b) > 1<<20 {
		return f
	}
	read := markdown.ReadJournalFormats(b)
	if read.File != "" {
		f.File = read.File
	}
	if read.Title != "" {
		f.Title = read.Title
	}
	return f
}

// journalDay reports the date a page name stands for: an ISO date
// (2026-11-25), the same with _ or /, or a date written exactly in the
// graph's journal title format (Nov 25th, 2026 by default; "Nov 25, 2026"
// is no journal where the format says "Nov 25th, 2026").
func journalDay(name string, f markdown.JournalFormats) (time.Time, bool) {
	n := strings.TrimSpace(name)
	for _, layout := range []string{"2006-01-02", "2006_01_02", "2006/01/02"} {
		if t, err := time.Parse(layout, n); err == nil {
			return t, true
		}
	}
	return markdown.ParseTitleDate(n, f.TitleFormat())
}

// journalRel is the vault-relative file of the journal page for day t in
// graph g.
func journalRel(g string, f markdown.JournalFormats, t time.Time) string {
	return path.Join(g, "journals", markdown.JournalFileName(t, f.FileFormat())+".md")
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
