// Package lsimple evaluates Logseq simple queries ({{query ...}}) against
// the loci index. docs/query.md ("Logseq simple queries") says what is supported.
package lsimple

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/index"

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
// by relative dates such as -7d and today; Rand picks the rows of
// (sample n) (math/rand/v2's when nil). Visible, when set, is the read
// fence: the notes (by path) it refuses give no row and their aliases and
// tags are not used, before (sample n) and the limit apply.
type Evaluator struct {
	Now     func() time.Time
	Rand    *rand.Rand
	Visible func(path string) bool
}

// Eval evaluates q with the real clock.
func Eval(ctx context.Context, ix *index.Index, q string, limit int) (*Result, error) {
	return Evaluator{}.Eval(ctx, ix, q, limit)
}

// Eval parses q and evaluates it against the graph of ix (graph.For: the
// cached graph while the index is unchanged).
func (e Evaluator) Eval(ctx context.Context, ix *index.Index, q string, limit int) (*Result, error) {
	p, err := prepare(q)
	if err != nil {
		return nil, err
	}
	g, err := graph.For(ctx, ix)
	if err != nil {
		return nil, err
	}
	return e.run(ctx, g, p, limit)
}

// EvalGraph evaluates q against a loaded graph.
func (e Evaluator) EvalGraph(ctx context.Context, g *graph.Graph, q string, limit int) (*Result, error) {
	p, err := prepare(q)
	if err != nil {
		return nil, err
	}
	return e.run(ctx, g, p, limit)
}

// prepared is a read and checked query: its filter and its modifiers.
type prepared struct {
	filter   *node
	pageOnly bool
	sample   int    // (sample n); 0 when none
	sortKey  string // (sort-by key): a normalized property key; "" when none
	sortAsc  bool
}

// prepare reads q and checks the whole tree before the graph is touched,
// so an unsupported construct anywhere fails fast with no work done.
func prepare(q string) (*prepared, error) {
	root, err := parse(q)
	if err != nil {
		return nil, err
	}
	p := &prepared{}
	// Modifiers stand at the top level: alone or in the top-level and.
	filters := []*node{root}
	if isOp(root, "and") {
		filters = root.items[1:]
	}
	var kept []*node
	for _, n := range filters {
		switch {
		case isOp(n, "sort-by"):
			if p.sortKey != "" {
				return nil, invalid("(sort-by) given twice")
			}
			if err := p.readSort(n.items[1:]); err != nil {
				return nil, err
			}
		case isOp(n, "sample"):
			if p.sample != 0 {
				return nil, invalid("(sample) given twice")
			}
			if err := p.readSample(n.items[1:]); err != nil {
				return nil, err
			}
		default:
			kept = append(kept, n)
		}
	}
	switch {
	case len(kept) == len(filters):
		p.filter = root
	case len(kept) == 0:
		return nil, invalid("(sort-by) and (sample) need a filter beside them")
	case len(kept) == 1:
		p.filter = kept[0]
	default:
		p.filter = &node{kind: nList, items: append([]*node{root.items[0]}, kept...)}
	}
	if p.pageOnly, err = check(p.filter); err != nil {
		return nil, err
	}
	return p, nil
}

func isOp(n *node, op string) bool {
	return n.kind == nList && len(n.items) > 0 && n.items[0].kind == nAtom && strings.EqualFold(n.items[0].text, op)
}

// MaxSample bounds (sample n).
const MaxSample = 10000

func (p *prepared) readSample(args []*node) error {
	if len(args) != 1 || args[0].kind != nAtom {
		return invalid("(sample n) takes one number")
	}
	n, err := strconv.Atoi(args[0].text)
	if err != nil || n < 1 || n > MaxSample {
		return invalid("(sample n): n must be a number from 1 to %d, not %q", MaxSample, args[0].text)
	}
	p.sample = n
	return nil
}

func (p *prepared) readSort(args []*node) error {
	if len(args) < 1 || len(args) > 2 || args[0].kind == nList || (len(args) == 2 && args[1].kind == nList) {
		return invalid("(sort-by key [asc|desc]) takes a property key and an order")
	}
	if err := checkAtom(args[0]); err != nil {
		return err
	}
	p.sortKey = graph.NormKey(args[0].text)
	if p.sortKey == "" {
		return invalid("(sort-by): empty key")
	}
	if len(args) == 2 {
		switch strings.ToLower(args[1].text) {
		case "asc":
			p.sortAsc = true
		case "desc":
		default:
			return invalid("(sort-by): order %q is not asc or desc", args[1].text)
		}
	}
	return nil
}

func (e Evaluator) run(ctx context.Context, g *graph.Graph, p *prepared, limit int) (*Result, error) {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	ev := &evaluator{ctx: ctx, now: now(), g: g, pages: p.pageOnly, visible: e.Visible}
	ev.n = len(g.Blocks)
	if p.pageOnly {
		ev.n = len(g.Pages)
	}
	set, err := ev.eval(p.filter)
	if err != nil {
		return nil, err
	}
	var hits []int
	for i, ok := range set {
		if ok {
			if pg, _ := ev.item(i); ev.shows(pg) {
				hits = append(hits, i)
			}
		}
	}
	if p.sample > 0 && len(hits) > p.sample {
		perm := rand.Perm
		if e.Rand != nil {
			perm = e.Rand.Perm
		}
		pick := perm(len(hits))[:p.sample]
		slices.Sort(pick)
		for j, k := range pick {
			hits[j] = hits[k]
		}
		hits = hits[:p.sample]
	}
	if p.sortKey != "" {
		ev.sortHits(hits, p.sortKey, p.sortAsc)
	}
	res := &Result{Kind: "blocks", Columns: []string{"path", "line", "uuid", "page", "content"}, Rows: []Row{}, Total: len(hits)}
	if p.pageOnly {
		res.Kind, res.Columns = "pages", []string{"path", "page"}
	}
	for _, i := range hits {
		if len(res.Rows) >= limit {
			break
		}
		pg, b := ev.item(i)
		r := Row{Path: pg.Path, Page: pg.Title}
		if b != nil {
			r.Line, r.UUID, r.Content = b.Line, b.UUID, b.Content
		}
		res.Rows = append(res.Rows, r)
	}
	res.Truncated = res.Total > len(res.Rows)
	return res, nil
}

// sortHits orders hits by the property key (the block's, or the page's in
// a page query): numbers by value before text (case-insensitive),
// reversed for desc; rows without the key last in either order; ties
// keep path and line order.
func (ev *evaluator) sortHits(hits []int, key string, asc bool) {
	type sv struct {
		has bool
		num bool
		f   float64
		s   string
	}
	vals := make(map[int]sv, len(hits))
	for _, i := range hits {
		pg, b := ev.item(i)
		props := pg.Props
		if b != nil {
			props = b.Props
		}
		v, ok := props[key]
		if !ok {
			continue
		}
		x := sv{has: true, s: strings.ToLower(strings.TrimSpace(v))}
		if f, err := strconv.ParseFloat(x.s, 64); err == nil && !math.IsNaN(f) {
			x.num, x.f = true, f
		}
		vals[i] = x
	}
	slices.SortStableFunc(hits, func(a, b int) int {
		x, y := vals[a], vals[b]
		switch {
		case !x.has || !y.has:
			if x.has == y.has {
				return 0
			}
			if x.has {
				return -1
			}
			return 1
		}
		var c int
		switch {
		case x.num && y.num:
			c = cmp.Compare(x.f, y.f)
		case x.num != y.num: // numbers before text
			c = 1
			if x.num {
				c = -1
			}
		default:
			c = strings.Compare(x.s, y.s)
		}
		if !asc {
			c = -c
		}
		return c
	})
}

// Operators and how they apply: page-level ones select pages (and, in a
// block query, every block of those pages).
var pageLevel = map[string]bool{"page-property": true, "namespace": true, "page-tags": true, "all-page-tags": true}

var blockLevel = map[string]bool{"task": true, "todo": true, "priority": true, "property": true, "between": true, "page": true, "page-ref": true}

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
		case op == "sort-by" || op == "sample":
			return invalid("(%s) goes at the top level of the query", op)
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
	case "all-page-tags":
		if len(args) != 0 {
			return invalid("(all-page-tags) takes no arguments")
		}
	case "page", "namespace", "page-ref":
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

type evaluator struct {
	ctx   context.Context
	now   time.Time
	g     *graph.Graph
	pages bool // the items are g.Pages, else g.Blocks
	n     int  // the number of items
	// visible is the read fence (nil: every note).
	visible func(path string) bool
}

func (ev *evaluator) shows(p *graph.Page) bool { return ev.visible == nil || ev.visible(p.Path) }

// item is the page and block (nil in a page query) of item i.
func (ev *evaluator) item(i int) (*graph.Page, *graph.Block) {
	if ev.pages {
		return ev.g.Pages[i], nil
	}
	b := ev.g.Blocks[i]
	return b.Page, b
}

// eval returns, for every item, whether n selects it.
func (ev *evaluator) eval(n *node) ([]bool, error) {
	if err := ev.ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]bool, ev.n)
	if n.kind != nList {
		switch n.kind {
		case nRef, nTag:
			ev.refs(out, n.text)
		case nBlockRef:
			ev.blockRefs(out, n.text)
		default: // a string or a bare word: full text
			needle := strings.ToLower(n.text)
			if !ev.pages {
				for i, b := range ev.g.Blocks {
					out[i] = strings.Contains(b.Lower, needle)
				}
			}
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
	case "page-ref":
		ev.refs(out, args[0].text)
		return out, nil
	}
	m, err := ev.leaf(op, args)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i] = m(ev.item(i))
	}
	return out, nil
}

// refs marks the blocks whose path references include name, as Logseq's
// do: the block's own links and tags, those of its ancestors, and its
// page; and the blocks of pages tagged name. An alias names the page it
// belongs to: references to either match.
func (ev *evaluator) refs(out []bool, name string) {
	if ev.pages { // not reached: references make a block query
		return
	}
	k := strings.ToLower(strings.TrimSpace(name))
	keys := []string{k}
	for _, p := range ev.g.Names[k] {
		if p.Key != k && ev.shows(p) {
			keys = append(keys, p.Key)
		}
	}
	ev.g.MarkPathRefs(out, keys...)
}

// blockRefs marks the blocks whose own lines, or an ancestor's, reference
// the block uuid (((uuid)) or an embed of it).
func (ev *evaluator) blockRefs(out []bool, uuid string) {
	if ev.pages {
		return
	}
	ev.g.MarkBlockPathRefs(out, uuid)
}

func (ev *evaluator) leaf(op string, args []*node) (func(*graph.Page, *graph.Block) bool, error) {
	switch op {
	case "task", "todo":
		want := map[string]bool{}
		for _, a := range args {
			m := strings.ToUpper(a.text)
			if !graph.Markers[m] {
				return nil, invalid("(%s): unknown marker %q", op, a.text)
			}
			want[m] = true
		}
		return func(_ *graph.Page, b *graph.Block) bool { return b != nil && want[b.Marker] }, nil
	case "priority":
		want := map[string]bool{}
		for _, a := range args {
			p := strings.ToUpper(a.text)
			if p != "A" && p != "B" && p != "C" {
				return nil, invalid("(priority): %q is not a, b or c", a.text)
			}
			want[p] = true
		}
		return func(_ *graph.Page, b *graph.Block) bool { return b != nil && want[b.Priority] }, nil
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
			return func(p *graph.Page, _ *graph.Block) bool { return match(p.Props) }, nil
		}
		return func(_ *graph.Page, b *graph.Block) bool { return b != nil && match(b.Props) }, nil
	case "page-tags":
		var want []string
		for _, a := range args {
			want = append(want, strings.ToLower(strings.TrimSpace(a.text)))
		}
		return func(p *graph.Page, _ *graph.Block) bool {
			tags := p.Tags
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
		return func(p *graph.Page, _ *graph.Block) bool { return pages[p] }, nil
	case "all-page-tags":
		// The pages some page's tags:: name.
		pages := map[*graph.Page]bool{}
		for _, p := range ev.g.Pages {
			if !ev.shows(p) {
				continue
			}
			for t := range p.Tags {
				for _, q := range ev.g.Names[t] {
					pages[q] = true
				}
			}
		}
		return func(p *graph.Page, _ *graph.Block) bool { return pages[p] }, nil
	case "namespace":
		prefix := strings.ToLower(strings.TrimSpace(args[0].text)) + "/"
		return func(p *graph.Page, _ *graph.Block) bool { return strings.HasPrefix(p.Key, prefix) }, nil
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
		return func(p *graph.Page, _ *graph.Block) bool {
			d := p.Day
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
	// The graph's own journal title format.
	for _, layout := range ev.g.TitleLayouts {
		if d, ok := graph.ParseTitle(layout, n.text); ok {
			return d, nil
		}
	}
	return time.Time{}, invalid("(between): cannot read %q as a date", n.text)
}
