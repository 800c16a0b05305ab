// Package lsimple evaluates Logseq simple queries ({{query ...}}) against
// the loci index. docs/query.md ("Logseq simple queries") says what is supported.
package lsimple

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/query/graph"
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
	ev := &evaluator{ctx: ctx, now: now()}
	// Check the whole tree before touching the index, so an unsupported
	// construct anywhere fails fast with no partial work.
	pageOnly, err := check(root)
	if err != nil {
		return nil, err
	}
	if err := ev.load(db, pageOnly); err != nil {
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
		r := Row{Path: it.page.Path, Page: it.page.Title}
		if it.block != nil {
			r.Line, r.UUID, r.Content = it.block.Line, it.block.UUID, it.block.Content
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

// check validates the tree and reports whether every filter is page-level.
func check(n *node) (pageOnly bool, err error) {
	pageOnly = true
	var walk func(n *node) error
	walk = func(n *node) error {
		if err := checkAtom(n); err != nil {
			return err
		}
		if n.kind != nList {
			pageOnly = false
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
		return false, err
	}
	return pageOnly, nil
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

// item is what a query selects: a block, or a page (block nil).
type item struct {
	page  *graph.Page
	block *graph.Block
}

type evaluator struct {
	ctx   context.Context
	now   time.Time
	g     *graph.Graph
	items []item
}

// load reads the graph and lists the items a query selects from: the
// pages when every filter is page-level, else the blocks.
func (ev *evaluator) load(db *sql.DB, pageOnly bool) error {
	g, err := graph.Load(ev.ctx, db)
	if err != nil {
		return err
	}
	ev.g = g
	if pageOnly {
		ev.items = make([]item, 0, len(g.Pages))
		for _, p := range g.Pages {
			ev.items = append(ev.items, item{page: p})
		}
		return nil
	}
	ev.items = make([]item, 0, len(g.Blocks))
	for _, b := range g.Blocks {
		ev.items = append(ev.items, item{page: b.Page, block: b})
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
				return it.block != nil && strings.Contains(strings.ToLower(it.block.Content), needle)
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
	for _, p := range ev.g.Names[k] {
		if t := strings.ToLower(p.Title); t != k {
			keys = append(keys, t)
		}
	}
	return func(it item) bool {
		pg := it.page
		for _, k := range keys {
			if pg.Tags[k] || it.block != nil && strings.ToLower(pg.Title) == k {
				return true
			}
			for b := it.block; b != nil; b = b.Parent {
				if b.Refs[k] {
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
			w, _, _ := strings.Cut(it.block.Content, " ")
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
				if strings.Contains(it.block.Content, p) {
					return true
				}
			}
			return false
		}, nil
	case "property", "page-property":
		key := graph.NormKey(args[0].text)
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
			for _, x := range graph.ListValues(v) {
				if x == val {
					return true
				}
			}
			return false
		}
		if op == "page-property" {
			return func(it item) bool { return match(it.page.Props) }, nil
		}
		return func(it item) bool { return it.block != nil && match(it.block.Props) }, nil
	case "page-tags":
		var want []string
		for _, a := range args {
			want = append(want, strings.ToLower(strings.TrimSpace(a.text)))
		}
		return func(it item) bool {
			tags := it.page.Tags
			for _, w := range want {
				if tags[w] {
					return true
				}
			}
			return false
		}, nil
	case "page":
		pages := map[*graph.Page]bool{}
		for _, p := range ev.g.Lookup(args[0].text) {
			pages[p] = true
		}
		return func(it item) bool { return pages[it.page] }, nil
	case "namespace":
		prefix := strings.ToLower(strings.TrimSpace(args[0].text)) + "/"
		return func(it item) bool {
			return strings.HasPrefix(strings.ToLower(it.page.Title), prefix)
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
			d := it.page.Day
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
