package index

import (
	"database/sql"
	"strings"

	"github.com/loci-dev/loci/internal/textseg"
)

// Anchor text: the words other notes use around their links to a note
// describe it (the sentence or list item the link sits in, which holds the
// display text of [[Note|display]]; see markdown.Link.Context).
// Each link row keeps its own text (links.context); anchors_fts holds one
// row per linked note, rowid = its id, with the de-duplicated texts of its
// incoming links from other notes, capped (the text is kept, so the BM25
// totals are exact whatever the order of updates). A sync marks the notes whose
// incoming links changed (a linking note edited or deleted, a link
// re-resolved after a rename) and rebuilds only their rows: the target's
// own chunks are never re-indexed for it.

// Caps on one note's anchor text, so a hub with thousands of backlinks
// stays a bounded row: at most maxAnchorTexts distinct texts, maxAnchorBytes
// in all, read from at most maxAnchorRows links, taken in the order of the
// linking notes' paths (and lines), so the same vault gives the same text.
const (
	maxAnchorTexts = 64
	maxAnchorBytes = 8 << 10
	maxAnchorRows  = 2000
)

// anchorKinds are the link kinds whose text describes their target (typed
// links, block refs and Logseq tag refs have no such text).
const anchorKinds = `('wikilink','embed','markdown')`

// dirty marks a note whose anchor text must be rebuilt.
func (w *writer) dirty(id int64) {
	if w.allAnchors {
		return // every note's anchor text is rebuilt: a set of them all would only cost memory
	}
	if w.anchorsDirty == nil {
		w.anchorsDirty = map[int64]bool{}
	}
	w.anchorsDirty[id] = true
}

// dirtyTargets marks the targets of src's stored links (about to be
// deleted or replaced).
func (w *writer) dirtyTargets(src int64) error {
	rows, err := w.tx.QueryContext(w.ctx, "SELECT DISTINCT dst_id FROM links WHERE src_id=? AND dst_id IS NOT NULL AND dst_id<>src_id AND kind IN "+anchorKinds, src)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		w.dirty(id)
	}
	return rows.Err()
}

// refreshAnchors rewrites the anchor text of every dirty note (of every
// linked note when all is set: a reset, or a healing run after a crash or
// the v3 migration).
func (w *writer) refreshAnchors(all bool) error {
	if err := w.flushAll(); err != nil {
		return err
	}
	ctx, tx := w.ctx, w.tx
	if all {
		w.anchorsDirty = nil
		return w.rebuildAnchors()
	}
	if len(w.anchorsDirty) == 0 {
		return nil
	}
	sel, err := tx.PrepareContext(ctx, "SELECT l.context FROM links l JOIN notes n ON n.id = l.src_id WHERE l.dst_id=? AND l.src_id<>? AND l.context IS NOT NULL AND l.kind IN "+anchorKinds+" ORDER BY n.path, l.line LIMIT ?")
	if err != nil {
		return err
	}
	defer sel.Close()
	del, err := tx.PrepareContext(ctx, "DELETE FROM anchors_fts WHERE rowid=?")
	if err != nil {
		return err
	}
	defer del.Close()
	ins, err := tx.PrepareContext(ctx, "INSERT INTO anchors_fts(rowid, anchor) VALUES(?,?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	var texts []string
	for id := range w.anchorsDirty {
		if _, err := del.ExecContext(ctx, id); err != nil {
			return err
		}
		rows, err := sel.QueryContext(ctx, id, id, maxAnchorRows)
		if err != nil {
			return err
		}
		texts = texts[:0]
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				rows.Close()
				return err
			}
			texts = append(texts, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if doc := joinAnchors(texts); doc != "" {
			if _, err := ins.ExecContext(ctx, id, textseg.ForIndex(doc)); err != nil {
				return err
			}
		}
	}
	w.anchorsDirty = nil
	return nil
}

// anchorPage is the number of note ids whose anchor text rebuildAnchors
// reads at a time (a variable for tests).
var anchorPage int64 = 4096

// rebuildAnchors rewrites every note's anchor text, reading the links a
// range of target ids at a time through links_dst (created first if a bulk
// build dropped it; the build's end would create it anyway): memory stays
// bounded by a page (at most anchorPage × maxAnchorRows rows) whatever the
// size of the vault.
func (w *writer) rebuildAnchors() error {
	ctx, tx := w.ctx, w.tx
	if _, err := tx.ExecContext(ctx, "DELETE FROM anchors_fts"); err != nil {
		return err
	}
	for _, ddl := range secondaryIndexes {
		if strings.Contains(ddl, " links_dst ") {
			if _, err := tx.ExecContext(ctx, ddl); err != nil {
				return err
			}
		}
	}
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT MAX(dst_id) FROM links").Scan(&last); err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, "INSERT INTO anchors_fts(rowid, anchor) VALUES(?,?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	sel, err := tx.PrepareContext(ctx, "SELECT l.dst_id, l.context FROM links l JOIN notes n ON n.id = l.src_id WHERE l.dst_id>? AND l.dst_id<=? AND l.dst_id<>l.src_id AND l.context IS NOT NULL AND l.kind IN "+anchorKinds+" ORDER BY l.dst_id, n.path, l.line")
	if err != nil {
		return err
	}
	defer sel.Close()
	// A page is read whole before its inserts: they must not interleave
	// with an open SELECT on the same connection's transaction.
	type row struct {
		dst  int64
		text string
	}
	var all []row
	var texts []string
	for lo := int64(0); last.Valid && lo < last.Int64; lo += anchorPage {
		rows, err := sel.QueryContext(ctx, lo, lo+anchorPage)
		if err != nil {
			return err
		}
		all = all[:0]
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.dst, &r.text); err != nil {
				rows.Close()
				return err
			}
			if n := len(all); n >= maxAnchorRows && all[n-maxAnchorRows].dst == r.dst {
				continue // past the per-note row cap
			}
			all = append(all, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := 0; i < len(all); {
			j := i
			texts = texts[:0]
			for ; j < len(all) && all[j].dst == all[i].dst; j++ {
				texts = append(texts, all[j].text)
			}
			if doc := joinAnchors(texts); doc != "" {
				if _, err := ins.ExecContext(ctx, all[i].dst, textseg.ForIndex(doc)); err != nil {
					return err
				}
			}
			i = j
		}
	}
	return nil
}

// joinAnchors de-duplicates texts (case-insensitively, in order) and joins
// them, within maxAnchorTexts and maxAnchorBytes.
func joinAnchors(texts []string) string {
	var b strings.Builder
	seen := make(map[string]bool, min(len(texts), maxAnchorTexts))
	for _, t := range texts {
		k := strings.ToLower(t)
		if seen[k] {
			continue
		}
		if len(seen) == maxAnchorTexts || b.Len()+len(t)+1 > maxAnchorBytes {
			break
		}
		seen[k] = true
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	return b.String()
}
