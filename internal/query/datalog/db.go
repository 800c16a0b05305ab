package datalog

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"olympos.io/encoding/edn"

	"github.com/loci-dev/loci/internal/query/graph"
)

// Val is an interned value: the entities are 0..len(ents)-1, every other
// value (string, int64, float64, bool, edn.Keyword, *propMap, *setVal,
// *regexp.Regexp) gets the next free number the first time it is seen.
type Val int32

// entity is a page or a block.
type entity struct {
	id    Val
	page  *graph.Page  // the page, or the block's page
	block *graph.Block // nil for a page
}

// propMap is a :block/properties value: normalized key → string, int64,
// float64 or bool.
type propMap struct{ m map[string]any }

// setVal is a collection: a #{...} or [...] literal, or an input; or a
// property value holding page references (names: see propValue).
type setVal struct {
	m map[any]bool
	// A set of page names: m holds them lower-cased, shown as first
	// written (sorted), key is the lower-cased names sorted and joined
	// (equal sets intern to one value); membership and equality ignore
	// case, as page names do.
	names bool
	shown []string
	key   string
}

// attrDef says where an attribute applies and how its values are found.
type attrDef struct {
	page, block bool
	ref         bool // values are entities
	many        bool // several values per entity
	vals        func(d *db, e *entity, emit func(any))
}

var attrs map[string]attrDef

func init() {
	attrs = map[string]attrDef{
		"block/content": {block: true, vals: func(d *db, e *entity, emit func(any)) { emit(e.block.Content) }},
		"block/marker": {block: true, vals: func(d *db, e *entity, emit func(any)) {
			if m := marker(e.block.Content); m != "" {
				emit(m)
			}
		}},
		"block/priority": {block: true, vals: func(d *db, e *entity, emit func(any)) {
			if p := priority(e.block.Content); p != "" {
				emit(p)
			}
		}},
		"block/properties": {page: true, block: true, vals: func(d *db, e *entity, emit func(any)) {
			if pm := d.props(e); pm != nil {
				emit(pm)
			}
		}},
		"block/page": {block: true, ref: true, vals: func(d *db, e *entity, emit func(any)) { emit(d.ents[d.pageEnt[e.page]]) }},
		"block/parent": {block: true, ref: true, vals: func(d *db, e *entity, emit func(any)) {
			if par := e.block.Parent; par != nil {
				emit(d.ents[d.blockEnt[par]])
			} else {
				emit(d.ents[d.pageEnt[e.page]])
			}
		}},
		"block/refs": {block: true, ref: true, many: true, vals: func(d *db, e *entity, emit func(any)) {
			for _, p := range d.refs(e.block) {
				emit(d.ents[p])
			}
		}},
		"block/path-refs": {block: true, ref: true, many: true, vals: func(d *db, e *entity, emit func(any)) {
			seen := map[Val]bool{d.pageEnt[e.page]: true}
			emit(d.ents[d.pageEnt[e.page]])
			for b := e.block; b != nil; b = b.Parent {
				for _, p := range d.refs(b) {
					if !seen[p] {
						seen[p] = true
						emit(d.ents[p])
					}
				}
			}
		}},
		"block/uuid": {block: true, vals: func(d *db, e *entity, emit func(any)) {
			if e.block.UUID != "" {
				emit(e.block.UUID)
			}
		}},
		"block/scheduled":     {block: true, vals: func(d *db, e *entity, emit func(any)) { dayOf(e.block.Content, "SCHEDULED", emit) }},
		"block/deadline":      {block: true, vals: func(d *db, e *entity, emit func(any)) { dayOf(e.block.Content, "DEADLINE", emit) }},
		"block/name":          {page: true, vals: func(d *db, e *entity, emit func(any)) { emit(strings.ToLower(e.page.Title)) }},
		"block/original-name": {page: true, vals: func(d *db, e *entity, emit func(any)) { emit(e.page.Title) }},
		"block/journal?":      {page: true, vals: func(d *db, e *entity, emit func(any)) { emit(e.page.Kind == "journal" && !e.page.Day.IsZero()) }},
		"block/journal-day": {page: true, vals: func(d *db, e *entity, emit func(any)) {
			if day := e.page.Day; !day.IsZero() {
				emit(int64(day.Year()*10000 + int(day.Month())*100 + day.Day()))
			}
		}},
		"block/tags": {page: true, ref: true, many: true, vals: func(d *db, e *entity, emit func(any)) {
			tags := make([]string, 0, len(e.page.Tags))
			for t := range e.page.Tags {
				tags = append(tags, t)
			}
			for _, p := range d.resolveTags(tags) {
				emit(d.ents[p])
			}
		}},
		"block/namespace": {page: true, ref: true, vals: func(d *db, e *entity, emit func(any)) {
			if i := strings.LastIndex(e.page.Title, "/"); i > 0 {
				for _, p := range d.resolve([]string{e.page.Title[:i]}) {
					emit(d.ents[p])
				}
			}
		}},
	}
}

var markers = map[string]bool{"TODO": true, "DOING": true, "DONE": true, "LATER": true, "NOW": true, "WAITING": true, "WAIT": true, "CANCELED": true, "CANCELLED": true, "IN-PROGRESS": true}

// marker is the block's task marker: its first word when that is one.
func marker(content string) string {
	w, _, _ := strings.Cut(content, " ")
	w, _, _ = strings.Cut(w, "\n")
	if markers[w] {
		return w
	}
	return ""
}

// priority is A, B or C from [#A] in the block's first line.
func priority(content string) string {
	first, _, _ := strings.Cut(content, "\n")
	for _, p := range []string{"A", "B", "C"} {
		if strings.Contains(first, "[#"+p+"]") {
			return p
		}
	}
	return ""
}

var dayRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*(SCHEDULED|DEADLINE): <(\d{4})-(\d{2})-(\d{2})`)
})

// dayOf emits the yyyyMMdd day of the block's SCHEDULED or DEADLINE line.
func dayOf(content, which string, emit func(any)) {
	if !strings.Contains(content, which) {
		return
	}
	for _, m := range dayRe().FindAllStringSubmatch(content, -1) {
		if m[1] == which {
			n, _ := strconv.ParseInt(m[2]+m[3]+m[4], 10, 64)
			emit(n)
			return
		}
	}
}

// normKey normalizes a property key as Logseq does.
func normKey(k string) string { return graph.NormKey(k) }

// propValue reads a property value as Logseq's file graphs store it
// (graph-parser's parse-property): a value that references pages
// ([[x]], #x, #[[x y]]) is the set of their names, as written; so is
// every comma-separated item of tags:: and alias::. A value in double
// quotes, or of a key Logseq leaves unparsed (title::, filters::, ...),
// stays text. Otherwise a number when it reads as one (Logseq reads only
// integers; loci decimals too), a bool for true/false, else the text.
func propValue(key, s string) any {
	t := strings.TrimSpace(s)
	if !unparsedProps[key] && !(len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"') {
		if names := refNames(t, key == "tags" || key == "alias"); len(names) > 0 {
			return nameSet(names)
		}
	}
	switch t {
	case "true":
		return true
	case "false":
		return false
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil && strings.ContainsAny(t, "0123456789") && !strings.ContainsAny(t, "xXpPnN") {
		return f
	}
	return t
}

// unparsedProps are the built-in properties whose values Logseq keeps as
// text (never page references).
var unparsedProps = map[string]bool{"title": true, "filters": true, "icon": true, "heading": true,
	"collapsed": true, "created-at": true, "updated-at": true, "last-modified-at": true,
	"query-table": true, "query-properties": true, "query-sort-by": true, "query-sort-desc": true,
	"ls-type": true, "hl-type": true, "hl-page": true, "hl-stamp": true, "hl-color": true,
	"logseq.macro-name": true, "logseq.macro-arguments": true, "logseq.order-list-type": true}

// refNames are the page names a property value references, as written:
// [[x]] (#[[x]]), and #tag (up to a space or comma, without a trailing
// . ! or ,); with commas, every other comma-separated item too (a
// reference or quoted text ends an item). Text in double quotes is
// skipped.
func refNames(v string, commas bool) []string {
	var out []string
	var plain strings.Builder
	for i := 0; i < len(v); {
		switch {
		case v[i] == '"':
			j := strings.IndexByte(v[i+1:], '"')
			if j < 0 {
				plain.WriteString(v[i:])
				i = len(v)
				continue
			}
			i += j + 2
			plain.WriteByte(',')
		case strings.HasPrefix(v[i:], "[["), strings.HasPrefix(v[i:], "#[["):
			start := i
			if v[i] == '#' {
				i++
			}
			j := strings.Index(v[i+2:], "]]")
			if j < 0 { // unclosed: plain text from the '#' on, as written
				plain.WriteString(v[start:])
				i = len(v)
				continue
			}
			if n := strings.TrimSpace(v[i+2 : i+2+j]); n != "" {
				out = append(out, n)
			}
			i += j + 4
			plain.WriteByte(',')
		case v[i] == '#' && (i == 0 || v[i-1] == ' ' || v[i-1] == ',' || v[i-1] == '\t'):
			j := i + 1
			for j < len(v) {
				r, size := utf8.DecodeRuneInString(v[j:])
				if unicode.IsSpace(r) || r == ',' {
					break
				}
				j += size
			}
			n := strings.TrimRight(v[i+1:j], ".!,")
			if n != "" {
				out = append(out, n)
				plain.WriteByte(',')
			} else {
				plain.WriteString(v[i:j])
			}
			i = j
		default:
			plain.WriteByte(v[i])
			i++
		}
	}
	if commas {
		for _, it := range strings.FieldsFunc(plain.String(), func(r rune) bool { return r == ',' || r == '，' }) {
			if it = strings.TrimSpace(it); it != "" {
				out = append(out, it)
			}
		}
	}
	return out
}

// nameSet is the set of page names (see setVal.names).
func nameSet(names []string) *setVal {
	s := &setVal{m: make(map[any]bool, len(names)), names: true}
	keys := make([]string, 0, len(names))
	for _, n := range names {
		k := strings.ToLower(n)
		if !s.m[k] {
			s.m[k] = true
			s.shown = append(s.shown, n)
			keys = append(keys, k)
		}
	}
	sort.Strings(s.shown)
	sort.Strings(keys)
	s.key = strings.Join(keys, "\x00")
	return s
}

// attrIdx holds one attribute's facts.
type attrIdx struct {
	byE  [][]Val       // entity → values
	byV  map[Val][]Val // value → entities
	ents []Val         // entities with at least one value, in order
	vals []Val         // distinct values, first-seen order
	n    int           // facts
}

// db is the fact base of one query: the visible pages and blocks of the
// graph, their attributes built on first use.
type db struct {
	g        *graph.Graph
	ents     []*entity
	pageEnt  map[*graph.Page]Val
	blockEnt map[*graph.Block]Val
	names    map[string][]Val // lower-cased title or alias → visible pages
	// refOnly maps a lower-cased page name that visible blocks or pages
	// reference, and no visible page bears, to its page entity (a page
	// that exists only by reference, as Logseq makes one for every
	// [[name]] and #tag).
	refOnly  map[string]Val
	vals     []any
	ids      map[any]Val
	setIDs   map[string]Val // name sets by key
	idx      map[string]*attrIdx
	propMaps map[Val]*propMap
	refMemo  map[*graph.Block][]Val
	regexps  map[string]*regexp.Regexp // compiled re-patterns
}

// newDB builds the entities of the pages shows allows.
func newDB(g *graph.Graph, shows func(string) bool) *db {
	d := &db{g: g, pageEnt: map[*graph.Page]Val{}, blockEnt: map[*graph.Block]Val{}, names: map[string][]Val{},
		ids: map[any]Val{}, setIDs: map[string]Val{}, idx: map[string]*attrIdx{}, propMaps: map[Val]*propMap{}, refMemo: map[*graph.Block][]Val{},
		regexps: map[string]*regexp.Regexp{}}
	for _, p := range g.Pages {
		if !shows(p.Path) {
			continue
		}
		e := &entity{id: Val(len(d.ents)), page: p}
		d.ents = append(d.ents, e)
		d.pageEnt[p] = e.id
	}
	for _, p := range g.Pages {
		if _, ok := d.pageEnt[p]; !ok {
			continue
		}
		for _, b := range p.Blocks {
			e := &entity{id: Val(len(d.ents)), page: p, block: b}
			d.ents = append(d.ents, e)
			d.blockEnt[b] = e.id
		}
	}
	for name, ps := range g.Names {
		for _, p := range ps {
			if id, ok := d.pageEnt[p]; ok {
				d.names[name] = append(d.names[name], id)
			}
		}
	}
	d.addRefOnly()
	d.vals = make([]any, len(d.ents), len(d.ents)+1024)
	for i, e := range d.ents {
		d.vals[i] = e
	}
	return d
}

// addRefOnly makes a page entity for every name the visible blocks and
// pages reference that no visible page bears (its file absent, or hidden
// by the read fence: the two look alike). Its name is as first written
// by a visible note; it has no path, no blocks and no properties, and is
// a journal when the name reads as a journal title in the graph's title
// format. A name referenced only from hidden notes has no entity.
func (d *db) addRefOnly() {
	d.refOnly = map[string]Val{}
	shows := func(p *graph.Page) bool { _, ok := d.pageEnt[p]; return ok }
	for _, u := range d.g.Refs {
		if len(d.names[u.Key]) > 0 {
			continue
		}
		written, ok := u.FirstWritten(shows)
		if !ok {
			continue
		}
		p := u.Page // the shared page, unless the fence changes its spelling
		if written != p.Title {
			cp := *p
			cp.Title = written
			p = &cp
		}
		e := &entity{id: Val(len(d.ents)), page: p}
		d.ents = append(d.ents, e)
		d.pageEnt[p] = e.id
		d.refOnly[u.Key] = e.id
	}
}

// intern returns x's number, adding it when new.
func (d *db) intern(x any) Val {
	if e, ok := x.(*entity); ok {
		return e.id
	}
	if s, ok := x.(*setVal); ok && s.names {
		if id, ok := d.setIDs[s.key]; ok {
			return id
		}
		id := Val(len(d.vals))
		d.vals = append(d.vals, x)
		d.setIDs[s.key] = id
		return id
	}
	if id, ok := d.ids[x]; ok {
		return id
	}
	id := Val(len(d.vals))
	d.vals = append(d.vals, x)
	d.ids[x] = id
	return id
}

// lookup returns x's number when x was seen.
func (d *db) lookup(x any) (Val, bool) {
	if e, ok := x.(*entity); ok {
		return e.id, true
	}
	if s, ok := x.(*setVal); ok && s.names {
		id, ok := d.setIDs[s.key]
		return id, ok
	}
	id, ok := d.ids[x]
	return id, ok
}

// resolveRef finds a lookup ref's entity.
func (d *db) resolveRef(lr *lookupRef) (Val, bool) {
	ix := d.attr(lr.attr) // interns the attribute's values first
	id, ok := d.lookup(lr.val)
	if !ok {
		return 0, false
	}
	ents := ix.byV[id]
	if len(ents) == 0 {
		return 0, false
	}
	return ents[0], true
}

// entityConst reads a constant in a pattern's entity position: a lookup
// ref, or loci's entity number.
func (d *db) entityConst(x any) (Val, bool) {
	switch v := x.(type) {
	case *lookupRef:
		return d.resolveRef(v)
	case int64:
		if v >= 0 && v < int64(len(d.ents)) {
			return Val(v), true
		}
	}
	return 0, false
}

// constVal reads a constant in a pattern's value position.
func (d *db) constVal(x any) (Val, bool) {
	if lr, ok := x.(*lookupRef); ok {
		return d.resolveRef(lr)
	}
	return d.lookup(x)
}

// attr returns the facts of a (canonical) attribute, built on first use.
func (d *db) attr(name string) *attrIdx {
	if ix := d.idx[name]; ix != nil {
		return ix
	}
	def := attrs[name]
	ix := &attrIdx{byE: make([][]Val, len(d.ents)), byV: map[Val][]Val{}}
	if name == "db/id" {
		d.idx[name] = ix
		return ix
	}
	for _, e := range d.ents {
		if e.block == nil && !def.page || e.block != nil && !def.block {
			continue
		}
		var vs []Val
		def.vals(d, e, func(x any) { vs = append(vs, d.intern(x)) })
		if len(vs) == 0 {
			continue
		}
		ix.byE[e.id] = vs
		ix.ents = append(ix.ents, e.id)
		ix.n += len(vs)
		for _, v := range vs {
			if _, seen := ix.byV[v]; !seen {
				ix.vals = append(ix.vals, v)
			}
			ix.byV[v] = append(ix.byV[v], e.id)
		}
	}
	d.idx[name] = ix
	return ix
}

// props returns the entity's properties (nil when it has none).
func (d *db) props(e *entity) *propMap {
	if pm, ok := d.propMaps[e.id]; ok {
		return pm
	}
	src := e.page.Props
	if e.block != nil {
		src = e.block.Props
	}
	var pm *propMap
	if len(src) > 0 {
		pm = &propMap{m: make(map[string]any, len(src))}
		for k, v := range src {
			if e.block != nil && k == "id" {
				continue
			}
			pm.m[k] = propValue(k, v)
		}
		if len(pm.m) == 0 {
			pm = nil
		}
	}
	d.propMaps[e.id] = pm
	return pm
}

// refs returns the visible pages a block's own lines reference.
func (d *db) refs(b *graph.Block) []Val {
	if r, ok := d.refMemo[b]; ok {
		return r
	}
	names := make([]string, 0, len(b.Refs))
	for n := range b.Refs {
		names = append(names, n)
	}
	r := d.resolve(names)
	if len(b.Names) > 0 && len(d.refOnly) > 0 {
		n := len(r)
		for k := range b.Names {
			if id, ok := d.refOnly[k]; ok {
				r = append(r, id)
			}
		}
		if len(r) > n {
			r = distinct(r)
		}
	}
	d.refMemo[b] = r
	return r
}

// resolve maps page names to visible page entities, sorted, distinct.
func (d *db) resolve(names []string) []Val {
	var out []Val
	for _, n := range names {
		out = append(out, d.names[strings.ToLower(strings.TrimSpace(n))]...)
	}
	return distinct(out)
}

// resolveTags maps a page's tags to page entities: visible pages, else
// the pages that exist only by reference.
func (d *db) resolveTags(tags []string) []Val {
	var out []Val
	for _, t := range tags {
		if ps := d.names[t]; len(ps) > 0 {
			out = append(out, ps...)
		} else if id, ok := d.refOnly[t]; ok {
			out = append(out, id)
		}
	}
	return distinct(out)
}

// distinct sorts out and drops repeats.
func distinct(out []Val) []Val {
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	k := 0
	for i, v := range out {
		if i == 0 || v != out[i-1] {
			out[k] = v
			k++
		}
	}
	return out[:k]
}

// display is how a value appears in a result: a page by its title, a
// block by its content, properties as a map, a set as a sorted list.
func (d *db) display(x any) any {
	switch v := x.(type) {
	case *entity:
		if v.block != nil {
			return v.block.Content
		}
		return v.page.Title
	case *propMap:
		m := make(map[string]any, len(v.m))
		for k, x := range v.m {
			m[k] = d.display(x)
		}
		return m
	case *setVal:
		if v.names {
			out := make([]any, len(v.shown))
			for i, n := range v.shown {
				out[i] = n
			}
			return out
		}
		out := make([]any, 0, len(v.m))
		for k := range v.m {
			out = append(out, d.display(k))
		}
		sort.Slice(out, func(i, j int) bool { return compareAny(out[i], out[j]) < 0 })
		return out
	case edn.Keyword:
		return ":" + string(v)
	case *regexp.Regexp:
		return v.String()
	}
	return x
}

// pull returns the entity's attributes the pattern asks for.
func (d *db) pull(e *entity, items []pullItem) map[string]any {
	out := map[string]any{}
	add := func(name string, sub []pullItem) {
		if name == "db/id" {
			out[name] = int64(e.id)
			return
		}
		def := attrs[name]
		if e.block == nil && !def.page || e.block != nil && !def.block {
			return
		}
		// Straight from the entity: a pull never builds an attribute's index.
		var vs []any
		def.vals(d, e, func(x any) { vs = append(vs, x) })
		if len(vs) == 0 {
			return
		}
		conv := func(x any) any {
			if sub != nil {
				if ent, ok := x.(*entity); ok {
					return d.pull(ent, sub)
				}
			}
			return d.display(x)
		}
		if def.many {
			list := make([]any, len(vs))
			for i, v := range vs {
				list[i] = conv(v)
			}
			out[name] = list
			return
		}
		out[name] = conv(vs[0])
	}
	for _, it := range items {
		if it.all {
			for name := range attrs {
				if _, done := out[name]; !done {
					add(name, nil)
				}
			}
			continue
		}
		add(it.attr, it.sub)
	}
	return out
}
