// Package lsimple evaluates Logseq simple queries ({{query ...}}) against
// the loci index. docs/query.md ("Logseq simple queries") says what is supported.
package lsimple

import (
	"context"
	"database/sql"
	"encoding/json"
	"path"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/query"
)

// DefaultLimit is the number of rows returned when Eval is given limit <= 0.
const DefaultLimit = 100

// Row is one result: a block, or a page when the query only has page-level
// filters (Result.Kind "pages"; Line, UUID and Content are then empty).
type Row struct {
	Path    string `json:"path"`
	Line    int    `json:"line,omitempty"`
	UUID    string `json:"uuid,omitempty"` // the block's id:: property, when it has one
	Page    string `json:"page"`
	Content string `json:"content,omitempty"`
}

// Result is the answer to a query, rows in path then line order.
type Result struct {
	Kind      string   `json:"kind"` // "blocks" or "pages"
	Columns   []string `json:"columns"`
	Rows      []Row    `json:"rows"`
	Total     int      `json:"total"`     // matches before the limit
	Truncated bool     `json:"truncated"` // Total > len(Rows)
}

// Evaluator evaluates queries; Now is its clock (time.Now when nil), used
// by relative dates such as -7d and today.
type Evaluator struct {
	Now func() time.Time
}

// Eval evaluates q with the real clock.
func Eval(ctx context.Context, db *sql.DB, q string, limit int) (*Result, error) {
	return Evaluator{}.Eval(ctx, db, q, limit)
}

// Eval parses q and evaluates it against the index in db.
func (e Evaluator) Eval(ctx context.Context, db *sql.DB, q string, limit int) (*Result, error) {
	root, err := parse(q)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	ev := &evaluator{ctx: ctx, db: db, now: now()}
	// Check the whole tree before touching the index, so an unsupported
	// construct anywhere fails fast with no partial work.
	pageOnly, refs, err := check(root)
	if err != nil {
		return nil, err
	}
	if err := ev.load(pageOnly, refs); err != nil {
		return nil, err
	}
	set, err := ev.eval(root)
	if err != nil {
		return nil, err
	}
	res := &Result{Kind: "blocks", Columns: []string{"path", "line", "uuid", "page", "content"}, Rows: []Row{}}
	if pageOnly {
		res.Kind, res.Columns = "pages", []string{"path", "page"}
	}
	for i, ok := range set {
		if !ok {
			continue
		}
		res.Total++
		if len(res.Rows) >= limit {
			continue
		}
		it := ev.items[i]
		pg := ev.pages[it.note]
		r := Row{Path: pg.path, Page: pg.title}
		if it.block != nil {
			r.Line, r.UUID, r.Content = it.block.line, it.block.uuid, it.block.content
		}
		res.Rows = append(res.Rows, r)
	}
	res.Truncated = res.Total > len(res.Rows)
	return res, nil
}

// Operators and how they apply: page-level ones select pages (and, in a
// block query, every block of those pages).
var pageLevel = map[string]bool{"page-property": true, "namespace": true, "page-tags": true}

var blockLevel = map[string]bool{"task": true, "todo": true, "priority": true, "property": true, "between": true, "page": true}

// check validates the tree and reports whether every filter is page-level
// and whether it has references (which need the links and tags read).
func check(n *node) (pageOnly, refs bool, err error) {
	pageOnly = true
	var walk func(n *node) error
	walk = func(n *node) error {
		if err := checkAtom(n); err != nil {
			return err
		}
		if n.kind != nList {
			pageOnly = false
			refs = refs || n.kind == nRef || n.kind == nTag
			if n.kind == nAtom && n.text == "" {
				return invalid("empty expression")
			}
			return nil
		}
		if len(n.items) == 0 {
			return invalid("empty ()")
		}
		if n.items[0].kind != nAtom {
			return invalid("a list must start with an operator name")
		}
		op := strings.ToLower(n.items[0].text)
		args := n.items[1:]
		switch {
		case op == "and" || op == "or" || op == "not":
			if len(args) == 0 {
				return invalid("(%s) needs arguments", op)
			}
			for _, a := range args {
				if err := walk(a); err != nil {
					return err
				}
			}
			return nil
		case pageLevel[op], blockLevel[op]:
			if !pageLevel[op] {
				pageOnly = false
			}
			for _, a := range args {
				if a.kind == nList {
					return invalid("(%s) takes values, not expressions", op)
				}
				if err := checkAtom(a); err != nil {
					return err
				}
			}
			return checkArgs(op, args)
		}
		return unsupported("(" + op + ")")
	}
	if err := walk(n); err != nil {
		return false, false, err
	}
	return pageOnly, refs, nil
}

// checkAtom refuses the template syntax of Logseq's query templates:
// <% today %> placeholders and $1 parameters.
func checkAtom(n *node) error {
	if n.kind != nAtom {
		return nil
	}
	switch {
	case strings.HasPrefix(n.text, "<%") || strings.HasSuffix(n.text, "%>"):
		return unsupported("<% %> placeholders")
	case len(n.text) > 1 && n.text[0] == '$':
		return unsupported("$ parameters")
	}
	return nil
}

func checkArgs(op string, args []*node) error {
	switch op {
	case "property", "page-property":
		if len(args) < 1 || len(args) > 2 {
			return invalid("(%s key [value]) takes one or two arguments", op)
		}
	case "between":
		if len(args) != 2 {
			return invalid("(between start end) takes two dates")
		}
	case "page", "namespace":
		if len(args) != 1 {
			return invalid("(%s name) takes one name", op)
		}
	default:
		if len(args) == 0 {
			return invalid("(%s) needs arguments", op)
		}
	}
	return nil
}

type page struct {
	path, title, kind string
	tags              map[string]bool   // page tags, lower-cased
	props             map[string]string // page properties: normalized key → value
	day               time.Time         // journal day; zero otherwise
}

type block struct {
	note      int64
	seq       int
	parentSeq int
	parent    *block // nil for a top-level block
	uuid      string
	line, end int
	content   string
	props     map[string]string // normalized key → value
	refs      map[string]bool   // lower-cased names of pages / tags it references
}

// item is what a query selects: a block, or a page (block nil).
type item struct {
	note  int64
	block *block
}

type evaluator struct {
	ctx   context.Context
	db    *sql.DB
	now   time.Time
	pages map[int64]*page
	items []item
	// names maps a lower-cased page name or alias to its note ids.
	names map[string][]int64
}

func (ev *evaluator) load(pageOnly, refs bool) error {
	ev.pages = map[int64]*page{}
	ev.names = map[string][]int64{}
	var ids []int64
	err := ev.query(`SELECT id, path, title, kind FROM notes WHERE kind IN ('page','journal') ORDER BY path`, func(rs *sql.Rows) error {
		var id int64
		p := &page{tags: map[string]bool{}, props: map[string]string{}}
		if err := rs.Scan(&id, &p.path, &p.title, &p.kind); err != nil {
			return err
		}
		if p.kind == "journal" {
			stem := strings.TrimSuffix(path.Base(p.path), path.Ext(p.path))
			if t, err := time.Parse("2006_01_02", strings.ReplaceAll(stem, "-", "_")); err == nil {
				p.day = t
			}
		}
		ev.pages[id] = p
		ev.names[strings.ToLower(p.title)] = append(ev.names[strings.ToLower(p.title)], id)
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return err
	}
	if err := ev.query(`SELECT note_id, alias_key FROM aliases`, func(rs *sql.Rows) error {
		var id int64
		var a string
		if err := rs.Scan(&id, &a); err != nil {
			return err
		}
		ev.names[a] = append(ev.names[a], id)
		return nil
	}); err != nil {
		return err
	}
	if err := ev.query(`SELECT note_id, key, value FROM props`, func(rs *sql.Rows) error {
		var id int64
		var k, v string
		if err := rs.Scan(&id, &k, &v); err != nil {
			return err
		}
		p := ev.pages[id]
		if p == nil {
			return nil
		}
		k = normKey(k)
		if old, ok := p.props[k]; ok {
			v = old + ", " + v // list frontmatter: one row per item
		}
		p.props[k] = v
		if k == "tags" || k == "tag" {
			for _, t := range listValues(v) {
				p.tags[t] = true
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if pageOnly {
		for _, id := range ids {
			ev.items = append(ev.items, item{note: id})
		}
		return nil
	}
	byNote := map[int64][]*block{}
	err = ev.query(`SELECT b.note_id, b.seq, b.parent_seq, COALESCE(b.uuid,''), b.line, b.end_line, b.content, COALESCE(b.properties,'')
		FROM blocks b JOIN notes n ON n.id = b.note_id ORDER BY n.path, b.seq`, func(rs *sql.Rows) error {
		b := &block{refs: map[string]bool{}}
		var props string
		if err := rs.Scan(&b.note, &b.seq, &b.parentSeq, &b.uuid, &b.line, &b.end, &b.content, &props); err != nil {
			return err
		}
		if ev.pages[b.note] == nil {
			return nil
		}
		if props != "" {
			var m map[string]string
			if json.Unmarshal([]byte(props), &m) == nil {
				b.props = make(map[string]string, len(m))
				for k, v := range m {
					b.props[normKey(k)] = v
				}
			}
		}
		byNote[b.note] = append(byNote[b.note], b)
		ev.items = append(ev.items, item{note: b.note, block: b})
		return nil
	})
	if err != nil {
		return err
	}
	if !refs {
		return nil
	}
	for _, bs := range byNote {
		bySeq := make(map[int]*block, len(bs))
		for _, b := range bs {
			bySeq[b.seq] = b
		}
		for _, b := range bs {
			if p := bySeq[b.parentSeq]; p != nil && p != b && p.seq < b.seq {
				b.parent = p
			}
		}
	}
	// References: links and tags, given to the block whose own lines hold them.
	owner := func(note int64, line int) *block {
		for _, b := range byNote[note] {
			if line >= b.line && line <= b.end {
				return b
			}
		}
		return nil
	}
	if err := ev.query(`SELECT src_id, line, target, COALESCE(dst_id, 0) FROM links WHERE kind IN ('wikilink','embed','typed','tag','markdown')`, func(rs *sql.Rows) error {
		var src, dst int64
		var line int
		var target string
		if err := rs.Scan(&src, &line, &target, &dst); err != nil {
			return err
		}
		b := owner(src, line)
		if b == nil {
			return nil
		}
		b.refs[strings.ToLower(strings.TrimSpace(target))] = true
		if p := ev.pages[dst]; p != nil {
			b.refs[strings.ToLower(p.title)] = true
		}
		return nil
	}); err != nil {
		return err
	}
	return ev.query(`SELECT note_id, tag_key, line FROM tags`, func(rs *sql.Rows) error {
		var id int64
		var tag string
		var line int
		if err := rs.Scan(&id, &tag, &line); err != nil {
			return err
		}
		if b := owner(id, line); b != nil {
			b.refs[tag] = true
		}
		return nil
	})
}

func (ev *evaluator) query(q string, each func(*sql.Rows) error) error {
	rs, err := ev.db.QueryContext(ev.ctx, q)
	if err != nil {
		return errs.Wrap(err, errs.CodeInternal, "query: reading the index")
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		if n++; n%4096 == 0 {
			if err := ev.ctx.Err(); err != nil {
				return err
			}
		}
		if err := each(rs); err != nil {
			return errs.Wrap(err, errs.CodeInternal, "query: reading the index")
		}
	}
	if err := rs.Err(); err != nil {
		return errs.Wrap(err, errs.CodeInternal, "query: reading the index")
	}
	return nil
}

// eval returns, for every item, whether n selects it.
func (ev *evaluator) eval(n *node) ([]bool, error) {
	if err := ev.ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]bool, len(ev.items))
	if n.kind != nList {
		switch n.kind {
		case nRef, nTag:
			ev.fill(out, ev.refMatcher(n.text))
		default: // a string or a bare word: full text
			needle := strings.ToLower(n.text)
			ev.fill(out, func(it item) bool {
				return it.block != nil && strings.Contains(strings.ToLower(it.block.content), needle)
			})
		}
		return out, nil
	}
	op := strings.ToLower(n.items[0].text)
	args := n.items[1:]
	switch op {
	case "and", "or":
		for i, a := range args {
			s, err := ev.eval(a)
			if err != nil {
				return nil, err
			}
			for j := range out {
				switch {
				case i == 0:
					out[j] = s[j]
				case op == "and":
					out[j] = out[j] && s[j]
				default:
					out[j] = out[j] || s[j]
				}
			}
		}
		return out, nil
	case "not":
		// (not a b) excludes what matches any of a, b.
		for _, a := range args {
			s, err := ev.eval(a)
			if err != nil {
				return nil, err
			}
			for j := range out {
				out[j] = out[j] || s[j]
			}
		}
		for j := range out {
			out[j] = !out[j]
		}
		return out, nil
	}
	m, err := ev.leaf(op, args)
	if err != nil {
		return nil, err
	}
	ev.fill(out, m)
	return out, nil
}

func (ev *evaluator) fill(out []bool, m func(item) bool) {
	for i, it := range ev.items {
		out[i] = m(it)
	}
}

// refMatcher matches the blocks whose path references include name, as
// Logseq's do: the block's own links and tags, those of its ancestors, and
// its page; and the blocks of pages tagged name.
func (ev *evaluator) refMatcher(name string) func(item) bool {
	k := strings.ToLower(strings.TrimSpace(name))
	// An alias names the page it belongs to: references to either match.
	keys := []string{k}
	for _, id := range ev.names[k] {
		if t := strings.ToLower(ev.pages[id].title); t != k {
			keys = append(keys, t)
		}
	}
	return func(it item) bool {
		pg := ev.pages[it.note]
		for _, k := range keys {
			if pg.tags[k] || it.block != nil && strings.ToLower(pg.title) == k {
				return true
			}
			for b := it.block; b != nil; b = b.parent {
				if b.refs[k] {
					return true
				}
			}
		}
		return false
	}
}

var markers = map[string]bool{"TODO": true, "DOING": true, "DONE": true, "LATER": true, "NOW": true, "WAITING": true, "WAIT": true, "CANCELED": true, "CANCELLED": true, "IN-PROGRESS": true}

func (ev *evaluator) leaf(op string, args []*node) (func(item) bool, error) {
	switch op {
	case "task", "todo":
		want := map[string]bool{}
		for _, a := range args {
			m := strings.ToUpper(a.text)
			if !markers[m] {
				return nil, invalid("(%s): unknown marker %q", op, a.text)
			}
			want[m] = true
		}
		return func(it item) bool {
			if it.block == nil {
				return false
			}
			w, _, _ := strings.Cut(it.block.content, " ")
			return want[w]
		}, nil
	case "priority":
		var pats []string
		for _, a := range args {
			p := strings.ToUpper(a.text)
			if p != "A" && p != "B" && p != "C" {
				return nil, invalid("(priority): %q is not a, b or c", a.text)
			}
			pats = append(pats, "[#"+p+"]")
		}
		return func(it item) bool {
			if it.block == nil {
				return false
			}
			for _, p := range pats {
				if strings.Contains(it.block.content, p) {
					return true
				}
			}
			return false
		}, nil
	case "property", "page-property":
		key := normKey(args[0].text)
		val, hasVal := "", len(args) == 2
		if hasVal {
			val = strings.ToLower(strings.TrimSpace(args[1].text))
		}
		match := func(props map[string]string) bool {
			v, ok := props[key]
			if !ok {
				return false
			}
			if !hasVal {
				return true
			}
			if strings.ToLower(strings.TrimSpace(v)) == val {
				return true
			}
			for _, x := range listValues(v) {
				if x == val {
					return true
				}
			}
			return false
		}
		if op == "page-property" {
			return func(it item) bool { return match(ev.pages[it.note].props) }, nil
		}
		return func(it item) bool { return it.block != nil && match(it.block.props) }, nil
	case "page-tags":
		var want []string
		for _, a := range args {
			want = append(want, strings.ToLower(strings.TrimSpace(a.text)))
		}
		return func(it item) bool {
			tags := ev.pages[it.note].tags
			for _, w := range want {
				if tags[w] {
					return true
				}
			}
			return false
		}, nil
	case "page":
		ids := map[int64]bool{}
		for _, id := range ev.names[strings.ToLower(strings.TrimSpace(args[0].text))] {
			ids[id] = true
		}
		return func(it item) bool { return ids[it.note] }, nil
	case "namespace":
		prefix := strings.ToLower(strings.TrimSpace(args[0].text)) + "/"
		return func(it item) bool {
			return strings.HasPrefix(strings.ToLower(ev.pages[it.note].title), prefix)
		}, nil
	case "between":
		from, err := ev.date(args[0])
		if err != nil {
			return nil, err
		}
		to, err := ev.date(args[1])
		if err != nil {
			return nil, err
		}
		if to.Before(from) {
			from, to = to, from
		}
		return func(it item) bool {
			d := ev.pages[it.note].day
			return !d.IsZero() && !d.Before(from) && !d.After(to)
		}, nil
	}
	return nil, unsupported("(" + op + ")")
}

// date reads a between bound: today, yesterday, tomorrow, now, ±N with a
// unit d, w, m or y, a journal title ([[Nov 1st, 2026]]), or yyyy-MM-dd /
// yyyyMMdd. The result is a day at 00:00 UTC.
func (ev *evaluator) date(n *node) (time.Time, error) {
	if d, ok := query.RelativeDay(n.text, ev.now); ok {
		return d, nil
	}
	// Journal titles as Logseq writes them: "Nov 1st, 2026", "November 1, 2026".
	t := n.text
	for _, suf := range []string{"st,", "nd,", "rd,", "th,"} {
		if i := strings.Index(t, suf); i > 0 && t[i-1] >= '0' && t[i-1] <= '9' {
			t = t[:i] + "," + t[i+len(suf):]
			break
		}
	}
	for _, layout := range []string{"Jan 2, 2006", "January 2, 2006"} {
		if d, err := time.Parse(layout, strings.TrimSpace(t)); err == nil {
			return d, nil
		}
	}
	return time.Time{}, invalid("(between): cannot read %q as a date", n.text)
}

// normKey normalizes a property key as Logseq does: lower case, _ as -.
func normKey(k string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "_", "-")
}

// listValues splits a property value into its comma-separated items,
// without [[ ]] or '#', lower-cased.
func listValues(v string) []string {
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
