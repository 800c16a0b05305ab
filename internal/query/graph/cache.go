package graph

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
)

// The graph cache: one loaded graph per open Index, shared by every query
// until the index's content revision (or a graph's journal file-name
// format) changes. A published graph is never written again, so queries
// read it without locks; the read fence is applied per query by the
// evaluators, never here.

type cached struct {
	mu   sync.Mutex
	key  string
	g    *Graph
	load *loading // the load in flight, if any
}

// loading is one load shared by the callers that find the cache cold.
type loading struct {
	done chan struct{}
	key  string // the key the graph was read at (set before done closes)
	g    *Graph
	err  error
}

var (
	cachesMu sync.Mutex
	// caches holds one entry per live Index: an entry goes when its Index
	// is garbage collected (the weak key does not keep it alive).
	caches = map[weak.Pointer[index.Index]]*cached{}
)

func cacheOf(ix *index.Index) *cached {
	wp := weak.Make(ix)
	cachesMu.Lock()
	defer cachesMu.Unlock()
	c := caches[wp]
	if c == nil {
		c = &cached{}
		caches[wp] = c
		runtime.AddCleanup(ix, func(wp weak.Pointer[index.Index]) {
			cachesMu.Lock()
			delete(caches, wp)
			cachesMu.Unlock()
		}, wp)
	}
	return c
}

// For returns the graph of ix as of its current content: the cached graph
// when the index has not changed since it was read, else a fresh one
// (concurrent callers share one load). The graph is shared: callers must
// not modify it.
func For(ctx context.Context, ix *index.Index) (*Graph, error) {
	c := cacheOf(ix)
	for {
		formats := journalFormats(ix)
		key := ix.ContentRev(ctx) + "\x00" + formats.key
		c.mu.Lock()
		if c.g != nil && c.key == key {
			g := c.g
			c.mu.Unlock()
			return g, nil
		}
		if l := c.load; l != nil {
			c.mu.Unlock()
			select {
			case <-l.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			switch {
			case l.g != nil && l.key == key:
				return l.g, nil
			case l.g != nil, ctx.Err() == nil && errorsIsCtx(l.err):
				// Read at another revision (the index changed meanwhile),
				// or the loader gave up on its own context: look again.
				continue
			case l.err != nil:
				return nil, l.err
			}
			continue // the loader panicked
		}
		l := &loading{done: make(chan struct{})}
		c.load = l
		c.mu.Unlock()
		c.run(ctx, ix, formats, l)
		if l.err != nil {
			return nil, l.err
		}
		// A sync between reading key and the load gives a newer graph:
		// still this caller's answer.
		return l.g, nil
	}
}

// run loads into l and publishes the graph; waiters are released even
// when the load panics.
func (c *cached) run(ctx context.Context, ix *index.Index, formats formatSet, l *loading) {
	defer func() {
		c.mu.Lock()
		c.load = nil
		if l.err == nil && l.g != nil {
			c.g, c.key = l.g, l.key
		}
		c.mu.Unlock()
		close(l.done)
	}()
	l.g, l.key, l.err = loadAt(ctx, ix, formats)
}

func errorsIsCtx(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// loadAt reads the graph and its content revision in one read
// transaction, so the two agree.
func loadAt(ctx context.Context, ix *index.Index, f formatSet) (*Graph, string, error) {
	tx, err := ix.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", errs.Wrap(err, errs.CodeInternal, "query: reading the index")
	}
	defer tx.Rollback()
	var rev string
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT value FROM meta WHERE key='content_rev'),'')`).Scan(&rev); err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", errs.Wrap(err, errs.CodeInternal, "query: reading the index")
	}
	g, err := load(ctx, tx, f.day)
	if err != nil {
		return nil, "", err
	}
	g.Rev = rev
	g.TitleLayouts = f.titles
	return g, rev + "\x00" + f.key, nil
}

// Journal days. A journal's file is named by its graph's
// :journal/file-name-format (logseq/config.edn; default yyyy_MM_dd).

// fileNameFormat finds :journal/file-name-format "..." in a config.edn
// (not on a line commented out with ;), as internal/ops/logseq reads it;
// "" when absent.
func fileNameFormat(b []byte) string { return ednString(b, ":journal/file-name-format") }

// ednString finds key "..." in a config.edn, a value of 1 to 64 bytes on
// one line, not on a line commented out with ;. "" when absent.
func ednString(b []byte, key string) string {
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

// formatSet is the journal file-name formats of a vault's graphs.
type formatSet struct {
	roots   []string // graph roots, longest first
	layouts []string // Go layouts, "" for the default
	titles  []string // Go layouts of the graphs' non-default :journal/page-title-format, distinct
	key     string
}

// journalFormats reads the :journal/file-name-format of every graph of
// ix's vault (a config that cannot be read counts as the default).
func journalFormats(ix *index.Index) formatSet {
	var f formatSet
	if ix.Vault == nil {
		return f
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
		layout := ""
		if b, ok := readConfig(ix, path.Join(g, "logseq", "config.edn")); ok {
			if p := fileNameFormat(b); p != "" {
				layout = FileLayout(p)
			}
			if p := ednString(b, ":journal/page-title-format"); p != "" && p != "MMM do, yyyy" {
				if t := TitleLayout(p); !slices.Contains(f.titles, t) {
					f.titles = append(f.titles, t)
					key.WriteString("\x03" + t)
				}
			}
		}
		f.roots = append(f.roots, g)
		f.layouts = append(f.layouts, layout)
		key.WriteString(g + "\x01" + layout + "\x02")
	}
	f.key = key.String()
	return f
}

// maxConfig bounds the config.edn read (larger ones count as absent).
const maxConfig = 1 << 20

// readConfig reads a config.edn of at most maxConfig bytes, inside the
// vault.
func readConfig(ix *index.Index, rel string) ([]byte, bool) {
	f, err := ix.Vault.FS().OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	return b, err == nil && len(b) <= maxConfig
}

// day is the day of the journal at rel: by its graph's format, else by
// the default file names.
func (f formatSet) day(rel string) (time.Time, bool) {
	for i, g := range f.roots {
		if g != "" && !strings.HasPrefix(rel, g+"/") {
			continue
		}
		if f.layouts[i] != "" {
			if t, ok := ParseTitle(f.layouts[i], strings.TrimSuffix(path.Base(rel), path.Ext(rel))); ok {
				return t, true
			}
		}
		break
	}
	return defaultDay(rel)
}

// defaultDay reads a yyyy_MM_dd or yyyy-MM-dd journal file name.
func defaultDay(rel string) (time.Time, bool) {
	stem := strings.TrimSuffix(path.Base(rel), path.Ext(rel))
	t, err := time.Parse("2006_01_02", strings.ReplaceAll(stem, "-", "_"))
	return t, err == nil
}

var ordinal = regexp.MustCompile(`(\d)(?:st|nd|rd|th)\b`)

// dateTokens maps Logseq (Java-style) date pattern letters to Go layouts,
// longest first.
var dateTokens = []struct{ logseq, goLayout string }{
	{"yyyy", "2006"}, {"yy", "06"},
	{"MMMM", "January"}, {"MMM", "Jan"}, {"MM", "01"}, {"M", "1"},
	{"EEEE", "Monday"}, {"EEE", "Mon"}, {"E", "Mon"},
	{"do", "2"}, {"dd", "02"}, {"d", "2"},
}

// FileLayout turns a Logseq journal file-name pattern into the Go layout
// of the file stems it writes ('quoted' text is literal; / and \ become _
// as in Logseq's file names; "do" reads a day whose ordinal suffix was
// removed).
func FileLayout(p string) string {
	return strings.NewReplacer("/", "_", "\\", "_").Replace(TitleLayout(p))
}

// ParseTitle reads a journal title or file stem s with a Go layout from
// FileLayout or TitleLayout (an ordinal suffix such as the "th" of 25th
// is dropped first).
func ParseTitle(layout, s string) (time.Time, bool) {
	t, err := time.Parse(layout, ordinal.ReplaceAllString(strings.TrimSpace(s), "$1"))
	return t, err == nil
}

// TitleLayout turns a Logseq date pattern (:journal/page-title-format)
// into a Go layout ('quoted' text is literal; "do" reads a day whose
// ordinal suffix was removed).
func TitleLayout(p string) string {
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
