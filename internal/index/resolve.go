package index

import (
	"context"
	"database/sql"
	"errors"
	"path"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/vault"
)

// Resolver maps link targets to notes the way Obsidian does: an exact
// vault-relative path wins, then a unique file name (case-insensitive; when
// several notes share it, the one in the linking note's folder, else the
// shortest path), then aliases. In a Logseq graph page names (with
// namespaces, title:: overrides and aliases) come first.
//
// A Resolver holds every note's names in memory (LoadResolver: for the
// server and the ops, which resolve many targets over time), or looks them
// up in the index a name at a time (newSQLResolver: for a build, whose
// memory must not grow with the vault).
type Resolver struct {
	logseq  bool
	paths   []string // id → path ("" for no note): notes' ids are dense
	byPath  map[string]int64
	byStem  map[string][]int64
	byAlias map[string][]int64
	byTitle map[string][]int64
	db      *sqlNames // set: the names are looked up in the index instead
}

// Candidate is one possible resolution with the reason it matched.
type Candidate struct {
	ID    int64  `json:"-"`
	Path  string `json:"path"`
	Match string `json:"match"` // path | filename | alias | title
}

// LoadResolver builds a resolver from the notes table.
func LoadResolver(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, kind vault.Kind) (*Resolver, error) {
	r := &Resolver{
		logseq:  kind == vault.KindLogseq,
		byPath:  map[string]int64{},
		byStem:  map[string][]int64{},
		byAlias: map[string][]int64{},
		byTitle: map[string][]int64{},
	}
	var last int64
	rows, err := q.QueryContext(ctx, "SELECT MAX(id) FROM notes")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var m sql.NullInt64
		if err := rows.Scan(&m); err != nil {
			rows.Close()
			return nil, err
		}
		last = m.Int64
	}
	rows.Close()
	r.paths = make([]string, last+1)
	rows, err = q.QueryContext(ctx, "SELECT id, path, path_key, stem_key, CASE WHEN kind='note' THEN NULL ELSE title_key END FROM notes ORDER BY id")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var p, pk, sk string
		var tk sql.NullString
		if err := rows.Scan(&id, &p, &pk, &sk, &tk); err != nil {
			rows.Close()
			return nil, err
		}
		if id <= 0 || id > last {
			continue // not possible: ids are assigned upwards from 1
		}
		// The keys of a lower-case path share its bytes (memory per note
		// matters at a million notes).
		if base := p[:len(p)-len(path.Ext(p))]; pk == base {
			pk = base
		}
		if i := strings.LastIndexByte(pk, '/'); sk == pk[i+1:] {
			sk = pk[i+1:]
		}
		r.paths[id] = p
		r.byPath[pk] = id // rows in id order: of two notes, the highest id (as pathID)
		r.byStem[sk] = append(r.byStem[sk], id)
		if tk.Valid {
			r.byTitle[tk.String] = append(r.byTitle[tk.String], id)
		}
	}
	rows.Close()
	rows, err = q.QueryContext(ctx, "SELECT note_id, alias_key FROM aliases")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var a string
		if err := rows.Scan(&id, &a); err != nil {
			rows.Close()
			return nil, err
		}
		r.byAlias[a] = append(r.byAlias[a], id)
	}
	rows.Close()
	for _, m := range []map[string][]int64{r.byStem, r.byAlias, r.byTitle} {
		for _, ids := range m {
			sortByPath(ids, r.Path)
		}
	}
	return r, rows.Err()
}

// targetKey normalizes a link target for lookup.
func targetKey(t string) string {
	t = strings.TrimSpace(strings.ReplaceAll(t, "\\", "/"))
	t = strings.TrimPrefix(t, "./")
	t = strings.TrimPrefix(t, "/")
	if strings.EqualFold(path.Ext(t), ".md") {
		t = t[:len(t)-3]
	}
	return strings.ToLower(t)
}

// Resolve returns the best note for a link target written in srcPath, or 0.
func (r *Resolver) Resolve(srcPath, kind, target string) int64 {
	c := r.Candidates(srcPath, kind, target)
	if len(c) == 0 {
		return 0
	}
	return c[0].ID
}

// Candidates returns every note a target could mean, best first.
func (r *Resolver) Candidates(srcPath, kind, target string) []Candidate {
	var out []Candidate
	seen := map[int64]bool{}
	add := func(id int64, why string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, Candidate{ID: id, Path: r.Path(id), Match: why})
		}
	}
	key := targetKey(target)
	if key == "" {
		return nil
	}
	dir := path.Dir(srcPath)
	if kind == "markdown" && dir != "." {
		if id, ok := r.pathID(strings.ToLower(path.Clean(path.Join(dir, key)))); ok {
			add(id, "path")
		}
	}
	if r.logseq {
		for _, id := range r.titleIDs(key) {
			add(id, "title")
		}
		for _, id := range r.aliasIDs(key) {
			add(id, "alias")
		}
	}
	if id, ok := r.pathID(key); ok {
		add(id, "path")
	}
	if strings.Contains(key, "/") {
		// A partial path: "folder/note" matches ".../folder/note".
		base := path.Base(key)
		for _, id := range r.stemIDs(base) {
			if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(r.Path(id), path.Ext(r.Path(id)))), "/"+key) {
				add(id, "path")
			}
		}
	} else {
		ids := r.stemIDs(key)
		// Prefer a note in the linking note's own folder.
		for _, id := range ids {
			if path.Dir(r.Path(id)) == dir {
				add(id, "filename")
			}
		}
		for _, id := range ids {
			add(id, "filename")
		}
	}
	for _, id := range r.aliasIDs(key) {
		add(id, "alias")
	}
	if !r.logseq {
		for _, id := range r.titleIDs(key) {
			add(id, "title")
		}
	}
	return out
}

// Path returns the path of a note id known to the resolver, or "".
func (r *Resolver) Path(id int64) string {
	if r.db != nil {
		if id <= 0 {
			return ""
		}
		return r.db.pathOf(id)
	}
	if id <= 0 || id >= int64(len(r.paths)) {
		return ""
	}
	return r.paths[id]
}

// pathID returns the note whose path key (lower-case path without the
// extension) is k; of several, the one with the highest id.
func (r *Resolver) pathID(k string) (int64, bool) {
	if r.db == nil {
		id, ok := r.byPath[k]
		return id, ok
	}
	// A path key ends with its note's stem key: the notes of that stem
	// hold it (the index on stem_key serves both).
	var best int64
	for _, h := range r.db.lookup(k[strings.LastIndexByte(k, '/')+1:]).stem {
		if h.pathKey == k && h.id > best {
			best = h.id
		}
	}
	return best, best != 0
}

// stemIDs returns the notes whose file name (lower case, no extension) is
// k, shortest path first.
func (r *Resolver) stemIDs(k string) []int64 {
	if r.db == nil {
		return r.byStem[k]
	}
	return r.db.lookup(k).stemIDs
}

// aliasIDs returns the notes with the alias k, shortest path first.
func (r *Resolver) aliasIDs(k string) []int64 {
	if r.db == nil {
		return r.byAlias[k]
	}
	return r.db.lookup(k).alias
}

// titleIDs returns the pages and journals titled k, shortest path first.
func (r *Resolver) titleIDs(k string) []int64 {
	if r.db == nil {
		return r.byTitle[k]
	}
	return r.db.lookup(k).title
}

// sqlNames looks a resolver's names up in the index (the indexes on
// notes.stem_key, notes.title_key and aliases.alias_key) and keeps the
// answers of about namesCache keys and the paths they name: a build's
// memory for names is bounded, whatever the number of notes (holding every
// note's keys cost ~190 bytes a note). A build looks up the keys of a page
// of links at once (prefetch: one query per namesBatch keys), since a
// query per key cost ~20 µs a link (40,000 notes: 6 s of CPU more).
type sqlNames struct {
	ctx              context.Context
	one, many, paths *sql.Stmt
	keys             map[string]*nameHits
	path             map[int64]string
	record           map[string]bool // set: Candidates only notes the keys it looks up
	err              error           // the first query error (Candidates has no error result)
}

// namesCache is the number of keys (and of paths) sqlNames keeps between
// pages; namesBatch the number of keys or ids looked up by one query.
var namesCache, namesBatch = 8192, 256

type nameHit struct {
	id      int64
	pathKey string
}

// nameHits is what one key names: the notes with that stem key (with
// their path keys, for path lookups), alias or page title.
type nameHits struct {
	stem                  []nameHit
	stemIDs, alias, title []int64
}

const namesSQL = `SELECT k.v, 0, n.id, n.path, n.path_key FROM k CROSS JOIN notes n ON n.stem_key=k.v
UNION ALL SELECT k.v, 1, n.id, n.path, '' FROM k CROSS JOIN aliases a ON a.alias_key=k.v JOIN notes n ON n.id=a.note_id
UNION ALL SELECT k.v, 2, n.id, n.path, '' FROM k CROSS JOIN notes n ON n.title_key=k.v AND n.kind<>'note'`

// newSQLResolver returns a resolver that looks names up through q (the
// build's transaction); close it when done, and check err after use.
func newSQLResolver(ctx context.Context, q interface {
	PrepareContext(context.Context, string) (*sql.Stmt, error)
}, kind vault.Kind) (*Resolver, error) {
	n := &sqlNames{ctx: ctx, keys: map[string]*nameHits{}, path: map[int64]string{}}
	marks := strings.TrimSuffix(strings.Repeat("(?),", namesBatch), ",")
	ids := strings.TrimSuffix(strings.Repeat("?,", namesBatch), ",")
	for _, x := range []struct {
		st  **sql.Stmt
		sql string
	}{
		{&n.one, "WITH k(v) AS (VALUES(?)) " + namesSQL},
		{&n.many, "WITH k(v) AS (VALUES" + marks + ") " + namesSQL},
		{&n.paths, "SELECT id, path FROM notes WHERE id IN (" + ids + ")"},
	} {
		var err error
		if *x.st, err = q.PrepareContext(ctx, x.sql); err != nil {
			n.close()
			return nil, err
		}
	}
	return &Resolver{logseq: kind == vault.KindLogseq, db: n}, nil
}

func (n *sqlNames) close() {
	for _, st := range []*sql.Stmt{n.one, n.many, n.paths} {
		if st != nil {
			st.Close()
		}
	}
}

func (n *sqlNames) fail(err error) {
	if n.err == nil {
		n.err = err
	}
}

// trim forgets what is kept once it passes namesCache entries.
func (n *sqlNames) trim() {
	if len(n.keys) > namesCache || len(n.path) > namesCache {
		clear(n.keys)
		clear(n.path)
	}
}

func (n *sqlNames) pathOf(id int64) string {
	if p, ok := n.path[id]; ok {
		return p
	}
	n.fetchPaths([]int64{id})
	return n.path[id]
}

// fetchPaths looks up the paths of the ids not kept yet.
func (n *sqlNames) fetchPaths(ids []int64) {
	var want []int64
	seen := map[int64]bool{}
	for _, id := range ids {
		if _, ok := n.path[id]; !ok && !seen[id] {
			seen[id] = true
			want = append(want, id)
		}
	}
	inBatches(want, func(args []any) {
		rows, err := n.paths.QueryContext(n.ctx, args...)
		if err != nil {
			n.fail(err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var p string
			if err := rows.Scan(&id, &p); err != nil {
				n.fail(err)
				return
			}
			n.path[id] = p
		}
		if err := rows.Err(); err != nil {
			n.fail(err)
		}
	})
}

// inBatches calls query with xs namesBatch at a time, the last batch
// padded with NULLs (the statements take exactly namesBatch parameters).
func inBatches[T any](xs []T, query func(args []any)) {
	args := make([]any, 0, namesBatch)
	for i, x := range xs {
		args = append(args, x)
		if len(args) == namesBatch || i == len(xs)-1 {
			for len(args) < namesBatch {
				args = append(args, nil)
			}
			query(args)
			args = args[:0]
		}
	}
}

// lookup returns what key k names, from the cache or the index (nothing
// while recording).
func (n *sqlNames) lookup(k string) *nameHits {
	if h, ok := n.keys[k]; ok {
		return h
	}
	if n.record != nil {
		n.record[k] = true
		return &nameHits{}
	}
	n.trim()
	n.fetch(n.one, []any{k})
	if h, ok := n.keys[k]; ok {
		return h
	}
	return &nameHits{} // a query failed: n.err says why
}

// fetch runs a names query for the keys args and keeps what each names.
func (n *sqlNames) fetch(st *sql.Stmt, args []any) {
	rows, err := st.QueryContext(n.ctx, args...)
	if err != nil {
		n.fail(err)
		return
	}
	got := map[string]*nameHits{}
	for _, a := range args {
		if k, ok := a.(string); ok {
			got[k] = &nameHits{}
		}
	}
	for rows.Next() {
		var k, p string
		var which int
		var x nameHit
		if err := rows.Scan(&k, &which, &x.id, &p, &x.pathKey); err != nil {
			n.fail(err)
			rows.Close()
			return
		}
		h := got[k]
		if h == nil {
			continue // not possible: k is one of the keys
		}
		n.path[x.id] = p
		switch which {
		case 0:
			h.stem = append(h.stem, x)
			h.stemIDs = append(h.stemIDs, x.id)
		case 1:
			h.alias = append(h.alias, x.id)
		default:
			h.title = append(h.title, x.id)
		}
	}
	if err := rows.Err(); err != nil {
		n.fail(err)
	}
	rows.Close()
	if n.err != nil {
		return
	}
	for k, h := range got {
		for _, ids := range [][]int64{h.stemIDs, h.alias, h.title} {
			sortByPath(ids, func(id int64) string { return n.path[id] })
		}
		n.keys[k] = h
	}
}

// nameProbe is one target to resolve, written in the note at src.
type nameProbe struct{ src, kind, target string }

// prefetch looks up, namesBatch keys a query, every key the probes will
// look up that is not kept yet, so that resolving them queries nothing.
func (r *Resolver) prefetch(probes []nameProbe) {
	n := r.db
	n.record = map[string]bool{}
	for _, p := range probes {
		r.Candidates(p.src, p.kind, p.target)
	}
	want := make([]string, 0, len(n.record))
	for k := range n.record {
		want = append(want, k)
	}
	n.record = nil
	inBatches(want, func(args []any) { n.fetch(n.many, args) })
}

// sortByPath orders note ids by the length of their path, then the path.
func sortByPath(ids []int64, pathOf func(int64) string) {
	sort.Slice(ids, func(i, j int) bool {
		a, b := pathOf(ids[i]), pathOf(ids[j])
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return a < b
	})
}

// resolvePage is the number of links read at a time when resolving: the
// rows of a page are held while they are updated (a SELECT must not stay
// open under the UPDATEs of the same transaction).
const resolvePage = 4096

// linkRow is one stored link to resolve.
type linkRow struct {
	rowid, src int64
	kind, tgt  string
	dst        sql.NullInt64
}

// resolveLinks resolves the links written in this run (stored with dst_id
// NULL by addLinks). When names changed (notes added, removed, renamed,
// retitled or re-aliased) every stored link is re-resolved, a page at a
// time, updating only the rows whose target changed; otherwise only the
// links of the notes written. Memory stays bounded by a page, whatever the
// number of links, and by namesCache names, whatever the number of notes
// (sqlNames). bulk: a build from empty, whose secondary indexes are
// not there yet (the ones the names are looked up with, and the one on
// block ids for block refs, are created now).
func (w *writer) resolveLinks(kind vault.Kind, namesChanged, bulk bool) error {
	ctx, tx := w.ctx, w.tx
	if err := w.flushAll(); err != nil {
		return err
	}
	if bulk {
		for _, ddl := range secondaryIndexes {
			for _, name := range []string{" blocks_uuid ", " notes_stem ", " notes_title ", " aliases_key "} {
				if strings.Contains(ddl, name) {
					if _, err := tx.ExecContext(ctx, ddl); err != nil {
						return err
					}
				}
			}
		}
	}
	r, err := newSQLResolver(ctx, tx, kind)
	if err != nil {
		return err
	}
	defer r.db.close()
	res, err := newLinkResolver(ctx, tx, r, w.dirty)
	if err != nil {
		return err
	}
	defer res.close()
	if namesChanged {
		if err := res.all(); err != nil {
			return err
		}
		crashPoint("reresolve")
	} else {
		sel, err := tx.PrepareContext(ctx, "SELECT rowid, src_id, kind, target, dst_id FROM links WHERE src_id=? AND attachment=0 AND dst_id IS NULL")
		if err != nil {
			return err
		}
		defer sel.Close()
		var page []linkRow
		for i, src := range w.linkSrcs {
			if crash != nil && i == len(w.linkSrcs)/2 {
				crashPoint("mid-links")
			}
			if page, err = readLinks(sel.QueryContext(ctx, src)); err != nil {
				return err
			}
			if err := res.update(page); err != nil {
				return err
			}
		}
	}
	w.linkSrcs = nil
	return nil
}

// readLinks reads the rows of a links query (rowid, src_id, kind, target,
// dst_id) and closes it.
func readLinks(rs *sql.Rows, err error) ([]linkRow, error) {
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []linkRow
	for rs.Next() {
		var x linkRow
		if err := rs.Scan(&x.rowid, &x.src, &x.kind, &x.tgt, &x.dst); err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rs.Err()
}

// linkResolver computes and writes dst_id for stored links.
type linkResolver struct {
	ctx        context.Context
	tx         *sql.Tx
	r          *Resolver
	dirty      func(int64)
	upd, block *sql.Stmt
}

func newLinkResolver(ctx context.Context, tx *sql.Tx, r *Resolver, dirty func(int64)) (*linkResolver, error) {
	lr := &linkResolver{ctx: ctx, tx: tx, r: r, dirty: dirty}
	var err error
	if lr.upd, err = tx.PrepareContext(ctx, "UPDATE links SET dst_id=? WHERE rowid=?"); err != nil {
		return nil, err
	}
	// Block references resolve to the note holding the block uuid.
	if lr.block, err = tx.PrepareContext(ctx, "SELECT note_id FROM blocks WHERE uuid=? LIMIT 1"); err != nil {
		lr.upd.Close()
		return nil, err
	}
	return lr, nil
}

func (lr *linkResolver) close() {
	lr.upd.Close()
	lr.block.Close()
}

// all re-resolves every stored link that is not an attachment, a page of
// rows at a time in rowid order.
func (lr *linkResolver) all() error {
	var after int64
	for {
		page, err := readLinks(lr.tx.QueryContext(lr.ctx, "SELECT rowid, src_id, kind, target, dst_id FROM links WHERE rowid>? AND attachment=0 ORDER BY rowid LIMIT ?", after, resolvePage))
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		if err := lr.update(page); err != nil {
			return err
		}
		crashPoint("mid-links")
		after = page[len(page)-1].rowid
	}
}

// update resolves each row and writes the ones whose dst_id changes,
// reporting the notes that gain or lose a link to dirty.
func (lr *linkResolver) update(page []linkRow) error {
	if db := lr.r.db; db != nil {
		db.trim()
		ids := make([]int64, len(page))
		for i, x := range page {
			ids[i] = x.src
		}
		db.fetchPaths(ids)
		probes := make([]nameProbe, 0, len(page))
		for _, x := range page {
			if x.kind != markdown.LinkBlockRef && strings.TrimSpace(x.tgt) != "" {
				probes = append(probes, nameProbe{db.path[x.src], x.kind, x.tgt})
			}
		}
		lr.r.prefetch(probes)
		if db.err != nil {
			return db.err
		}
	}
	for _, x := range page {
		var dst int64
		switch {
		case x.kind == markdown.LinkBlockRef:
			err := lr.block.QueryRowContext(lr.ctx, x.tgt).Scan(&dst)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		case strings.TrimSpace(x.tgt) == "":
			dst = x.src
		default:
			dst = lr.r.Resolve(lr.r.Path(x.src), x.kind, x.tgt)
			if db := lr.r.db; db != nil && db.err != nil {
				return db.err
			}
		}
		if (dst == 0 && !x.dst.Valid) || (x.dst.Valid && x.dst.Int64 == dst) {
			continue
		}
		var v any
		if dst != 0 {
			v = dst
			lr.dirty(dst)
		}
		if x.dst.Valid {
			lr.dirty(x.dst.Int64)
		}
		if _, err := lr.upd.ExecContext(lr.ctx, v, x.rowid); err != nil {
			return err
		}
	}
	return nil
}
