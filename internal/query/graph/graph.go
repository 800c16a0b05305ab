// Package graph is the in-memory model of a Logseq graph (or any vault)
// that the Logseq query languages evaluate over: its pages with their
// properties, tags and journal days, and its blocks with their parents,
// properties and references. Load reads it from the loci index in one
// pass per table.
package graph

import (
	"context"
	"database/sql"
	"encoding/json"
	"path"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
)

// Page is a page or a journal.
type Page struct {
	ID    int64
	Path  string
	Title string
	Kind  string            // "page" or "journal"
	Tags  map[string]bool   // page tags, lower-cased
	Props map[string]string // page properties: NormKey(key) → value (list items joined by ", ")
	Day   time.Time         // journal day at 00:00 UTC; zero otherwise
	// Blocks are the page's blocks in file order.
	Blocks []*Block
}

// Block is one outline block.
type Block struct {
	Page      *Page
	Seq       int
	ParentSeq int
	Parent    *Block // nil for a top-level block
	UUID      string // the id:: property, when it has one
	Line, End int    // 1-based first and last line
	Content   string
	Props     map[string]string // NormKey(key) → value; nil when none
	// Refs are the lower-cased names of the pages and tags the block's
	// own lines reference (both the target as written and the resolved
	// page's title).
	Refs map[string]bool
}

// Graph is a loaded graph.
type Graph struct {
	// Pages in path order.
	Pages []*Page
	ByID  map[int64]*Page
	// Names maps a lower-cased page title or alias to its pages.
	Names map[string][]*Page
	// Blocks of every page, in path then file order.
	Blocks []*Block
}

// Load reads the pages and journals of the index in db (notes of other
// kinds are left out), with their blocks and references.
func Load(ctx context.Context, db *sql.DB) (*Graph, error) {
	g := &Graph{ByID: map[int64]*Page{}, Names: map[string][]*Page{}}
	err := each(ctx, db, `SELECT id, path, title, kind FROM notes WHERE kind IN ('page','journal') ORDER BY path`, func(rs *sql.Rows) error {
		p := &Page{Tags: map[string]bool{}, Props: map[string]string{}}
		if err := rs.Scan(&p.ID, &p.Path, &p.Title, &p.Kind); err != nil {
			return err
		}
		if p.Kind == "journal" {
			stem := strings.TrimSuffix(path.Base(p.Path), path.Ext(p.Path))
			if t, err := time.Parse("2006_01_02", strings.ReplaceAll(stem, "-", "_")); err == nil {
				p.Day = t
			}
		}
		g.Pages = append(g.Pages, p)
		g.ByID[p.ID] = p
		k := strings.ToLower(p.Title)
		g.Names[k] = append(g.Names[k], p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := each(ctx, db, `SELECT note_id, alias_key FROM aliases`, func(rs *sql.Rows) error {
		var id int64
		var a string
		if err := rs.Scan(&id, &a); err != nil {
			return err
		}
		if p := g.ByID[id]; p != nil {
			g.Names[a] = append(g.Names[a], p)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := each(ctx, db, `SELECT note_id, key, value FROM props`, func(rs *sql.Rows) error {
		var id int64
		var k, v string
		if err := rs.Scan(&id, &k, &v); err != nil {
			return err
		}
		p := g.ByID[id]
		if p == nil {
			return nil
		}
		k = NormKey(k)
		if old, ok := p.Props[k]; ok {
			v = old + ", " + v // list frontmatter: one row per item
		}
		p.Props[k] = v
		if k == "tags" || k == "tag" {
			for _, t := range ListValues(v) {
				p.Tags[t] = true
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	err = each(ctx, db, `SELECT b.note_id, b.seq, b.parent_seq, COALESCE(b.uuid,''), b.line, b.end_line, b.content, COALESCE(b.properties,'')
		FROM blocks b JOIN notes n ON n.id = b.note_id ORDER BY n.path, b.seq`, func(rs *sql.Rows) error {
		b := &Block{Refs: map[string]bool{}}
		var id int64
		var props string
		if err := rs.Scan(&id, &b.Seq, &b.ParentSeq, &b.UUID, &b.Line, &b.End, &b.Content, &props); err != nil {
			return err
		}
		p := g.ByID[id]
		if p == nil {
			return nil
		}
		b.Page = p
		if props != "" {
			var m map[string]string
			if json.Unmarshal([]byte(props), &m) == nil {
				b.Props = make(map[string]string, len(m))
				for k, v := range m {
					b.Props[NormKey(k)] = v
				}
			}
		}
		p.Blocks = append(p.Blocks, b)
		g.Blocks = append(g.Blocks, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range g.Pages {
		bySeq := make(map[int]*Block, len(p.Blocks))
		for _, b := range p.Blocks {
			bySeq[b.Seq] = b
		}
		for _, b := range p.Blocks {
			if par := bySeq[b.ParentSeq]; par != nil && par != b && par.Seq < b.Seq {
				b.Parent = par
			}
		}
	}
	// References: links and tags, given to the block whose own lines hold them.
	if err := each(ctx, db, `SELECT src_id, line, target, COALESCE(dst_id, 0) FROM links WHERE kind IN ('wikilink','embed','typed','tag','markdown')`, func(rs *sql.Rows) error {
		var src, dst int64
		var line int
		var target string
		if err := rs.Scan(&src, &line, &target, &dst); err != nil {
			return err
		}
		b := g.owner(src, line)
		if b == nil {
			return nil
		}
		b.Refs[strings.ToLower(strings.TrimSpace(target))] = true
		if p := g.ByID[dst]; p != nil {
			b.Refs[strings.ToLower(p.Title)] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := each(ctx, db, `SELECT note_id, tag_key, line FROM tags`, func(rs *sql.Rows) error {
		var id int64
		var tag string
		var line int
		if err := rs.Scan(&id, &tag, &line); err != nil {
			return err
		}
		if b := g.owner(id, line); b != nil {
			b.Refs[tag] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return g, nil
}

// owner is the block of note id whose own lines hold line, or nil.
func (g *Graph) owner(id int64, line int) *Block {
	p := g.ByID[id]
	if p == nil {
		return nil
	}
	for _, b := range p.Blocks {
		if line >= b.Line && line <= b.End {
			return b
		}
	}
	return nil
}

// Lookup returns the pages a lower-cased, trimmed name or alias names.
func (g *Graph) Lookup(name string) []*Page {
	return g.Names[strings.ToLower(strings.TrimSpace(name))]
}

// each runs q and calls fn for every row, checking ctx every 4096 rows.
func each(ctx context.Context, db *sql.DB, q string, fn func(*sql.Rows) error) error {
	rs, err := db.QueryContext(ctx, q)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errs.Wrap(err, errs.CodeInternal, "query: reading the index")
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := fn(rs); err != nil {
			return errs.Wrap(err, errs.CodeInternal, "query: reading the index")
		}
	}
	if err := rs.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errs.Wrap(err, errs.CodeInternal, "query: reading the index")
	}
	return nil
}

// NormKey normalizes a property key as Logseq does: lower case, _ as -.
func NormKey(k string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "_", "-")
}

// ListValues splits a property value into its comma-separated items,
// without [[ ]] or '#', lower-cased.
func ListValues(v string) []string {
	var out []string
	for _, s := range markdown.SplitLinkList(v) {
		s = strings.TrimPrefix(s, "#")
		if len(s) >= 4 && strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]]") {
			s = s[2 : len(s)-2]
		}
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}
