package index

import (
	"io"
	"os"
	"path"
	"strings"

	"github.com/loci-dev/loci/internal/markdown"
)

// Journal titles. A journal's title is its file's date written in its
// graph's :journal/page-title-format, its file named by the graph's
// :journal/file-name-format (logseq/config.edn; markdown.JournalFormats).
// The formats are read once per sync; when they differ from the ones the
// index was built with (meta journal_formats), every journal is parsed
// again, so a changed config re-titles them at the next full sync.

// metaJournalFormats is the meta key of the formats the journals' titles
// were made with.
const metaJournalFormats = "journal_formats"

// JournalSet is the journal formats of a vault's graphs.
type JournalSet struct {
	Roots   []string // graph roots ("" for a graph at the vault root), longest first
	Formats []markdown.JournalFormats
	// Key is "" when every graph uses the defaults, else a text that
	// changes with any graph's formats.
	Key string
}

// maxConfigEDN bounds the config.edn read (larger ones count as absent).
const maxConfigEDN = 1 << 20

// JournalFormats reads the journal formats of every graph of the vault (a
// config that cannot be read counts as the defaults).
func (ix *Index) JournalFormats() JournalSet {
	var s JournalSet
	if ix.Vault == nil {
		return s
	}
	roots := ix.Vault.Graphs()
	// Longest first, so a nested graph wins over the one around it.
	for i := 1; i < len(roots); i++ {
		for j := i; j > 0 && len(roots[j]) > len(roots[j-1]); j-- {
			roots[j], roots[j-1] = roots[j-1], roots[j]
		}
	}
	var key strings.Builder
	for _, g := range roots {
		var f markdown.JournalFormats
		if b, ok := ix.readConfigEDN(path.Join(g, "logseq", "config.edn")); ok {
			f = markdown.ReadJournalFormats(b)
		}
		s.Roots = append(s.Roots, g)
		s.Formats = append(s.Formats, f)
		if f != (markdown.JournalFormats{}) {
			key.WriteString(g + "\x01" + f.File + "\x01" + f.Title + "\x02")
		}
	}
	s.Key = key.String()
	return s
}

// Of is the formats of the graph that holds rel.
func (s JournalSet) Of(rel string) markdown.JournalFormats {
	for i, g := range s.Roots {
		if g == "" || strings.HasPrefix(rel, g+"/") {
			return s.Formats[i]
		}
	}
	return markdown.JournalFormats{}
}

// readConfigEDN reads a config.edn of at most maxConfigEDN bytes, inside
// the vault.
func (ix *Index) readConfigEDN(rel string) ([]byte, bool) {
	f, err := ix.Vault.FS().OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigEDN+1))
	return b, err == nil && len(b) <= maxConfigEDN
}
