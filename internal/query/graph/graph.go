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
	"slices"
	"sort"
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
	Key   string            // the title, lower-cased
	Tags  map[string]bool   // page tags, lower-cased
	Props map[string]string // page properties: NormKey(key) → value (list items joined by ", ")
	Day   time.Time         // journal day at 00:00 UTC; zero otherwise
	// Blocks are the page's blocks in file order.
	Blocks []*Block
	// Names are the page names its page-level lines (properties before
	// the first block: tags::, key:: [[x]]) reference: lower-cased name →
	// as first written; nil when none (see Graph.Named).
	Names map[string]string
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
	// page's title); nil when none.
	Refs map[string]bool
	// BlockRefs are the lower-cased uuids of the blocks its own lines
	// reference (((uuid)) and {{embed ((uuid))}}); nil when none.
	BlockRefs map[string]bool
	// Names are the page names its own lines reference by name ([[x]],
	// #x, embeds, links in properties; not Markdown links to files):
	// lower-cased name → as first written; nil when none (see
	// Graph.Named).
	Names map[string]string
	// Ord is the block's position in Graph.Blocks: a parent's Ord is
	// smaller than its children's.
	Ord int
	// Lower is Content lower-cased (for full-text filters).
	Lower string
	// Marker is the task marker the content starts with (TODO, DOING,
	// DONE, LATER, NOW, WAITING, WAIT, CANCELED, CANCELLED, IN-PROGRESS),
	// "" for a block that is no task.
	Marker string
	// Priority is "A", "B" or "C" from the content's first [#A], [#B] or
	// [#C]; "" when none.
	Priority string
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
	// Referrers maps a lower-cased page or tag name to the blocks whose
	// Refs hold it, in Blocks order.
	Referrers map[string][]*Block
	// BlockReferrers maps a lower-cased block uuid to the blocks whose
	// BlockRefs hold it, in Blocks order.
	BlockReferrers map[string][]*Block
	// ByUUID maps a lower-cased block uuid to its block.
	ByUUID map[string]*Block
	// Named maps every lower-cased page name the graph references by
	// name (Block.Names, Page.Names) to where: Logseq has a page for each
	// such name, with a file or not. Refs are its values, by name.
	Named map[string]*NameUse
	Refs  []*NameUse
	// TitleFormats are the graphs' :journal/page-title-format patterns
	// (Logseq's default "MMM do, yyyy" when no graph sets one), distinct.
	TitleFormats []string
	// TitleLayouts are the Go layouts (TitleLayout) of the graphs'
	// :journal/page-title-format when not Logseq's default "MMM do, yyyy"
	// (set by For).
	TitleLayouts []string
	// Rev is the index content revision the graph was read at ("" when
	// unknown: Load outside a cache).
	Rev string
}

// NameUse is where a page name is referenced: blocks in Blocks order,
// pages (page-level lines) in Pages order.
type NameUse struct {
	Key    string // the lower-cased name
	Blocks []*Block
	Pages  []*Page
	// Page is the page the name stands for when no file bears it: no
	// path, no blocks, titled as first written (FirstWritten of every
	// note), a journal with its Day when the name is a journal title in
	// one of the graph's TitleFormats. Shared: never modify it.
	Page *Page
}

// FirstWritten is the name as first written by a note shows allows (nil:
// every note), in path then line order (a page's own property lines
// before its blocks); false when no such note references it.
func (u *NameUse) FirstWritten(shows func(*Page) bool) (string, bool) {
	var written, at string
	found := false
	for _, b := range u.Blocks {
		if shows == nil || shows(b.Page) {
			written, at, found = b.Names[u.Key], b.Page.Path, true
			break
		}
	}
	for _, p := range u.Pages {
		if shows == nil || shows(p) {
			if !found || p.Path <= at {
				written, found = p.Names[u.Key], true
			}
			break
		}
	}
	return written, found
}

// Markers are the task markers a block's first word can be.
var Markers = map[string]bool{"TODO": true, "DOING": true, "DONE": true, "LATER": true, "NOW": true, "WAITING": true, "WAIT": true, "CANCELED": true, "CANCELLED": true, "IN-PROGRESS": true}

// Load reads the pages and journals of the index in db (notes of other
// kinds are left out), with their blocks and references. Journals get
// their day from a yyyy_MM_dd or yyyy-MM-dd file name; For also knows the
// graph's own :journal/file-name-format and caches the graph.
func Load(ctx context.Context, db *sql.DB) (*Graph, error) {
	return load(ctx, db, nil)
}

// queryer is a *sql.DB or a *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// load reads the graph; days gives a journal's day from its path (nil:
// the default file names only).
func load(ctx context.Context, db queryer, days func(rel string) (time.Time, bool)) (*Graph, error) {
	g := &Graph{ByID: map[int64]*Page{}, Names: map[string][]*Page{}, Referrers: map[string][]*Block{},
		BlockReferrers: map[string][]*Block{}, ByUUID: map[string]*Block{}}
	err := each(ctx, db, `SELECT id, path, title, kind FROM notes WHERE kind IN ('page','journal') ORDER BY path`, func(rs *sql.Rows) error {
		p := &Page{Tags: map[string]bool{}, Props: map[string]string{}}
		if err := rs.Scan(&p.ID, &p.Path, &p.Title, &p.Kind); err != nil {
			return err
		}
		if p.Kind == "journal" {
			if days != nil {
				p.Day, _ = days(p.Path)
			} else {
				p.Day, _ = defaultDay(p.Path)
			}
		}
		p.Key = strings.ToLower(p.Title)
		g.Pages = append(g.Pages, p)
		g.ByID[p.ID] = p
		g.Names[p.Key] = append(g.Names[p.Key], p)
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
			for _, t := range listItems(v) {
				p.Tags[strings.ToLower(t)] = true
				p.Names = addName(p.Names, t)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Blocks in table order (no join, no sort in SQLite), put in page
	// then file order below.
	err = each(ctx, db, `SELECT note_id, seq, parent_seq, COALESCE(uuid,''), line, end_line, content, COALESCE(properties,'') FROM blocks`, func(rs *sql.Rows) error {
		b := &Block{}
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
		b.Lower = strings.ToLower(b.Content)
		b.Marker, b.Priority = TaskOf(b.Content)
		p.Blocks = append(p.Blocks, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	bySeq := func(a, b *Block) int { return a.Seq - b.Seq }
	for _, p := range g.Pages {
		if !slices.IsSortedFunc(p.Blocks, bySeq) {
			slices.SortFunc(p.Blocks, bySeq)
		}
		for _, b := range p.Blocks {
			b.Ord = len(g.Blocks)
			g.Blocks = append(g.Blocks, b)
			if b.UUID != "" {
				g.ByUUID[strings.ToLower(b.UUID)] = b
			}
		}
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
	if err := each(ctx, db, `SELECT src_id, line, kind, target, COALESCE(dst_id, 0), attachment FROM links WHERE kind IN ('wikilink','embed','typed','tag','markdown','blockref')`, func(rs *sql.Rows) error {
		var src, dst int64
		var line int
		var kind, target string
		var attachment bool
		if err := rs.Scan(&src, &line, &kind, &target, &dst, &attachment); err != nil {
			return err
		}
		// A page name: what Logseq makes a page of.
		named := kind != "markdown" && kind != "blockref" && !attachment
		b := g.owner(src, line)
		if b == nil {
			if p := g.ByID[src]; p != nil && named {
				p.Names = addName(p.Names, target)
			}
			return nil
		}
		if named {
			b.Names = addName(b.Names, target)
		}
		if kind == "blockref" {
			if b.BlockRefs == nil {
				b.BlockRefs = map[string]bool{}
			}
			b.BlockRefs[strings.ToLower(strings.TrimSpace(target))] = true
			return nil
		}
		if b.Refs == nil {
			b.Refs = map[string]bool{}
		}
		b.Refs[strings.ToLower(strings.TrimSpace(target))] = true
		if p := g.ByID[dst]; p != nil {
			b.Refs[p.Key] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := each(ctx, db, `SELECT note_id, tag, tag_key, line FROM tags`, func(rs *sql.Rows) error {
		var id int64
		var text, tag string
		var line int
		if err := rs.Scan(&id, &text, &tag, &line); err != nil {
			return err
		}
		if b := g.owner(id, line); b != nil {
			if b.Refs == nil {
				b.Refs = map[string]bool{}
			}
			b.Refs[tag] = true
			b.Names = addName(b.Names, text)
		} else if p := g.ByID[id]; p != nil {
			p.Names = addName(p.Names, text)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	g.Named = map[string]*NameUse{}
	use := func(k string) *NameUse {
		u := g.Named[k]
		if u == nil {
			u = &NameUse{Key: k}
			g.Named[k] = u
			g.Refs = append(g.Refs, u)
		}
		return u
	}
	for _, b := range g.Blocks {
		for k := range b.Refs {
			g.Referrers[k] = append(g.Referrers[k], b)
		}
		for k := range b.BlockRefs {
			g.BlockReferrers[k] = append(g.BlockReferrers[k], b)
		}
		for k := range b.Names {
			u := use(k)
			u.Blocks = append(u.Blocks, b)
		}
	}
	for _, p := range g.Pages {
		for k := range p.Names {
			u := use(k)
			u.Pages = append(u.Pages, p)
		}
	}
	slices.SortFunc(g.Refs, func(a, b *NameUse) int { return strings.Compare(a.Key, b.Key) })
	for _, u := range g.Refs {
		title, _ := u.FirstWritten(nil)
		u.Page = &Page{Title: title, Key: u.Key, Kind: "page"}
	}
	g.setTitleFormats([]string{markdown.DefaultJournalTitleFormat})
	return g, nil
}

// setTitleFormats sets TitleFormats and, with them, which of the pages
// that exist only by reference are journals (before the graph is shared).
func (g *Graph) setTitleFormats(formats []string) {
	g.TitleFormats = formats
	for _, u := range g.Refs {
		u.Page.Kind, u.Page.Day = "page", time.Time{}
		// Every title format writes the year in digits.
		if strings.ContainsAny(u.Key, "0123456789") {
			if t, ok := g.JournalDay(u.Key); ok {
				u.Page.Kind, u.Page.Day = "journal", t
			}
		}
	}
}

// addName records a page name as written in m (lower-cased key → the
// first spelling), making m when nil.
func addName(m map[string]string, name string) map[string]string {
	name = strings.TrimSpace(name)
	if name == "" {
		return m
	}
	k := strings.ToLower(name)
	if _, ok := m[k]; ok {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	m[k] = name
	return m
}

// JournalDay reads a page name as a journal title in one of the graph's
// title formats (written exactly as the format writes it).
func (g *Graph) JournalDay(name string) (time.Time, bool) {
	for _, f := range g.TitleFormats {
		if t, ok := markdown.ParseTitleDate(name, f); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// TaskOf reads a block's task marker (its first word, when one of
// Markers) and priority (its first [#A], [#B] or [#C]).
func TaskOf(content string) (marker, priority string) {
	w, _, _ := strings.Cut(content, " ")
	if Markers[w] {
		marker = w
	}
	for i := strings.Index(content, "[#"); i >= 0; {
		if rest := content[i+2:]; len(rest) >= 2 && rest[1] == ']' && rest[0] >= 'A' && rest[0] <= 'C' {
			return marker, rest[:1]
		}
		j := strings.Index(content[i+2:], "[#")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return marker, ""
}

// owner is the block of note id whose own lines hold line, or nil.
func (g *Graph) owner(id int64, line int) *Block {
	p := g.ByID[id]
	if p == nil {
		return nil
	}
	// Blocks are in file order and own disjoint line ranges.
	i := sort.Search(len(p.Blocks), func(i int) bool { return p.Blocks[i].Line > line }) - 1
	if i >= 0 && line <= p.Blocks[i].End {
		return p.Blocks[i]
	}
	return nil
}

// MarkPathRefs sets out[b.Ord] for every block whose path references
// (Logseq's :block/path-refs) hold one of the lower-cased names keys: its
// own Refs or an ancestor's, its page's title or one of its page's tags.
// out has one entry per block of g.Blocks; entries already true stay
// true (and mark their child blocks).
func (g *Graph) MarkPathRefs(out []bool, keys ...string) {
	for _, k := range keys {
		for _, b := range g.Referrers[k] {
			out[b.Ord] = true
		}
	}
	var last *Page
	onPage := false
	for i, b := range g.Blocks {
		if b.Page != last {
			last, onPage = b.Page, false
			for _, k := range keys {
				if b.Page.Key == k || b.Page.Tags[k] {
					onPage = true
				}
			}
		}
		// Parents come before their children.
		if onPage || b.Parent != nil && out[b.Parent.Ord] {
			out[i] = true
		}
	}
}

// MarkBlockPathRefs sets out[b.Ord] for every block whose own lines, or
// an ancestor's, reference the block uuid (any case).
func (g *Graph) MarkBlockPathRefs(out []bool, uuid string) {
	for _, b := range g.BlockReferrers[strings.ToLower(uuid)] {
		out[b.Ord] = true
	}
	for i, b := range g.Blocks {
		if b.Parent != nil && out[b.Parent.Ord] {
			out[i] = true
		}
	}
}

// HasPathRef reports whether b's path references hold the lower-cased
// name key (see MarkPathRefs), for one block at a time.
func (b *Block) HasPathRef(key string) bool {
	if b.Page.Key == key || b.Page.Tags[key] {
		return true
	}
	for a := b; a != nil; a = a.Parent {
		if a.Refs[key] {
			return true
		}
	}
	return false
}

// Lookup returns the pages a lower-cased, trimmed name or alias names.
func (g *Graph) Lookup(name string) []*Page {
	return g.Names[strings.ToLower(strings.TrimSpace(name))]
}

// each runs q and calls fn for every row, checking ctx every 4096 rows.
func each(ctx context.Context, db queryer, q string, fn func(*sql.Rows) error) error {
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
	out := listItems(v)
	for i, s := range out {
		out[i] = strings.ToLower(s)
	}
	return out
}

// listItems splits a property value into its comma-separated items,
// without [[ ]] or '#', as written.
func listItems(v string) []string {
	var out []string
	for _, s := range markdown.SplitLinkList(v) {
		s = strings.TrimPrefix(s, "#")
		if len(s) >= 4 && strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]]") {
			s = s[2 : len(s)-2]
		}
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
