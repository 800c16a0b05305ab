package dataview

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/query"
)

// Loading. A query reads a model of the index: its notes with their
// tags, aliases, inline fields and tasks, and (only for a query that
// names file.inlinks, file.outlinks, a [[note]] source or outgoing()) the
// links between them. The rows are read once per content revision
// (index.ContentRev) in one read transaction and kept (see cached); the
// links, the largest table by far, are read on the first query that needs
// them; each note's frontmatter JSON is parsed on its first use.

type note struct {
	id                        int64
	path, name, folder, title string
	mtime, ctime              time.Time
	size                      int64
	fmJSON                    string // the frontmatter as stored (JSON), "" when none
	fmOnce                    sync.Once
	fm                        map[string]any // parsed from fmJSON on first use (frontmatter)
	tags                      []string       // as written, without '#', deduplicated
	aliases                   []any
	// fields are the inline fields by normalized key (one value, or a
	// list when the key occurs more than once); lineFields the same per
	// line, for the tasks on that line.
	fields     map[string]any
	lineFields map[int]map[string]any
	// file.tags and file.etags as values, made once by build (shared:
	// never changed once built).
	tagList, etagList []any
	// The links, set by (*model).linkUp (under the model's lock) and read
	// only by queries that called it: file.outlinks and file.inlinks as
	// values, and the ids behind them.
	outNotes, inNotes []*note // the notes linked to and from, each once
	linkLo, linkHi    int     // where n's links are in the model's raw links
	lastSrc           int64   // linkUp's: the last source seen linking here
	outOnce, inOnce   sync.Once
	out               []link // file.outlinks as links (set by the fuzz model; else made by outLinks)
	outList, inList   []any  // made on first use (outLinks, inLinks)
}

func (n *note) link() link { return link{n.path, n.name} }

// frontmatter is the note's frontmatter (nil when none), parsed on first
// use.
func (n *note) frontmatter() map[string]any {
	n.fmOnce.Do(func() {
		if n.fmJSON == "" {
			return
		}
		var m map[string]any
		if json.Unmarshal([]byte(n.fmJSON), &m) == nil {
			n.fm = m
		}
	})
	return n.fm
}

// raw is what a query reads from the index, as stored: loaded once per
// content revision (see cached) and shared, read-only, by every query.
type raw struct {
	rev     string // the content revision the rows were read at
	notes   []noteRow
	aliases []idText
	tags    []idText
	fields  []rawField
	tasks   []index.TaskRow // by path and line
	full    *model          // the model with every note shown

	// links are read by the first query that needs them (loadLinks), under
	// the cache entry's lock; hasLinks says they are. base is the latest
	// earlier revision's rows that had links (its notes, aliases and
	// links only), for reading only the links that changed since.
	links      []rawLink // by source id, then line
	hasLinks   bool
	base       *raw
	incomplete bool // the index's last sync had not finished (its links may be partial)

	mu     sync.Mutex
	fenced []fencedModel // the latest models of fenced views, newest last
}

type noteRow struct {
	id                   int64
	path, title, created string
	kind, hash           string
	fm                   string
	mtime, size          int64
}

// fencedModel is the model of a view that hides the notes hidden (ids,
// in path order): it depends on nothing else, so views hiding the same
// notes share it.
type fencedModel struct {
	hidden []int64
	m      *model
}

// maxFenced bounds the fenced views kept per index.
const maxFenced = 4

type idText struct {
	id   int64
	text string
}

type rawLink struct {
	src, dst int64 // dst 0: unresolved
	line     int
	target   string // set when unresolved
}

type rawField struct {
	id        int64
	norm, val string
	line      int
}

// model is the part of the index a query reads, with hidden notes left
// out. It is read-only once built, but for its links (linkUp).
type model struct {
	raw    *raw
	notes  []*note
	byID   map[int64]*note
	byPath map[string]*note
	keys   map[string]*note // path without .md, file name and title, lower-cased (made on first use: keyMap)
	tasks  []index.TaskRow  // every task, by path and line (rows of hidden notes are skipped by run)

	linkMu sync.Mutex
	linked bool

	keysOnce sync.Once
}

// keyMap is m.keys, made on first use: a note by its path without the
// extension (which wins), else by its file name or title (the first note
// in path order).
func (m *model) keyMap() map[string]*note {
	m.keysOnce.Do(func() {
		if m.keys != nil {
			return
		}
		m.keys = make(map[string]*note, 2*len(m.notes))
		for _, n := range m.notes {
			pk := strings.ToLower(strings.TrimSuffix(n.path, path.Ext(n.path)))
			for _, k := range [3]string{strings.ToLower(n.name), strings.ToLower(n.title), pk} {
				if _, taken := m.keys[k]; !taken || k == pk {
					m.keys[k] = n
				}
			}
		}
	})
	return m.keys
}

// queryer is a read transaction or the database.
type queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

func scan(ctx context.Context, q queryer, sqlText string, each func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, sqlText)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	return errs.Wrap(err, errs.CodeInternal, "dataview: reading the index")
}

// loadRaw reads the rows of ix in one read transaction (the links too
// when withLinks; the tasks, read by the index's own query, just before).
// base is what an earlier revision read (nil: none), see linksIn.
func loadRaw(ctx context.Context, ix *index.Index, withLinks bool, base *raw) (*raw, error) {
	r := &raw{base: base}
	var err error
	if r.tasks, err = ix.Tasks(ctx, index.TaskFilter{}); err != nil {
		return nil, readErr(ctx, err)
	}
	sort.SliceStable(r.tasks, func(i, j int) bool {
		if r.tasks[i].Path != r.tasks[j].Path {
			return r.tasks[i].Path < r.tasks[j].Path
		}
		return r.tasks[i].Line < r.tasks[j].Line
	})
	tx, err := ix.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, readErr(ctx, err)
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT value FROM meta WHERE key='content_rev'),''),
		EXISTS(SELECT 1 FROM meta WHERE key='sync_incomplete' AND value <> '')`).Scan(&r.rev, &r.incomplete); err != nil {
		return nil, readErr(ctx, err)
	}
	if err := scan(ctx, tx, `SELECT id, path, title, kind, hash, mtime, size, COALESCE(created,''), COALESCE(frontmatter,'') FROM notes`, func(rows *sql.Rows) error {
		var x noteRow
		err := rows.Scan(&x.id, &x.path, &x.title, &x.kind, &x.hash, &x.mtime, &x.size, &x.created, &x.fm)
		r.notes = append(r.notes, x)
		return err
	}); err != nil {
		return nil, readErr(ctx, err)
	}
	// By path (as ORDER BY path would, in byte order, but cheaper than
	// reading the table through its path index).
	slices.SortFunc(r.notes, func(a, b noteRow) int { return strings.Compare(a.path, b.path) })
	if err := query.Check(ctx); err != nil {
		return nil, err
	}
	if err := scan(ctx, tx, `SELECT note_id, alias FROM aliases ORDER BY rowid`, func(rows *sql.Rows) error {
		var x idText
		err := rows.Scan(&x.id, &x.text)
		r.aliases = append(r.aliases, x)
		return err
	}); err != nil {
		return nil, readErr(ctx, err)
	}
	if err := scan(ctx, tx, `SELECT note_id, tag FROM tags ORDER BY note_id, line`, func(rows *sql.Rows) error {
		var x idText
		err := rows.Scan(&x.id, &x.text)
		r.tags = append(r.tags, x)
		return err
	}); err != nil {
		return nil, readErr(ctx, err)
	}
	if err := scan(ctx, tx, `SELECT note_id, key_norm, value, line FROM fields ORDER BY note_id, line, rowid`, func(rows *sql.Rows) error {
		var x rawField
		err := rows.Scan(&x.id, &x.norm, &x.val, &x.line)
		r.fields = append(r.fields, x)
		return err
	}); err != nil {
		return nil, readErr(ctx, err)
	}
	if withLinks {
		if err := r.linksIn(ctx, tx); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// errStale: the index changed since the rows were read.
var errStale = errors.New("dataview: the index changed")

// loadLinks reads the links of r's revision (errStale when the index has
// moved on: the caller then reads everything again).
func (r *raw) loadLinks(ctx context.Context, ix *index.Index) error {
	tx, err := ix.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return readErr(ctx, err)
	}
	defer tx.Rollback()
	var rev string
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT value FROM meta WHERE key='content_rev'),'')`).Scan(&rev); err != nil {
		return readErr(ctx, err)
	}
	if rev != r.rev {
		return errStale
	}
	return r.linksIn(ctx, tx)
}

// linksIn reads r's links in tx (at r's revision): only those of the
// notes whose content changed since r.base when that is all that
// changed, else all of them.
func (r *raw) linksIn(ctx context.Context, tx queryer) error {
	if ok, err := r.linksSince(ctx, tx, r.base); err != nil || ok {
		r.base = nil
		return err
	}
	r.base = nil
	return r.readLinks(ctx, tx)
}

// linksSince makes r's links from b's (an earlier revision's) and the
// links of the notes whose content changed since, read from tx. That is
// exact when no note came, went, or changed what links resolve by (path,
// title, kind, aliases; the resolution of a link depends on nothing
// else) and neither read was of a sync left unfinished; it reports false
// otherwise, and when it cannot tell what changed (no note did).
func (r *raw) linksSince(ctx context.Context, tx queryer, b *raw) (bool, error) {
	if b == nil || !b.hasLinks || b.incomplete || r.incomplete || len(b.notes) != len(r.notes) {
		return false, nil
	}
	old := make(map[int64]*noteRow, len(b.notes))
	for i := range b.notes {
		old[b.notes[i].id] = &b.notes[i]
	}
	var changed []int64
	for i := range r.notes {
		n := &r.notes[i]
		o := old[n.id]
		if o == nil || o.path != n.path || o.title != n.title || o.kind != n.kind {
			return false, nil
		}
		if o.hash != n.hash {
			changed = append(changed, n.id)
		}
	}
	if len(changed) == 0 || !sameAliases(b.aliases, r.aliases) {
		return false, nil
	}
	ids, _ := json.Marshal(changed)
	var fresh []rawLink
	rows, err := tx.QueryContext(ctx, `SELECT src_id, line, COALESCE(dst_id, 0), CASE WHEN dst_id IS NULL THEN target ELSE '' END FROM links
		WHERE src_id IN (SELECT value FROM json_each(?)) AND kind IN ('wikilink','embed','markdown','typed')`, string(ids))
	if err != nil {
		return false, readErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var x rawLink
		if err := rows.Scan(&x.src, &x.line, &x.dst, &x.target); err != nil {
			return false, readErr(ctx, err)
		}
		fresh = append(fresh, x)
	}
	if err := rows.Err(); err != nil {
		return false, readErr(ctx, err)
	}
	sortLinks(fresh)
	gone := make(map[int64]bool, len(changed))
	for _, id := range changed {
		gone[id] = true
	}
	// Merge: b's links but the changed notes', and theirs anew, by source.
	links := make([]rawLink, 0, len(b.links)+len(fresh))
	j := 0
	for _, x := range b.links {
		if gone[x.src] {
			continue
		}
		for j < len(fresh) && fresh[j].src < x.src {
			links = append(links, fresh[j])
			j++
		}
		links = append(links, x)
	}
	links = append(links, fresh[j:]...)
	r.links, r.hasLinks = links, true
	return true, nil
}

// sameAliases reports whether two revisions' alias rows give every note
// the same aliases.
func sameAliases(a, b []idText) bool {
	if len(a) != len(b) {
		return false
	}
	per := func(l []idText) map[int64]string {
		m := map[int64]string{}
		for _, x := range l {
			m[x.id] += x.text + "\x00"
		}
		return m
	}
	pa, pb := per(a), per(b)
	if len(pa) != len(pb) {
		return false
	}
	for id, s := range pa {
		if pb[id] != s {
			return false
		}
	}
	return true
}

func sortLinks(links []rawLink) {
	slices.SortStableFunc(links, func(a, b rawLink) int {
		if a.src != b.src {
			if a.src < b.src {
				return -1
			}
			return 1
		}
		return a.line - b.line
	})
}

// linkReads counts the reads of every link (for the tests).
var linkReads atomic.Int64

// readLinks reads the links (in the order they were stored, then by
// source and line: a note's links in file order).
func (r *raw) readLinks(ctx context.Context, q queryer) error {
	linkReads.Add(1)
	var links []rawLink
	if err := scan(ctx, q, `SELECT src_id, line, COALESCE(dst_id, 0), CASE WHEN dst_id IS NULL THEN target ELSE '' END FROM links
		WHERE kind IN ('wikilink','embed','markdown','typed')`, func(rows *sql.Rows) error {
		var x rawLink
		err := rows.Scan(&x.src, &x.line, &x.dst, &x.target)
		links = append(links, x)
		return err
	}); err != nil {
		return readErr(ctx, err)
	}
	sortLinks(links)
	r.links, r.hasLinks = links, true
	return nil
}

// build makes the model of r without the notes hide holds (by id; nil:
// none hidden), and without its links (linkUp adds them).
func (r *raw) build(ctx context.Context, hide map[int64]bool) (*model, error) {
	m := &model{raw: r, byID: make(map[int64]*note, len(r.notes)), byPath: make(map[string]*note, len(r.notes)),
		tasks: r.tasks}
	m.notes = make([]*note, 0, len(r.notes))
	for _, s := range r.notes {
		if hide[s.id] {
			continue
		}
		n := &note{id: s.id, path: s.path, title: s.title, fmJSON: s.fm, size: s.size}
		ext := path.Ext(s.path)
		n.name = strings.TrimSuffix(path.Base(s.path), ext)
		if d := path.Dir(s.path); d != "." {
			n.folder = d
		}
		n.mtime = time.Unix(0, s.mtime).UTC()
		n.ctime = n.mtime
		if t, ok := asTime(s.created); ok {
			n.ctime = t
		}
		m.notes = append(m.notes, n)
		m.byID[n.id] = n
		m.byPath[n.path] = n
	}
	if err := query.Check(ctx); err != nil {
		return nil, err
	}
	for _, a := range r.aliases {
		if n := m.byID[a.id]; n != nil {
			n.aliases = append(n.aliases, a.text)
		}
	}
	var last *note
	var seen map[string]bool
	for _, t := range r.tags {
		n := m.byID[t.id]
		if n == nil {
			continue
		}
		if n != last {
			last, seen = n, map[string]bool{}
		}
		k := strings.ToLower(t.text)
		if !seen[k] {
			seen[k] = true
			n.tags = append(n.tags, t.text)
		}
	}
	for _, n := range m.notes {
		if len(n.tags) > 0 {
			n.tagList, n.etagList = tagValues(n.tags, true), tagValues(n.tags, false)
		}
	}
	if len(r.fields) > 0 {
		taskLine := map[string]bool{} // "path\x00line" of every task
		for _, t := range r.tasks {
			taskLine[t.Path+"\x00"+strconv.Itoa(t.Line)] = true
		}
		for _, f := range r.fields {
			n := m.byID[f.id]
			if n == nil {
				continue
			}
			v := m.fieldValue(f.val)
			if n.fields == nil {
				n.fields, n.lineFields = map[string]any{}, map[int]map[string]any{}
			}
			// A task's fields are the task's, not the note's (as in Dataview).
			if !taskLine[n.path+"\x00"+strconv.Itoa(f.line)] {
				addValue(n.fields, f.norm, v)
			}
			lf := n.lineFields[f.line]
			if lf == nil {
				lf = map[string]any{}
				n.lineFields[f.line] = lf
			}
			addValue(lf, f.norm, v)
		}
	}
	return m, nil
}

// linkUp adds the links to m (once; its raw rows must hold them): each
// note's notes linked to and from and where its links are in the rows
// (file.outlinks is made from them on first use, see outLinks). A query
// that reads links calls it before it runs.
func (m *model) linkUp() {
	m.linkMu.Lock()
	defer m.linkMu.Unlock()
	if m.linked {
		return
	}
	// The links come by source: a target's lastSrc is the last source
	// seen linking to it, so each (source, target) pair counts once.
	var last *note
	for i, x := range m.raw.links {
		n := last
		if n == nil || n.id != x.src {
			if n = m.byID[x.src]; n == nil {
				continue
			}
			last, n.linkLo = n, i
		}
		n.linkHi = i + 1
		if x.dst == 0 {
			continue
		}
		d := m.byID[x.dst]
		if d == nil {
			continue // a hidden (or gone) note: neither named nor counted
		}
		if d.lastSrc != n.id {
			d.lastSrc = n.id
			d.inNotes = append(d.inNotes, n)
			n.outNotes = append(n.outNotes, d)
		}
	}
	m.linked = true
}

// outLinks is n's file.outlinks as a value (its links in file order,
// each target once; unresolved ones by name), made once (m, n's model,
// must have its links).
func (n *note) outLinks(m *model) []any {
	n.outOnce.Do(func() {
		links := n.out
		if links == nil && n.linkHi > n.linkLo {
			seen := map[string]bool{}
			for _, x := range m.raw.links[n.linkLo:n.linkHi] {
				var l link
				if x.dst != 0 {
					d := m.byID[x.dst]
					if d == nil {
						continue
					}
					l = d.link()
				} else {
					t, _, _ := strings.Cut(x.target, "#")
					l = link{name: strings.TrimSuffix(path.Base(t), ".md")}
				}
				if k := l.key(); !seen[k] {
					seen[k] = true
					links = append(links, l)
				}
			}
		}
		n.outList = linkValues(links)
	})
	return n.outList
}

// inLinks is n's file.inlinks as a value, made once (its model must
// have its links).
func (n *note) inLinks() []any {
	n.inOnce.Do(func() { n.inList = noteLinks(n.inNotes) })
	return n.inList
}

func noteLinks(ns []*note) []any {
	l := make([]any, len(ns))
	for i, x := range ns {
		l[i] = x.link()
	}
	return l
}

// The cache: per index, the raw rows and the unfenced model of its
// latest content revision (index.ContentRev). A fenced query builds its
// own model from the cached rows (kept per set of hidden notes, see view).
const maxCached = 4

type cacheEntry struct {
	mu   sync.Mutex // held while loading
	raw  *raw
	used uint64
}

var cache struct {
	sync.Mutex
	byIx map[*index.Index]*cacheEntry
	tick uint64
}

// cached returns the raw rows of ix at its current content revision
// (with the links when withLinks), loading them (once, however many
// queries ask at the same time) when the revision has moved on.
func cached(ctx context.Context, ix *index.Index, withLinks bool) (*raw, error) {
	rev := ix.ContentRev(ctx)
	cache.Lock()
	if cache.byIx == nil {
		cache.byIx = map[*index.Index]*cacheEntry{}
	}
	e := cache.byIx[ix]
	if e == nil {
		if len(cache.byIx) >= maxCached {
			var oldest *index.Index
			for k, v := range cache.byIx {
				if oldest == nil || v.used < cache.byIx[oldest].used {
					oldest = k
				}
			}
			delete(cache.byIx, oldest)
		}
		e = &cacheEntry{}
		cache.byIx[ix] = e
	}
	cache.tick++
	e.used = cache.tick
	cache.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw != nil && e.raw.rev == rev && rev != "" {
		if !withLinks || e.raw.hasLinks {
			return e.raw, nil
		}
		err := e.raw.loadLinks(ctx, ix)
		if err == nil {
			return e.raw, nil
		}
		if !errors.Is(err, errStale) {
			return nil, err
		}
	}
	var base *raw
	if old := e.raw; old != nil {
		base = old.base
		if old.hasLinks {
			base = &raw{rev: old.rev, notes: old.notes, aliases: old.aliases, links: old.links, hasLinks: true, incomplete: old.incomplete}
		}
	}
	r, err := loadRaw(ctx, ix, withLinks, base)
	if err != nil {
		return nil, err
	}
	if r.full, err = r.build(ctx, nil); err != nil {
		return nil, err
	}
	e.raw = r
	return r, nil
}

// load returns the model a query q with opt reads (with its links when
// q reads them).
func load(ctx context.Context, ix *index.Index, q *Query, opt query.Options) (*model, error) {
	withLinks := q.readsLinks()
	r, err := cached(ctx, ix, withLinks)
	if err != nil {
		return nil, err
	}
	m := r.full
	if opt.Visible != nil {
		if m, err = r.view(ctx, opt.Shows); err != nil {
			return nil, err
		}
	}
	if withLinks {
		m.linkUp()
	}
	return m, nil
}

// view returns the model of the notes shows allows: the full one when it
// hides none, else one built for the notes it hides (kept, keyed by
// exactly those notes, for the next query with the same fence).
func (r *raw) view(ctx context.Context, shows func(string) bool) (*model, error) {
	var hidden []int64
	for _, n := range r.notes {
		if !shows(n.path) {
			hidden = append(hidden, n.id)
		}
	}
	if len(hidden) == 0 {
		return r.full, nil
	}
	r.mu.Lock()
	for _, f := range r.fenced {
		if slices.Equal(f.hidden, hidden) {
			r.mu.Unlock()
			return f.m, nil
		}
	}
	r.mu.Unlock()
	hide := make(map[int64]bool, len(hidden))
	for _, id := range hidden {
		hide[id] = true
	}
	m, err := r.build(ctx, hide)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if len(r.fenced) == maxFenced {
		r.fenced = r.fenced[1:]
	}
	r.fenced = append(r.fenced, fencedModel{hidden, m})
	r.mu.Unlock()
	return m, nil
}

// readsLinks reports whether q reads links: a [[note]] or outgoing()
// source, or a field path through file.inlinks or file.outlinks (a
// linked note's too, as in author.file.inlinks).
func (q *Query) readsLinks() bool {
	if sourceReadsLinks(q.From) {
		return true
	}
	var exprs []Expr
	for _, f := range q.Fields {
		exprs = append(exprs, f.Expr)
	}
	exprs = append(exprs, q.Where...)
	for _, k := range q.Sort {
		exprs = append(exprs, k.Expr)
	}
	for _, st := range q.Steps {
		if st.Expr != nil {
			exprs = append(exprs, st.Expr)
		}
		for _, k := range st.Sort {
			exprs = append(exprs, k.Expr)
		}
	}
	return slices.ContainsFunc(exprs, exprReadsLinks)
}

func sourceReadsLinks(s Source) bool {
	switch s := s.(type) {
	case srcLinksTo, srcOutgoing:
		return true
	case srcNot:
		return sourceReadsLinks(s.s)
	case srcAnd:
		return sourceReadsLinks(s.a) || sourceReadsLinks(s.b)
	case srcOr:
		return sourceReadsLinks(s.a) || sourceReadsLinks(s.b)
	}
	return false
}

func exprReadsLinks(x Expr) bool {
	switch x := x.(type) {
	case eField:
		for seg := range strings.SplitSeq(x.path, ".") {
			if strings.EqualFold(seg, "inlinks") || strings.EqualFold(seg, "outlinks") {
				return true
			}
		}
	case eNot:
		return exprReadsLinks(x.x)
	case eBin:
		return exprReadsLinks(x.a) || exprReadsLinks(x.b)
	case eCall:
		return slices.ContainsFunc(x.args, exprReadsLinks)
	}
	return false
}
