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
type Resolver struct {
	logseq  bool
	paths   []string // id → path ("" for no note): notes' ids are dense
	byPath  map[string]int64
	byStem  map[string][]int64
	byAlias map[string][]int64
	byTitle map[string][]int64
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
	rows, err = q.QueryContext(ctx, "SELECT id, path, path_key, stem_key, CASE WHEN kind='note' THEN NULL ELSE title_key END FROM notes")
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
		r.byPath[pk] = id
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
	byLen := func(ids []int64) {
		sort.Slice(ids, func(i, j int) bool {
			a, b := r.Path(ids[i]), r.Path(ids[j])
			if len(a) != len(b) {
				return len(a) < len(b)
			}
			return a < b
		})
	}
	for _, m := range []map[string][]int64{r.byStem, r.byAlias, r.byTitle} {
		for _, ids := range m {
			byLen(ids)
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
		if id, ok := r.byPath[strings.ToLower(path.Clean(path.Join(dir, key)))]; ok {
			add(id, "path")
		}
	}
	if r.logseq {
		for _, id := range r.byTitle[key] {
			add(id, "title")
		}
		for _, id := range r.byAlias[key] {
			add(id, "alias")
		}
	}
	if id, ok := r.byPath[key]; ok {
		add(id, "path")
	}
	if strings.Contains(key, "/") {
		// A partial path: "folder/note" matches ".../folder/note".
		base := path.Base(key)
		for _, id := range r.byStem[base] {
			if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(r.Path(id), path.Ext(r.Path(id)))), "/"+key) {
				add(id, "path")
			}
		}
	} else {
		ids := r.byStem[key]
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
	for _, id := range r.byAlias[key] {
		add(id, "alias")
	}
	if !r.logseq {
		for _, id := range r.byTitle[key] {
			add(id, "title")
		}
	}
	return out
}

// Path returns the path of a note id known to the resolver, or "".
func (r *Resolver) Path(id int64) string {
	if id <= 0 || id >= int64(len(r.paths)) {
		return ""
	}
	return r.paths[id]
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
// number of links. bulk: a build from empty, whose secondary indexes are
// not there yet (the one on block ids is created now, for block refs).
func (w *writer) resolveLinks(kind vault.Kind, namesChanged, bulk bool) error {
	ctx, tx := w.ctx, w.tx
	if err := w.flushAll(); err != nil {
		return err
	}
	if bulk {
		for _, ddl := range secondaryIndexes {
			if strings.Contains(ddl, " blocks_uuid ") {
				if _, err := tx.ExecContext(ctx, ddl); err != nil {
					return err
				}
			}
		}
	}
	r, err := LoadResolver(ctx, tx, kind)
	if err != nil {
		return err
	}
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
