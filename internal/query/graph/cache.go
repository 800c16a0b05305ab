package graph

import (
	"context"
	"database/sql"
	"errors"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/markdown"
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
	g.setTitleFormats(f.formats)
	return g, rev + "\x00" + f.key, nil
}

// Journal days. A journal's file is named by its graph's
// :journal/file-name-format (logseq/config.edn; default yyyy_MM_dd); the
// formats are read by the index (index.JournalFormats) and the date
// patterns are markdown's (markdown.DateLayout and friends), which the
// index's journal titles and the Logseq operations use too.

// formatSet is the journal formats of a vault's graphs.
type formatSet struct {
	set     index.JournalSet
	titles  []string // Go layouts of the graphs' non-default :journal/page-title-format, distinct
	formats []string // the graphs' title patterns (the default included when one uses it), distinct
	key     string
}

// journalFormats reads the journal formats of every graph of ix's vault
// (a config that cannot be read counts as the default).
func journalFormats(ix *index.Index) formatSet {
	f := formatSet{set: ix.JournalFormats()}
	for _, jf := range f.set.Formats {
		if !slices.Contains(f.formats, jf.TitleFormat()) {
			f.formats = append(f.formats, jf.TitleFormat())
		}
		if p := jf.Title; p != "" && p != markdown.DefaultJournalTitleFormat {
			if t := TitleLayout(p); !slices.Contains(f.titles, t) {
				f.titles = append(f.titles, t)
			}
		}
	}
	if len(f.formats) == 0 {
		f.formats = []string{markdown.DefaultJournalTitleFormat}
	}
	f.key = f.set.Key
	return f
}

// day is the day of the journal at rel: by its graph's format, else by
// the default file names.
func (f formatSet) day(rel string) (time.Time, bool) {
	return markdown.JournalFileDate(strings.TrimSuffix(path.Base(rel), path.Ext(rel)), f.set.Of(rel))
}

// defaultDay reads a yyyy_MM_dd or yyyy-MM-dd journal file name.
func defaultDay(rel string) (time.Time, bool) {
	return markdown.JournalFileDate(strings.TrimSuffix(path.Base(rel), path.Ext(rel)), markdown.JournalFormats{})
}

// FileLayout turns a Logseq journal file-name pattern into the Go layout
// of the file stems it writes (markdown.FileDateLayout).
func FileLayout(p string) string { return markdown.FileDateLayout(p) }

// ParseTitle reads a journal title or file stem s with a Go layout from
// FileLayout or TitleLayout (an ordinal suffix such as the "th" of 25th
// is dropped first; markdown.ParseDate).
func ParseTitle(layout, s string) (time.Time, bool) { return markdown.ParseDate(layout, s) }

// TitleLayout turns a Logseq date pattern (:journal/page-title-format)
// into a Go layout (markdown.DateLayout).
func TitleLayout(p string) string { return markdown.DateLayout(p) }
