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
	paths   map[int64]string // id → path
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
		paths:   map[int64]string{},
		byPath:  map[string]int64{},
		byStem:  map[string][]int64{},
		byAlias: map[string][]int64{},
		byTitle: map[string][]int64{},
	}
	rows, err := q.QueryContext(ctx, "SELECT id, path, path_key, stem_key, title_key, kind FROM notes")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var p, pk, sk, tk, kd string
		if err := rows.Scan(&id, &p, &pk, &sk, &tk, &kd); err != nil {
			rows.Close()
			return nil, err
		}
		r.paths[id] = p
		r.byPath[pk] = id
		r.byStem[sk] = append(r.byStem[sk], id)
		if kd != "note" {
			r.byTitle[tk] = append(r.byTitle[tk], id)
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
			a, b := r.paths[ids[i]], r.paths[ids[j]]
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
			out = append(out, Candidate{ID: id, Path: r.paths[id], Match: why})
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
			if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(r.paths[id], path.Ext(r.paths[id]))), "/"+key) {
				add(id, "path")
			}
		}
	} else {
		ids := r.byStem[key]
		// Prefer a note in the linking note's own folder.
		for _, id := range ids {
			if path.Dir(r.paths[id]) == dir {
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

// Path returns the path of a note id known to the resolver.
func (r *Resolver) Path(id int64) string { return r.paths[id] }

// insertLinks resolves and inserts the links of every note written in this
// run. When names changed (notes added, removed, renamed, retitled or
// re-aliased) the links already stored for other notes are re-resolved too,
// updating only the rows whose target changed.
func (w *writer) insertLinks(kind vault.Kind, namesChanged bool) error {
	ctx, tx := w.ctx, w.tx
	if err := w.flushAll(); err != nil {
		return err
	}
	r, err := LoadResolver(ctx, tx, kind)
	if err != nil {
		return err
	}
	if namesChanged {
		if err := reresolve(ctx, tx, r, w.dirty); err != nil {
			return err
		}
		crashPoint("reresolve")
	}
	blockNote := map[string]int64{}
	for i, nl := range w.links {
		if crash != nil && i == len(w.links)/2 {
			if err := w.flushAll(); err != nil {
				return err
			}
			crashPoint("mid-links")
		}
		for _, l := range nl.links {
			var dst any
			switch {
			case l.Kind == markdown.LinkBlockRef:
				id, ok := blockNote[l.Target]
				if !ok {
					err := tx.QueryRowContext(ctx, "SELECT note_id FROM blocks WHERE uuid=? LIMIT 1", l.Target).Scan(&id)
					if err != nil && !errors.Is(err, sql.ErrNoRows) {
						return err
					}
					blockNote[l.Target] = id
				}
				if id != 0 {
					dst = id
				}
			case isAttachment(l):
			case strings.TrimSpace(l.Target) == "":
				dst = nl.id // [[#Heading]] points into the same note
			default:
				if id := r.Resolve(nl.path, l.Kind, l.Target); id != 0 {
					dst = id
				}
			}
			att := 0
			if isAttachment(l) {
				att = 1
			}
			if id, ok := dst.(int64); ok {
				w.dirty(id)
			}
			if err := w.add("link", nl.id, l.Kind, l.Target, nullStr(l.Heading), nullStr(l.BlockID), nullStr(l.Display), nullStr(l.Key), l.Line, att, dst, nullStr(l.Context)); err != nil {
				return err
			}
		}
	}
	w.links = nil
	return nil
}

// reresolve recomputes dst_id for every stored link, writing only changes
// (and reporting the notes that gain or lose a link to dirty).
func reresolve(ctx context.Context, tx *sql.Tx, r *Resolver, dirty func(int64)) error {
	type row struct {
		rowid, src int64
		kind, tgt  string
		dst        sql.NullInt64
	}
	var rows []row
	rs, err := tx.QueryContext(ctx, "SELECT rowid, src_id, kind, target, dst_id FROM links WHERE attachment=0 AND kind<>'blockref'")
	if err != nil {
		return err
	}
	for rs.Next() {
		var x row
		if err := rs.Scan(&x.rowid, &x.src, &x.kind, &x.tgt, &x.dst); err != nil {
			rs.Close()
			return err
		}
		rows = append(rows, x)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	upd, err := tx.PrepareContext(ctx, "UPDATE links SET dst_id=? WHERE rowid=?")
	if err != nil {
		return err
	}
	defer upd.Close()
	for _, x := range rows {
		var dst int64
		if strings.TrimSpace(x.tgt) == "" {
			dst = x.src
		} else {
			dst = r.Resolve(r.paths[x.src], x.kind, x.tgt)
		}
		if (dst == 0 && !x.dst.Valid) || (x.dst.Valid && x.dst.Int64 == dst) {
			continue
		}
		var v any
		if dst != 0 {
			v = dst
			dirty(dst)
		}
		if x.dst.Valid {
			dirty(x.dst.Int64)
		}
		if _, err := upd.ExecContext(ctx, v, x.rowid); err != nil {
			return err
		}
	}
	// Block references resolve to the note holding the block uuid.
	_, err = tx.ExecContext(ctx, `UPDATE links SET dst_id=(SELECT b.note_id FROM blocks b WHERE b.uuid=links.target LIMIT 1) WHERE kind='blockref'`)
	return err
}
