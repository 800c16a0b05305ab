package datalog

import (
	"context"
	"encoding/binary"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"olympos.io/encoding/edn"

	"github.com/loci-dev/loci/internal/query"
	"github.com/loci-dev/loci/internal/query/graph"
)

// DefaultMaxRows caps the rows of any intermediate result.
const DefaultMaxRows = 1_000_000

// DefaultLimit is the number of rows returned when Options.Limit is 0.
const DefaultLimit = 100

// Evaluator evaluates advanced queries. Now is its clock (time.Now when
// nil), used by the :today / :-7d inputs; MaxRows caps intermediate
// results (DefaultMaxRows when 0), MaxStrBytes the strings functions make
// (DefaultMaxStrBytes when 0).
type Evaluator struct {
	Now         func() time.Time
	MaxRows     int
	MaxStrBytes int
}

// rel is a relation: rows of values, one column per variable.
type rel struct {
	vars []string
	col  map[string]int
	rows [][]Val
}

func newRel(vars []string) *rel {
	r := &rel{vars: vars, col: map[string]int{}}
	for i, v := range vars {
		r.col[v] = i
	}
	return r
}

func (r *rel) bound(v string) bool { _, ok := r.col[v]; return ok }

type run struct {
	ctx         context.Context
	d           *db
	maxRows     int
	steps       int
	strBytes    int // bytes of the strings functions made
	maxStrBytes int
}

// DefaultMaxStrBytes caps the bytes of the strings binding functions
// (str, subs, ...) make in one query.
const DefaultMaxStrBytes = 64 << 20

// Eval parses q and evaluates it over g; inputs, when not nil, replace
// the query map's :inputs.
func (ev Evaluator) Eval(ctx context.Context, g *graph.Graph, q string, inputs []any, opt query.Options) (*query.Result, error) {
	p, err := Parse(q)
	if err != nil {
		return nil, err
	}
	return ev.Run(ctx, g, p, inputs, opt)
}

// Run evaluates a parsed query over g.
func (ev Evaluator) Run(ctx context.Context, g *graph.Graph, p *Query, inputs []any, opt query.Options) (*query.Result, error) {
	now := time.Now
	if ev.Now != nil {
		now = ev.Now
	}
	if inputs == nil {
		inputs = p.inputs
	}
	maxRows := ev.MaxRows
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	d := newDB(g, opt.Shows)
	r := &run{ctx: ctx, d: d, maxRows: maxRows, maxStrBytes: ev.MaxStrBytes}
	if r.maxStrBytes <= 0 {
		r.maxStrBytes = DefaultMaxStrBytes
	}
	start, err := r.bindInputs(p, inputs, now())
	if err != nil {
		return nil, err
	}
	res, err := r.eval(p.where, start)
	if err != nil {
		return nil, err
	}
	return r.result(p, res, opt)
}

// bindInputs makes the starting relation from :in and the inputs.
func (r *run) bindInputs(p *Query, inputs []any, now time.Time) (*rel, error) {
	want := 0
	for _, b := range p.in {
		if b.kind != inSrc {
			want++
		}
	}
	if len(inputs) != want {
		if !p.hasIn && len(inputs) > 0 {
			return nil, invalid("the query has inputs but no :in")
		}
		return nil, invalid(":in takes %d input(s), %d given", want, len(inputs)).With("inputs", len(inputs))
	}
	out := newRel(nil)
	out.rows = [][]Val{{}}
	i := 0
	for _, b := range p.in {
		if b.kind == inSrc {
			continue
		}
		x, err := resolveInput(inputs[i], now)
		i++
		if err != nil {
			return nil, err
		}
		var vals []Val
		if b.kind == inColl {
			s, ok := x.(*setVal)
			if !ok {
				return nil, invalid("the input of [%s ...] must be a collection", b.v)
			}
			for _, k := range sortedKeys(s) {
				vals = append(vals, r.d.intern(k))
			}
		} else {
			vals = []Val{r.d.intern(x)}
		}
		next := newRel(append(append([]string{}, out.vars...), b.v))
		for _, row := range out.rows {
			for _, v := range vals {
				next.rows = append(next.rows, append(append([]Val{}, row...), v))
				if err := r.check(len(next.rows)); err != nil {
					return nil, err
				}
			}
		}
		out = next
	}
	return out, nil
}

func sortedKeys(s *setVal) []any {
	out := make([]any, 0, len(s.m))
	for k := range s.m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return compareAny(out[i], out[j]) < 0 })
	return out
}

var relDay = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[+-][0-9]{1,5}[dwmy]$`) })

// resolveInput turns an input into a value: Logseq's keywords :today,
// :yesterday, :tomorrow and :-7d / :+2w style offsets become journal days
// (yyyyMMdd); a "[[page]]" string becomes the page's lower-cased name.
func resolveInput(x any, now time.Time) (any, error) {
	switch v := x.(type) {
	case edn.Keyword:
		k := string(v)
		switch {
		case k == "today" || k == "yesterday" || k == "tomorrow" || relDay().MatchString(k):
			t, ok := query.RelativeDay(k, now)
			if !ok {
				return nil, invalid("cannot read the input :%s as a day", k)
			}
			return int64(t.Year()*10000 + int(t.Month())*100 + t.Day()), nil
		case k == "current-page" || k == "query-page" || k == "current-block" || k == "parent-block":
			return nil, unsupported("input :"+k, "the input :%s is not supported: a query run through loci has no current page or block", k)
		case strings.HasSuffix(k, "-ms"):
			return nil, unsupported("input :"+k, "the input :%s is not supported (loci keeps no block timestamps)", k)
		}
		return v, nil
	case string:
		if len(v) > 4 && strings.HasPrefix(v, "[[") && strings.HasSuffix(v, "]]") {
			return strings.ToLower(strings.TrimSpace(v[2 : len(v)-2])), nil
		}
		return v, nil
	}
	return constant(x)
}

// FromJSON converts the op's JSON inputs to EDN-like values: a string
// starting with ':' is a keyword (":today"), whole numbers are integers,
// arrays are collections.
func FromJSON(in []any) ([]any, error) {
	out := make([]any, len(in))
	for i, x := range in {
		v, err := fromJSON(x, 0)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func fromJSON(x any, depth int) (any, error) {
	switch v := x.(type) {
	case string:
		if len(v) > 1 && v[0] == ':' && !strings.ContainsAny(v, " \t\n") {
			return edn.Keyword(v[1:]), nil
		}
		return v, nil
	case float64:
		if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
			return int64(v), nil
		}
		return v, nil
	case bool:
		return v, nil
	case []any:
		if depth > 0 {
			return nil, invalid("inputs nest one level at most")
		}
		m := map[any]bool{}
		for _, e := range v {
			c, err := fromJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			m[c] = true
		}
		return m, nil
	}
	return nil, invalid("an input is a string, number, boolean or array, not %T", x)
}

// check is the cancellation and size check made while rows grow.
func (r *run) check(n int) error {
	if n > r.maxRows {
		return unsupported(fmt.Sprintf("more than %d intermediate rows", r.maxRows),
			"the query matches more than %d intermediate rows: narrow it (add a constant or reorder joins)", r.maxRows).With("max_rows", r.maxRows)
	}
	if r.steps++; r.steps%4096 == 0 {
		return query.Check(r.ctx)
	}
	return nil
}

// eval joins the clauses to start, picking the cheapest ready clause at
// each step.
func (r *run) eval(cs []*clause, start *rel) (*rel, error) {
	cur := start
	left := append([]*clause{}, cs...)
	for len(left) > 0 {
		if err := query.Check(r.ctx); err != nil {
			return nil, err
		}
		i := r.pick(left, cur)
		if i < 0 {
			return nil, invalid("a function's arguments are not bound: %s", left[0].text)
		}
		c := left[i]
		left = append(left[:i], left[i+1:]...)
		var err error
		switch c.kind {
		case cPattern:
			cur, err = r.pattern(c, cur)
		case cFn:
			cur, err = r.fn(c, cur)
		case cNot:
			cur, err = r.not(c, cur)
		case cOr:
			cur, err = r.or(c, cur)
		}
		if err != nil {
			return nil, err
		}
		if len(cur.rows) == 0 {
			// Nothing can match; still bind the variables the rest would.
			return r.empty(cur, left), nil
		}
	}
	return cur, nil
}

// empty is an empty relation with every variable the clauses would bind.
func (r *run) empty(cur *rel, left []*clause) *rel {
	vars := append([]string{}, cur.vars...)
	have := map[string]bool{}
	for _, v := range vars {
		have[v] = true
	}
	for _, c := range left {
		var add []string
		switch c.kind {
		case cPattern:
			add = c.vars
		case cFn:
			if c.out.kind == tVar {
				add = []string{c.out.name}
			}
		case cOr:
			add = c.join
		}
		for _, v := range add {
			if !have[v] {
				have[v] = true
				vars = append(vars, v)
			}
		}
	}
	return newRel(vars)
}

// pick returns the index of the next clause to run, -1 when none can.
func (r *run) pick(left []*clause, cur *rel) int {
	// Variables a positive clause still to run may bind.
	future := map[string]bool{}
	for _, c := range left {
		switch c.kind {
		case cPattern, cOr:
			for _, v := range c.vars {
				if !cur.bound(v) {
					future[v] = true
				}
			}
		case cFn:
			if c.out.kind == tVar && !cur.bound(c.out.name) {
				future[c.out.name] = true
			}
		}
	}
	best, bestCost := -1, 0.0
	n := float64(len(cur.rows))
	for i, c := range left {
		var cost float64
		switch c.kind {
		case cFn:
			if !argsBoundRel(c, cur) {
				continue
			}
			cost = 0
		case cNot:
			ready := true
			for _, v := range c.join {
				if !cur.bound(v) && future[v] {
					ready = false
				}
			}
			if !ready {
				continue
			}
			cost = 1
		case cPattern:
			cost = 2 + r.patternCost(c, cur, n)
		case cOr:
			shared := false
			for _, v := range c.join {
				if cur.bound(v) {
					shared = true
				}
			}
			cost = 3 + n*4
			if !shared {
				cost = 1e12 + n
			}
		}
		if best < 0 || cost < bestCost {
			best, bestCost = i, cost
		}
	}
	return best
}

func argsBoundRel(c *clause, cur *rel) bool {
	for _, a := range c.args {
		if a.kind == tVar && !cur.bound(a.name) {
			return false
		}
	}
	return true
}

// patternCost estimates the rows a pattern produces.
func (r *run) patternCost(c *clause, cur *rel, n float64) float64 {
	ix := r.d.attr(c.attr)
	known := func(t term) bool { return t.kind == tConst || t.kind == tVar && cur.bound(t.name) }
	facts := float64(ix.n)
	ents := float64(len(ix.ents))
	switch {
	case known(c.e):
		return n * (facts/(ents+1) + 0.01)
	case c.v.kind == tConst:
		if v, ok := r.d.constVal(c.v.val); ok {
			return n * float64(len(ix.byV[v]))
		}
		return 0
	case known(c.v):
		return n * (facts/(float64(len(ix.vals))+1) + 0.01)
	}
	if n > 1 && (len(c.vars) == 0 || !anyBound(c.vars, cur)) {
		return n * facts * 10 // a cross product: last
	}
	return n * facts
}

func anyBound(vs []string, cur *rel) bool {
	for _, v := range vs {
		if cur.bound(v) {
			return true
		}
	}
	return false
}

// pattern joins a data pattern.
func (r *run) pattern(c *clause, cur *rel) (*rel, error) {
	ix := r.d.attr(c.attr)
	vars := append([]string{}, cur.vars...)
	eCol, vCol := -1, -1 // columns of e and v when already bound
	eNew, vNew := -1, -1 // columns they get when they bind here
	if c.e.kind == tVar {
		if i, ok := cur.col[c.e.name]; ok {
			eCol = i
		} else {
			eNew = len(vars)
			vars = append(vars, c.e.name)
		}
	}
	if c.v.kind == tVar {
		if i, ok := cur.col[c.v.name]; ok {
			vCol = i
		} else if c.e.kind == tVar && c.v.name == c.e.name {
			vCol = -2 // the same variable as e
		} else {
			vNew = len(vars)
			vars = append(vars, c.v.name)
		}
	}
	out := newRel(vars)
	var eConst, vConst Val = -1, -1
	if c.e.kind == tConst {
		id, ok := r.d.entityConst(c.e.val)
		if !ok {
			return out, nil
		}
		eConst = id
	}
	if c.v.kind == tConst {
		id, ok := r.d.constVal(c.v.val)
		if !ok {
			return out, nil
		}
		vConst = id
	}
	emit := func(row []Val, e, v Val) error {
		if vCol == -2 && e != v {
			return nil
		}
		nr := make([]Val, len(vars))
		copy(nr, row)
		if eNew >= 0 {
			nr[eNew] = e
		}
		if vNew >= 0 {
			nr[vNew] = v
		}
		out.rows = append(out.rows, nr)
		return r.check(len(out.rows))
	}
	vBlank := c.v.kind == tBlank
	for _, row := range cur.rows {
		e := eConst
		if eCol >= 0 {
			e = row[eCol]
		}
		v := vConst
		if vCol >= 0 {
			v = row[vCol]
		}
		switch {
		case e >= 0:
			if int(e) >= len(ix.byE) {
				continue
			}
			vs := ix.byE[e]
			if vBlank {
				if len(vs) > 0 {
					if err := emit(row, e, -1); err != nil {
						return nil, err
					}
				}
				continue
			}
			for _, x := range vs {
				if v >= 0 && x != v {
					continue
				}
				if err := emit(row, e, x); err != nil {
					return nil, err
				}
			}
		case v >= 0:
			for _, x := range ix.byV[v] {
				if err := emit(row, x, v); err != nil {
					return nil, err
				}
			}
		case vBlank:
			for _, x := range ix.ents {
				if err := emit(row, x, -1); err != nil {
					return nil, err
				}
			}
		case c.e.kind == tBlank:
			for _, x := range ix.vals {
				if err := emit(row, -1, x); err != nil {
					return nil, err
				}
			}
		default:
			for _, x := range ix.ents {
				for _, y := range ix.byE[x] {
					if err := emit(row, x, y); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return out, nil
}

// fn runs a predicate (a filter) or a binding function.
func (r *run) fn(c *clause, cur *rel) (*rel, error) {
	vars := cur.vars
	outCol, newCol := -1, false
	if c.out.kind == tVar {
		if i, ok := cur.col[c.out.name]; ok {
			outCol = i
		} else {
			vars = append(append([]string{}, vars...), c.out.name)
			outCol, newCol = len(vars)-1, true
		}
	}
	out := newRel(vars)
	args := make([]any, len(c.args))
	for _, row := range cur.rows {
		for i, a := range c.args {
			switch a.kind {
			case tVar:
				args[i] = r.d.vals[row[cur.col[a.name]]]
			case tConst:
				args[i] = a.val
				if lr, ok := a.val.(*lookupRef); ok {
					args[i] = nil
					if id, ok := r.d.resolveRef(lr); ok {
						args[i] = r.d.ents[id]
					}
				}
			default:
				args[i] = nil
			}
		}
		res, err := r.d.call(c.fn, args)
		if err != nil {
			return nil, err
		}
		if res == nil {
			continue
		}
		switch {
		case c.pred || c.out.kind == tBlank:
			if res == false {
				continue
			}
			out.rows = append(out.rows, row)
		case newCol:
			if s, ok := res.(string); ok {
				if r.strBytes += len(s); r.strBytes > r.maxStrBytes {
					return nil, unsupported("too many computed strings", "the query's functions made more than %d bytes of strings: narrow it", r.maxStrBytes).With("max_bytes", r.maxStrBytes)
				}
			}
			nr := make([]Val, len(vars))
			copy(nr, row)
			nr[outCol] = r.d.intern(res)
			out.rows = append(out.rows, nr)
		default:
			if id, ok := r.d.lookup(res); ok && id == row[outCol] {
				out.rows = append(out.rows, row)
			}
		}
		if err := r.check(len(out.rows)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sub evaluates clauses for the distinct values of the join variables
// already bound, and returns the result projected on join (those the
// clauses bind).
func (r *run) sub(cs []*clause, join []string, cur *rel) (*rel, []string, error) {
	var shared []string
	for _, v := range join {
		if cur.bound(v) {
			shared = append(shared, v)
		}
	}
	start := project(cur, shared)
	res, err := r.eval(cs, start)
	if err != nil {
		return nil, nil, err
	}
	return res, shared, nil
}

// project keeps the columns vars (all bound in r), distinct rows.
func project(r *rel, vars []string) *rel {
	out := newRel(vars)
	idx := make([]int, len(vars))
	for i, v := range vars {
		idx[i] = r.col[v]
	}
	seen := map[string]bool{}
	for _, row := range r.rows {
		nr := make([]Val, len(vars))
		for i, c := range idx {
			nr[i] = row[c]
		}
		k := key(nr)
		if !seen[k] {
			seen[k] = true
			out.rows = append(out.rows, nr)
		}
	}
	return out
}

// key encodes values as a map key.
func key(vals []Val) string {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return string(b)
}

func keyOf(row []Val, cols []int, buf []Val) string {
	buf = buf[:0]
	for _, c := range cols {
		buf = append(buf, row[c])
	}
	return key(buf)
}

// not removes the rows for which the body matches.
func (r *run) not(c *clause, cur *rel) (*rel, error) {
	res, shared, err := r.sub(c.body, c.join, cur)
	if err != nil {
		return nil, err
	}
	hit := map[string]bool{}
	rc := cols(res, shared)
	buf := make([]Val, 0, len(shared))
	for _, row := range res.rows {
		hit[keyOf(row, rc, buf)] = true
	}
	cc := cols(cur, shared)
	out := newRel(cur.vars)
	for _, row := range cur.rows {
		if !hit[keyOf(row, cc, buf)] {
			out.rows = append(out.rows, row)
		}
	}
	return out, nil
}

func cols(r *rel, vars []string) []int {
	out := make([]int, len(vars))
	for i, v := range vars {
		out[i] = r.col[v]
	}
	return out
}

// or joins the union of its branches on its join variables.
func (r *run) or(c *clause, cur *rel) (*rel, error) {
	join := append([]string{}, c.join...)
	if !c.explicit { // variables bound outside are joined too
		have := map[string]bool{}
		for _, v := range join {
			have[v] = true
		}
		for _, v := range c.vars {
			if !have[v] && cur.bound(v) {
				join = append(join, v)
			}
		}
	}
	var newVars []string
	for _, v := range join {
		if !cur.bound(v) {
			newVars = append(newVars, v)
		}
	}
	var shared []string
	var union *rel
	seen := map[string]bool{}
	for _, br := range c.branches {
		res, sh, err := r.sub(br, join, cur)
		if err != nil {
			return nil, err
		}
		shared = sh
		all := append(append([]string{}, sh...), newVars...)
		for _, v := range all {
			if !res.bound(v) {
				if len(res.rows) == 0 {
					res.col[v] = -1
					continue
				}
				return nil, invalid("%s: a branch does not bind %s", c.text, v)
			}
		}
		if union == nil {
			union = newRel(all)
		}
		if len(res.rows) == 0 {
			continue
		}
		p := project(res, all)
		for _, row := range p.rows {
			k := key(row)
			if !seen[k] {
				seen[k] = true
				union.rows = append(union.rows, row)
			}
		}
		if err := r.check(len(union.rows)); err != nil {
			return nil, err
		}
	}
	// Hash join cur ⋈ union on shared.
	byKey := map[string][][]Val{}
	buf := make([]Val, 0, len(shared))
	uc := cols(union, shared)
	for _, row := range union.rows {
		k := keyOf(row, uc, buf)
		byKey[k] = append(byKey[k], row[len(shared):])
	}
	out := newRel(append(append([]string{}, cur.vars...), newVars...))
	cc := cols(cur, shared)
	for _, row := range cur.rows {
		for _, ext := range byKey[keyOf(row, cc, buf)] {
			nr := make([]Val, 0, len(out.vars))
			nr = append(append(nr, row...), ext...)
			out.rows = append(out.rows, nr)
			if err := r.check(len(out.rows)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// result projects the relation on :find, aggregates, orders and limits.
func (r *run) result(p *Query, res *rel, opt query.Options) (*query.Result, error) {
	out := &query.Result{}
	for _, f := range p.find {
		out.Columns = append(out.Columns, f.name)
	}
	hasAgg := false
	for _, f := range p.find {
		if f.kind == fAgg {
			hasAgg = true
		}
	}
	var vars []string
	seen := map[string]bool{}
	for _, f := range p.find {
		if !seen[f.v] {
			seen[f.v] = true
			vars = append(vars, f.v)
		}
	}
	for _, v := range p.with {
		if !seen[v] {
			seen[v] = true
			vars = append(vars, v)
		}
	}
	for _, v := range vars {
		if !res.bound(v) {
			return out, nil // no rows (evaluation stopped early)
		}
	}
	tuples := project(res, vars).rows
	col := map[string]int{}
	for i, v := range vars {
		col[v] = i
	}
	type outRow struct {
		vals []any // raw values per find element
		loc  *entity
	}
	var rows []outRow
	if !hasAgg {
		for _, t := range tuples {
			or := outRow{vals: make([]any, len(p.find))}
			for i, f := range p.find {
				or.vals[i] = r.d.vals[t[col[f.v]]]
			}
			rows = append(rows, or)
		}
	} else {
		groups := map[string]int{}
		var members [][][]Val
		var gcols []int
		for _, f := range p.find {
			if f.kind != fAgg {
				gcols = append(gcols, col[f.v])
			}
		}
		buf := make([]Val, 0, len(gcols))
		for _, t := range tuples {
			k := keyOf(t, gcols, buf)
			g, ok := groups[k]
			if !ok {
				g = len(members)
				groups[k] = g
				members = append(members, nil)
			}
			members[g] = append(members[g], t)
		}
		for _, m := range members {
			or := outRow{vals: make([]any, len(p.find))}
			for i, f := range p.find {
				if f.kind != fAgg {
					or.vals[i] = r.d.vals[m[0][col[f.v]]]
					continue
				}
				or.vals[i] = r.aggregate(f.agg, m, col[f.v])
			}
			rows = append(rows, or)
		}
	}
	// Location: the first block entity of the row, else the first page.
	for i := range rows {
		for _, x := range rows[i].vals {
			if e, ok := x.(*entity); ok && (rows[i].loc == nil || rows[i].loc.block == nil && e.block != nil) {
				rows[i].loc = e
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i].loc, rows[j].loc
		pa, pb, la, lb := "", "", 0, 0
		if a != nil {
			pa, la = a.page.Path, lineOf(a)
		}
		if b != nil {
			pb, lb = b.page.Path, lineOf(b)
		}
		if pa != pb {
			return pa < pb
		}
		if la != lb {
			return la < lb
		}
		for k := range rows[i].vals {
			if c := compareAny(rows[i].vals[k], rows[j].vals[k]); c != 0 {
				return c < 0
			}
		}
		return false
	})
	limit := opt.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	out.Rows = []query.Row{}
	for _, or := range rows {
		if len(out.Rows) == limit {
			out.Truncated = true
			break
		}
		qr := query.Row{Values: make([]any, len(p.find))}
		if e := or.loc; e != nil {
			qr.Path = e.page.Path
			if e.block != nil {
				qr.Line, qr.Block = e.block.Line, e.block.UUID
			}
		}
		for i, f := range p.find {
			if f.kind == fPull {
				if e, ok := or.vals[i].(*entity); ok {
					qr.Values[i] = r.d.pull(e, f.pull)
					continue
				}
			}
			qr.Values[i] = r.d.display(or.vals[i])
		}
		out.Rows = append(out.Rows, qr)
	}
	return out, query.Check(r.ctx)
}

func lineOf(e *entity) int {
	if e.block != nil {
		return e.block.Line
	}
	return 0
}

func (r *run) aggregate(agg string, m [][]Val, c int) any {
	switch agg {
	case "count":
		return int64(len(m))
	case "count-distinct":
		s := map[Val]bool{}
		for _, t := range m {
			s[t[c]] = true
		}
		return int64(len(s))
	}
	var best any
	sum, n, allInt := 0.0, 0, true
	var isum int64
	for _, t := range m {
		x := r.d.vals[t[c]]
		switch agg {
		case "min", "max":
			if best == nil {
				best = x
				continue
			}
			if cmp, ok := compare(x, best); ok && (agg == "min" && cmp < 0 || agg == "max" && cmp > 0) {
				best = x
			}
		default:
			f, ok := num(x)
			if !ok {
				continue
			}
			if i, isInt := x.(int64); isInt {
				isum += i
			} else {
				allInt = false
			}
			sum += f
			n++
		}
	}
	switch agg {
	case "min", "max":
		return best
	case "sum":
		if allInt {
			return isum
		}
		return sum
	}
	if n == 0 {
		return nil
	}
	return sum / float64(n)
}

// compareAny orders values of any kind deterministically: by kind, then
// by value.
func compareAny(a, b any) int {
	ka, kb := kindRank(a), kindRank(b)
	if ka != kb {
		return ka - kb
	}
	if c, ok := compare(a, b); ok {
		return c
	}
	switch x := a.(type) {
	case *entity:
		return int(x.id) - int(b.(*entity).id)
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	}
	return strings.Compare(sortText(a), sortText(b))
}

// sortText is a deterministic text of a value (fmt prints maps with
// sorted keys).
func sortText(a any) string {
	switch x := a.(type) {
	case *propMap:
		return fmt.Sprint(x.m)
	case *setVal:
		return fmt.Sprint(x.m)
	case *regexp.Regexp:
		return x.String()
	}
	return fmt.Sprint(a)
}

func kindRank(a any) int {
	switch a.(type) {
	case nil:
		return 0
	case bool:
		return 1
	case int64, float64:
		return 2
	case string:
		return 3
	case edn.Keyword:
		return 4
	case *entity:
		return 5
	}
	return 6
}
