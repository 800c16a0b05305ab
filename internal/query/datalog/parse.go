// Package datalog evaluates Logseq advanced queries — a documented subset
// of DataScript's Datalog — over the in-memory graph model of
// internal/query/graph. docs/query.md ("Logseq advanced queries") lists
// what is supported.
package datalog

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"sort"
	"strings"

	"olympos.io/encoding/edn"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/query"
)

// Reader limits: generous for a query a person writes, small enough that
// hostile input costs little.
const (
	MaxQueryBytes = 16 << 10
	MaxDepth      = 32
	MaxNodes      = 4096
	MaxClauses    = 256
)

func invalid(format string, args ...any) *errs.Error {
	return errs.New(errs.CodeInvalidInput, "query: "+format, args...)
}

func unsupported(construct, format string, args ...any) *errs.Error {
	return query.Unsupported(construct, "query: "+format, args...)
}

// termKind is what stands in a clause position.
type termKind int

const (
	tBlank termKind = iota // _
	tVar                   // ?x
	tConst                 // a literal
	tSrc                   // $ (the database)
)

type term struct {
	kind termKind
	name string // variable name, with its ?
	val  any    // constant value (see value types in db.go)
}

// clauseKind is the kind of one :where clause.
type clauseKind int

const (
	cPattern clauseKind = iota // [?e :attr ?v]
	cFn                        // [(f args...)] or [(f args...) ?out]
	cNot                       // (not ...), (not-join [...] ...)
	cOr                        // (or ...), (or-join [...] ...)
)

type clause struct {
	kind clauseKind
	// pattern
	e, v term
	attr string // canonical attribute name (without the colon)
	// function
	fn   string
	args []term
	out  term // tBlank when the function is a predicate
	pred bool // no output: the result's truthiness filters
	// not / or
	join     []string    // explicit join variables (not-join, or-join)
	explicit bool        // join was given
	body     []*clause   // not
	branches [][]*clause // or: each branch is and-ed clauses
	vars     []string    // every variable the clause mentions (sorted)
	text     string      // for messages
}

// findKind is the kind of a :find element.
type findKind int

const (
	fVar findKind = iota
	fPull
	fAgg
)

type findElem struct {
	kind findKind
	v    string // the variable
	agg  string // count, count-distinct, sum, min, max
	pull []pullItem
	name string // column name
}

// pullItem is one element of a pull pattern: * (all), an attribute, or an
// attribute with a nested pattern for the entities it refers to.
type pullItem struct {
	all  bool
	attr string
	sub  []pullItem
}

type inKind int

const (
	inSrc inKind = iota
	inScalar
	inColl
)

type inBinding struct {
	kind inKind
	v    string
}

// Query is a parsed and checked advanced query.
type Query struct {
	find   []findElem
	with   []string
	in     []inBinding
	where  []*clause
	inputs []any // from the query map's :inputs, nil when absent
	hasIn  bool
	fresh  int
}

// Parse reads an advanced query — [:find ...], a {:query [...] ...} map,
// either optionally wrapped in #+BEGIN_QUERY ... #+END_QUERY — and checks
// it: every construct is supported and every variable is bound.
func Parse(text string) (*Query, error) {
	if len(text) > MaxQueryBytes {
		return nil, invalid("the query is longer than %d bytes", MaxQueryBytes)
	}
	s := strings.TrimSpace(text)
	if strings.HasPrefix(asciiUpper(s), "#+BEGIN_QUERY") {
		s = s[len("#+BEGIN_QUERY"):]
		i := strings.Index(asciiUpper(s), "#+END_QUERY")
		if i < 0 {
			return nil, invalid("#+BEGIN_QUERY without #+END_QUERY")
		}
		if strings.TrimSpace(s[i+len("#+END_QUERY"):]) != "" {
			return nil, invalid("text after #+END_QUERY")
		}
		s = s[:i]
	}
	v, err := readEDN(s)
	if err != nil {
		return nil, err
	}
	if err := checkSize(v); err != nil {
		return nil, err
	}
	q := &Query{}
	switch x := v.(type) {
	case []any:
		if err := q.parseVector(x); err != nil {
			return nil, err
		}
	case map[any]any:
		if err := q.parseMap(x); err != nil {
			return nil, err
		}
	default:
		return nil, invalid("an advanced query is a vector [:find ...] or a map {:query [...]}")
	}
	return q, nil
}

// asciiUpper upper-cases ASCII letters only, keeping byte offsets.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// readEDN decodes exactly one EDN value.
func readEDN(s string) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, invalid("cannot read the query as EDN")
		}
	}()
	if strings.TrimSpace(s) == "" {
		return nil, invalid("the query is empty")
	}
	d := edn.NewDecoder(strings.NewReader(s))
	if err := d.Decode(&v); err != nil {
		return nil, invalid("cannot read the query as EDN: %v", err)
	}
	var rest any
	if err := d.Decode(&rest); !errors.Is(err, io.EOF) {
		return nil, invalid("text after the query")
	}
	return v, nil
}

// checkSize enforces the nesting and node limits on a decoded value.
func checkSize(v any) error {
	n := 0
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		if n++; n > MaxNodes {
			return invalid("the query has more than %d elements", MaxNodes)
		}
		if depth > MaxDepth {
			return invalid("the query nests deeper than %d levels", MaxDepth)
		}
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				if err := walk(e, depth+1); err != nil {
					return err
				}
			}
		case map[any]any:
			for k, e := range x {
				if err := walk(k, depth+1); err != nil {
					return err
				}
				if err := walk(e, depth+1); err != nil {
					return err
				}
			}
		case map[any]bool:
			for k := range x {
				if err := walk(k, depth+1); err != nil {
					return err
				}
			}
		case *any:
			return walk(*x, depth+1)
		case edn.Tag:
			return walk(x.Value, depth+1)
		}
		return nil
	}
	return walk(v, 0)
}

// Keys of Logseq's query map: ignored ones only change how Logseq shows
// the result.
var ignoredKeys = map[string]bool{"title": true, "collapsed?": true, "group-by-page?": true, "breadcrumb-show?": true,
	"query-properties": true, "query-sort-by": true, "query-sort-desc": true, "react?": true, "remove-block-children?": true}

func (q *Query) parseMap(m map[any]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		kw, ok := k.(edn.Keyword)
		if !ok {
			return invalid("the query map's keys are keywords (:query, :inputs, ...)")
		}
		keys = append(keys, string(kw))
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case k == "query" || k == "inputs" || ignoredKeys[k]:
		case k == "rules":
			return unsupported(":rules", "rules (:rules) are not supported")
		default:
			return unsupported(":"+k, "the query map key :%s is not supported", k)
		}
	}
	body, ok := m[edn.Keyword("query")]
	if !ok {
		return invalid("the query map has no :query")
	}
	switch b := body.(type) {
	case []any:
		if len(b) == 0 || b[0] != edn.Keyword("find") {
			if len(b) > 0 {
				if _, ok := b[0].(edn.Symbol); ok {
					return unsupported("simple query in :query", "this :query is a simple query: use the simple query language ({{query ...}})")
				}
			}
			return invalid(":query must be a vector starting with :find")
		}
		if err := q.parseVector(b); err != nil {
			return err
		}
	case string, edn.Symbol:
		return unsupported("simple query in :query", "this :query is a simple query: use the simple query language ({{query ...}})")
	case map[any]any:
		return unsupported("map form of :query", "the map form {:find ... :where ...} of :query is not supported: write [:find ... :where ...]")
	default:
		return invalid(":query must be a vector [:find ...]")
	}
	if in, ok := m[edn.Keyword("inputs")]; ok {
		list, ok := in.([]any)
		if !ok {
			return invalid(":inputs must be a vector")
		}
		q.inputs = list
		if q.inputs == nil {
			q.inputs = []any{}
		}
	}
	return nil
}

// parseVector reads [:find ... :with ... :in ... :where ...].
func (q *Query) parseVector(v []any) error {
	if len(v) == 0 || v[0] != edn.Keyword("find") {
		return invalid("an advanced query starts with :find")
	}
	sections := map[string][]any{}
	cur := ""
	for _, x := range v {
		if kw, ok := x.(edn.Keyword); ok {
			k := string(kw)
			switch k {
			case "find", "in", "where", "with", "keys", "strs", "syms":
			case "rules":
				return unsupported(":rules", "rules are not supported")
			default:
				return unsupported(":"+k, "the query section :%s is not supported", k)
			}
			if _, dup := sections[k]; dup {
				return invalid("the section :%s appears twice", k)
			}
			sections[k] = []any{}
			cur = k
			continue
		}
		sections[cur] = append(sections[cur], x)
	}
	if len(sections["find"]) == 0 {
		return invalid(":find names nothing")
	}
	if err := q.parseFind(sections["find"]); err != nil {
		return err
	}
	for _, x := range sections["with"] {
		s, ok := x.(edn.Symbol)
		if !ok || !isVar(string(s)) {
			return invalid(":with takes variables")
		}
		q.with = append(q.with, string(s))
	}
	if in, ok := sections["in"]; ok {
		q.hasIn = true
		if err := q.parseIn(in); err != nil {
			return err
		}
	}
	for _, k := range []string{"keys", "strs", "syms"} {
		names, ok := sections[k]
		if !ok {
			continue
		}
		if len(names) != len(q.find) {
			return invalid(":%s names %d columns, :find has %d", k, len(names), len(q.find))
		}
		for i, n := range names {
			s, ok := n.(edn.Symbol)
			if !ok {
				return invalid(":%s takes plain names", k)
			}
			q.find[i].name = string(s)
		}
	}
	for _, x := range sections["where"] {
		c, err := q.parseClause(x, 0)
		if err != nil {
			return err
		}
		q.where = append(q.where, c...)
	}
	if n := countClauses(q.where); n > MaxClauses {
		return invalid("the query has more than %d clauses", MaxClauses)
	}
	return q.checkBound()
}

func countClauses(cs []*clause) int {
	n := 0
	for _, c := range cs {
		n++
		n += countClauses(c.body)
		for _, b := range c.branches {
			n += countClauses(b)
		}
	}
	return n
}

func isVar(s string) bool { return len(s) > 1 && s[0] == '?' }

func (q *Query) parseFind(els []any) error {
	// Find specs: ?x . (scalar) and [?x ...] (collection) answer as a
	// table of one column like ?x.
	if len(els) == 2 && els[1] == edn.Symbol(".") {
		els = els[:1]
	}
	if len(els) == 1 {
		// [?x ...] or a tuple [?x ?y], not a (pull ...) or (count ...) form.
		if vec, ok := els[0].([]any); ok && len(vec) >= 1 {
			if s, isSym := vec[0].(edn.Symbol); !isSym || isVar(string(s)) {
				if len(vec) == 2 && vec[1] == edn.Symbol("...") {
					els = vec[:1]
				} else {
					els = vec
				}
			}
		}
	}
	for _, x := range els {
		switch e := x.(type) {
		case edn.Symbol:
			if !isVar(string(e)) {
				return invalid(":find takes variables, (pull ?e [...]) or aggregates, not %s", e)
			}
			q.find = append(q.find, findElem{kind: fVar, v: string(e), name: string(e)})
		case []any:
			if len(e) == 0 {
				return invalid("empty () in :find")
			}
			head, _ := e[0].(edn.Symbol)
			switch head {
			case "pull":
				if len(e) != 3 {
					return invalid("(pull ?e [pattern]) takes a variable and a pattern")
				}
				v, ok := e[1].(edn.Symbol)
				if !ok || !isVar(string(v)) {
					if v == "$" {
						return unsupported("pull with a source", "(pull $ ...) is not supported")
					}
					return invalid("(pull ?e [pattern]) takes a variable")
				}
				items, err := parsePull(e[2], 0)
				if err != nil {
					return err
				}
				q.find = append(q.find, findElem{kind: fPull, v: string(v), pull: items, name: string(v)})
			case "count", "count-distinct", "sum", "min", "max", "avg":
				if len(e) != 2 {
					return unsupported("("+string(head)+" n ?x)", "(%s) takes one variable", head)
				}
				v, ok := e[1].(edn.Symbol)
				if !ok || !isVar(string(v)) {
					return invalid("(%s) takes a variable", head)
				}
				q.find = append(q.find, findElem{kind: fAgg, v: string(v), agg: string(head), name: "(" + string(head) + " " + string(v) + ")"})
			default:
				return unsupported("("+string(head)+") in :find", "(%s) in :find is not supported (variables, pull, count, count-distinct, sum, min, max, avg are)", head)
			}
		default:
			return invalid(":find takes variables, (pull ?e [...]) or aggregates")
		}
	}
	return nil
}

func parsePull(x any, depth int) ([]pullItem, error) {
	vec, ok := x.([]any)
	if !ok {
		return nil, invalid("a pull pattern is a vector, e.g. [*] or [:block/content]")
	}
	var items []pullItem
	for _, e := range vec {
		switch p := e.(type) {
		case edn.Symbol:
			if p != "*" {
				return nil, invalid("a pull pattern holds *, attributes or {attribute [pattern]}, not %s", p)
			}
			items = append(items, pullItem{all: true})
		case edn.Keyword:
			a, err := pullAttr(string(p))
			if err != nil {
				return nil, err
			}
			items = append(items, pullItem{attr: a})
		case string:
			if p != "*" {
				return nil, invalid("a pull pattern holds *, attributes or {attribute [pattern]}")
			}
			items = append(items, pullItem{all: true})
		case map[any]any:
			keys := make([]string, 0, len(p))
			subs := map[string]any{}
			for k, v := range p {
				kw, ok := k.(edn.Keyword)
				if !ok {
					return nil, unsupported("pull map key", "pull map keys must be attributes")
				}
				keys = append(keys, string(kw))
				subs[string(kw)] = v
			}
			sort.Strings(keys)
			for _, k := range keys {
				a, err := pullAttr(k)
				if err != nil {
					return nil, err
				}
				if !attrs[a].ref {
					return nil, invalid("{:%s [...]}: the attribute does not refer to entities", k)
				}
				sub, err := parsePull(subs[k], depth+1)
				if err != nil {
					return nil, err
				}
				items = append(items, pullItem{attr: a, sub: sub})
			}
		case []any:
			return nil, unsupported("pull attribute options", "pull attribute options ([:attr :limit n], (:attr :as x)) are not supported")
		default:
			return nil, invalid("a pull pattern holds *, attributes or {attribute [pattern]}")
		}
	}
	return items, nil
}

func pullAttr(k string) (string, error) {
	if k == "db/id" {
		return k, nil
	}
	if strings.Contains(k, "/_") {
		return "", unsupported("reverse attribute :"+k, "reverse attributes (:%s) are not supported", k)
	}
	return attrName(k)
}

// attrName canonicalizes an attribute: :page/x is :block/x (pages carry
// both spellings in Logseq's data).
func attrName(k string) (string, error) {
	if rest, ok := strings.CutPrefix(k, "page/"); ok {
		k = "block/" + rest
	}
	if _, ok := attrs[k]; ok {
		return k, nil
	}
	return "", unsupported("attribute :"+k, "the attribute :%s is not supported", k)
}

func (q *Query) parseIn(els []any) error {
	for _, x := range els {
		switch e := x.(type) {
		case edn.Symbol:
			switch {
			case e == "$":
				q.in = append(q.in, inBinding{kind: inSrc})
			case e == "%":
				return unsupported("rules (%)", "rules (%% in :in) are not supported")
			case isVar(string(e)):
				q.in = append(q.in, inBinding{kind: inScalar, v: string(e)})
			case strings.HasPrefix(string(e), "$"):
				return unsupported("source "+string(e), "only the one database $ is supported, not %s", e)
			default:
				return invalid(":in takes $, ?variables or [?x ...], not %s", e)
			}
		case []any:
			if len(e) == 2 && e[1] == edn.Symbol("...") {
				if v, ok := e[0].(edn.Symbol); ok && isVar(string(v)) {
					q.in = append(q.in, inBinding{kind: inColl, v: string(v)})
					continue
				}
			}
			return unsupported("tuple or relation binding in :in", "only scalar (?x) and collection ([?x ...]) bindings are supported in :in")
		default:
			return invalid(":in takes $, ?variables or [?x ...]")
		}
	}
	return nil
}

// term reads one clause argument.
func (q *Query) term(x any) (term, error) {
	switch v := x.(type) {
	case edn.Symbol:
		s := string(v)
		switch {
		case s == "_":
			return term{kind: tBlank}, nil
		case s == "$":
			return term{kind: tSrc}, nil
		case isVar(s):
			return term{kind: tVar, name: s}, nil
		case strings.HasPrefix(s, "$"):
			return term{}, unsupported("source "+s, "only the one database $ is supported, not %s", s)
		}
		return term{}, invalid("unexpected symbol %s (variables start with ?)", s)
	}
	c, err := constant(x)
	if err != nil {
		return term{}, err
	}
	return term{kind: tConst, val: c}, nil
}

// constant converts a decoded EDN literal to a value.
func constant(x any) (any, error) {
	switch v := x.(type) {
	case string, int64, float64, bool, edn.Keyword:
		return v, nil
	case nil:
		return nil, invalid("nil is not a value here")
	case map[any]bool:
		s := &setVal{m: map[any]bool{}}
		for k := range v {
			c, err := constant(k)
			if err != nil {
				return nil, err
			}
			s.m[c] = true
		}
		return s, nil
	case edn.Tag:
		if s, ok := v.Value.(string); ok && v.Tagname == "uuid" {
			return s, nil
		}
		return nil, unsupported("#"+v.Tagname, "tagged value #%s is not supported", v.Tagname)
	case []any:
		// A lookup ref [:block/name "x"], or a literal vector (a
		// collection for contains?).
		if len(v) == 2 {
			if kw, ok := v[0].(edn.Keyword); ok {
				a, err := attrName(string(kw))
				if err != nil {
					return nil, err
				}
				val, err := constant(v[1])
				if err != nil {
					return nil, err
				}
				switch val.(type) {
				case *setVal, *lookupRef:
					return nil, invalid("a lookup ref [:attribute value] takes a single value")
				}
				if attrs[a].ref {
					return nil, invalid("a lookup ref's attribute holds values, not entities")
				}
				return &lookupRef{attr: a, val: val}, nil
			}
		}
		s := &setVal{m: map[any]bool{}}
		for _, k := range v {
			c, err := constant(k)
			if err != nil {
				return nil, err
			}
			s.m[c] = true
		}
		return s, nil
	case big.Int, *big.Int:
		return nil, invalid("number out of range")
	case edn.Symbol:
		return nil, invalid("unexpected symbol %s", v)
	}
	return nil, unsupported(fmt.Sprintf("value of type %T", x), "this kind of value (%T) is not supported", x)
}

// lookupRef names the entity whose attribute has the value (the first
// one when several do), as [:block/name "x"] does.
type lookupRef struct {
	attr string
	val  any
}

func (q *Query) freshVar() string {
	q.fresh++
	return fmt.Sprintf("?_%d", q.fresh)
}

// parseClause reads one :where clause (a Logseq rule call may expand to
// several).
func (q *Query) parseClause(x any, depth int) ([]*clause, error) {
	vec, ok := x.([]any)
	if !ok || len(vec) == 0 {
		return nil, invalid("a :where clause is [pattern], [(predicate)], (not ...), (or ...) or a Logseq rule call")
	}
	if inner, ok := vec[0].([]any); ok {
		if len(inner) > 0 {
			if _, isKw := inner[0].(edn.Keyword); isKw { // [[:block/name "x"] :attr ?v]
				return q.parsePattern(vec)
			}
		}
		return q.parseFn(vec, inner) // [(f args) out?]
	}
	if head, ok := vec[0].(edn.Symbol); ok && !isVar(string(head)) && head != "_" && !strings.HasPrefix(string(head), "$") {
		return q.parseForm(string(head), vec[1:], depth)
	}
	return q.parsePattern(vec)
}

func (q *Query) parsePattern(vec []any) ([]*clause, error) {
	if s, ok := vec[0].(edn.Symbol); ok && s == "$" {
		vec = vec[1:]
	}
	if len(vec) < 2 || len(vec) > 3 {
		if len(vec) > 3 {
			return nil, unsupported("transaction position", "data patterns take [e attribute value]; the transaction position is not supported")
		}
		return nil, invalid("a data pattern is [?e :attribute ?value] or [?e :attribute]")
	}
	c := &clause{kind: cPattern, v: term{kind: tBlank}}
	var err error
	if c.e, err = q.term(vec[0]); err != nil {
		return nil, err
	}
	if c.e.kind == tSrc {
		return nil, invalid("$ stands only first in a data pattern")
	}
	kw, ok := vec[1].(edn.Keyword)
	if !ok {
		if s, isSym := vec[1].(edn.Symbol); isSym && (isVar(string(s)) || s == "_") {
			return nil, unsupported("variable attribute", "an attribute must be written out (:block/content), not a variable")
		}
		return nil, invalid("the second element of a data pattern is an attribute such as :block/content")
	}
	if c.attr, err = attrName(string(kw)); err != nil {
		return nil, err
	}
	if len(vec) == 3 {
		if c.v, err = q.term(vec[2]); err != nil {
			return nil, err
		}
		if c.v.kind == tSrc {
			return nil, invalid("$ stands only first in a data pattern")
		}
		if c.v.kind == tConst {
			if _, isSet := c.v.val.(*setVal); isSet {
				return nil, invalid("a data pattern's value is a single value, not a collection")
			}
		}
	}
	c.text = fmt.Sprintf("[%v :%s %v]", vec[0], kw, pick(len(vec) == 3, vec, 2))
	c.vars = varsOf(c.e, c.v)
	return []*clause{c}, nil
}

func pick(ok bool, vec []any, i int) any {
	if ok {
		return vec[i]
	}
	return ""
}

func varsOf(ts ...term) []string {
	var out []string
	for _, t := range ts {
		if t.kind == tVar {
			out = append(out, t.name)
		}
	}
	return uniq(out)
}

func uniq(vs []string) []string {
	sort.Strings(vs)
	out := vs[:0]
	for i, v := range vs {
		if i == 0 || v != vs[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func (q *Query) parseFn(vec, inner []any) ([]*clause, error) {
	if len(inner) == 0 {
		return nil, invalid("empty () in a function clause")
	}
	head, ok := inner[0].(edn.Symbol)
	if !ok {
		return nil, invalid("a function clause starts with the function's name")
	}
	name := string(head)
	sig, known := funcs[name]
	if !known {
		return nil, unsupported("function "+name, "the function %s is not supported", name)
	}
	c := &clause{kind: cFn, fn: name, out: term{kind: tBlank}, pred: true, text: "[(" + name + " ...)]"}
	for _, a := range inner[1:] {
		t, err := q.term(a)
		if err != nil {
			return nil, err
		}
		if t.kind == tBlank {
			return nil, invalid("_ cannot be a function argument in (%s)", name)
		}
		c.args = append(c.args, t)
	}
	if len(c.args) < sig.min || (sig.max >= 0 && len(c.args) > sig.max) {
		return nil, invalid("(%s) takes %s", name, sig.arity())
	}
	if sig.src {
		if c.args[0].kind != tSrc {
			return nil, invalid("(%s) takes $ first", name)
		}
		if kw, ok := c.args[2].val.(edn.Keyword); !ok || c.args[2].kind != tConst {
			return nil, invalid("(%s) takes an attribute third", name)
		} else {
			a, err := attrName(string(kw))
			if err != nil {
				return nil, err
			}
			c.args[2].val = edn.Keyword(a)
		}
	} else {
		for _, a := range c.args {
			if a.kind == tSrc {
				return nil, invalid("(%s) does not take $", name)
			}
		}
	}
	if name == "re-pattern" && c.args[0].kind == tConst {
		s, ok := c.args[0].val.(string)
		if !ok {
			return nil, invalid("(re-pattern) takes a string")
		}
		if _, err := regexp.Compile(s); err != nil {
			return nil, invalid("(re-pattern): %v", err)
		}
	}
	switch len(vec) {
	case 1:
	case 2:
		t, err := q.term(vec[1])
		if err != nil {
			if _, isVec := vec[1].([]any); isVec {
				return nil, unsupported("collection, tuple or relation binding", "a function's result binds one variable ([(f ...) ?x]); [?x ...] and tuple bindings are not supported")
			}
			return nil, err
		}
		if t.kind != tVar && t.kind != tBlank {
			if _, isSet := t.val.(*setVal); isSet {
				return nil, unsupported("collection, tuple or relation binding", "a function's result binds one variable ([(f ...) ?x]); [?x ...] and tuple bindings are not supported")
			}
			return nil, invalid("a function's result binds a variable")
		}
		c.out, c.pred = t, false
	default:
		return nil, invalid("a function clause is [(f args...)] or [(f args...) ?out]")
	}
	c.vars = varsOf(append(append([]term{}, c.args...), c.out)...)
	return []*clause{c}, nil
}

// parseForm reads (not ...), (not-join [...] ...), (or ...), (or-join
// [...] ...), (and ...) and Logseq's built-in rules.
func (q *Query) parseForm(head string, args []any, depth int) ([]*clause, error) {
	if depth > MaxDepth {
		return nil, invalid("the query nests deeper than %d levels", MaxDepth)
	}
	body := func(xs []any) ([]*clause, error) {
		var out []*clause
		for _, x := range xs {
			cs, err := q.parseClause(x, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, cs...)
		}
		return out, nil
	}
	joinVars := func(x any) ([]string, error) {
		vec, ok := x.([]any)
		if !ok || len(vec) == 0 {
			return nil, invalid("(%s) takes a vector of variables first", head)
		}
		var out []string
		for _, e := range vec {
			s, ok := e.(edn.Symbol)
			if !ok || !isVar(string(s)) {
				return nil, unsupported("required variables in "+head, "(%s [...]) takes plain variables", head)
			}
			out = append(out, string(s))
		}
		return uniq(out), nil
	}
	switch head {
	case "and":
		return nil, invalid("(and ...) stands only inside (or ...)")
	case "not", "not-join":
		c := &clause{kind: cNot, text: "(" + head + " ...)"}
		if head == "not-join" {
			if len(args) == 0 {
				return nil, invalid("(not-join [vars] clauses...) needs variables")
			}
			j, err := joinVars(args[0])
			if err != nil {
				return nil, err
			}
			c.join, c.explicit, args = j, true, args[1:]
		}
		if len(args) == 0 {
			return nil, invalid("(%s) needs clauses", head)
		}
		b, err := body(args)
		if err != nil {
			return nil, err
		}
		c.body = b
		if !c.explicit {
			c.join = allVars(b)
		}
		c.vars = c.join
		return []*clause{c}, nil
	case "or", "or-join":
		c := &clause{kind: cOr, text: "(" + head + " ...)"}
		if head == "or-join" {
			if len(args) == 0 {
				return nil, invalid("(or-join [vars] clauses...) needs variables")
			}
			j, err := joinVars(args[0])
			if err != nil {
				return nil, err
			}
			c.join, c.explicit, args = j, true, args[1:]
		}
		if len(args) == 0 {
			return nil, invalid("(%s) needs clauses", head)
		}
		for _, a := range args {
			var br []*clause
			var err error
			if vec, ok := a.([]any); ok && len(vec) > 0 && vec[0] == edn.Symbol("and") {
				if len(vec) == 1 {
					return nil, invalid("(and) needs clauses")
				}
				br, err = body(vec[1:])
			} else {
				br, err = body([]any{a})
			}
			if err != nil {
				return nil, err
			}
			c.branches = append(c.branches, br)
		}
		if c.explicit {
			for _, br := range c.branches {
				have := map[string]bool{}
				for _, v := range allVars(br) {
					have[v] = true
				}
				for _, v := range c.join {
					if !have[v] {
						return nil, invalid("(or-join): a branch does not use %s", v)
					}
				}
			}
		} else {
			// The variables every branch uses are joined; a variable only
			// some branches use is local to them (unless bound outside).
			common := map[string]int{}
			for _, br := range c.branches {
				for _, v := range allVars(br) {
					common[v]++
				}
			}
			for v, n := range common {
				if n == len(c.branches) {
					c.join = append(c.join, v)
				}
			}
			c.join = uniq(c.join)
		}
		var all []string
		for _, br := range c.branches {
			all = append(all, allVars(br)...)
		}
		c.vars = uniq(all)
		return []*clause{c}, nil
	}
	return q.rule(head, args)
}

// allVars lists the variables the clauses mention (of not/or: their join
// variables and, for plain ones, every variable inside).
func allVars(cs []*clause) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.vars...)
	}
	return uniq(out)
}

// checkBound checks that :find, :with and every function argument can be
// bound by the clauses or :in.
func (q *Query) checkBound() error {
	bound := map[string]bool{}
	for _, b := range q.in {
		if b.v != "" {
			if bound[b.v] {
				return invalid(":in binds %s twice", b.v)
			}
			bound[b.v] = true
		}
	}
	var bind func(cs []*clause)
	bind = func(cs []*clause) {
		for _, c := range cs {
			switch c.kind {
			case cPattern:
				for _, v := range c.vars {
					bound[v] = true
				}
			case cFn:
				if c.out.kind == tVar {
					bound[c.out.name] = true
				}
			case cOr:
				for _, v := range c.join {
					bound[v] = true
				}
			}
		}
	}
	bind(q.where)
	if err := checkScope(q.where, bound); err != nil {
		return err
	}
	for _, f := range q.find {
		if !bound[f.v] {
			return invalid("%s in :find is not bound by :where or :in", f.v)
		}
	}
	for _, v := range q.with {
		if !bound[v] {
			return invalid("%s in :with is not bound by :where or :in", v)
		}
	}
	return nil
}

// checkScope checks that every function's arguments are bound within the
// clauses' scope (outer holds what :in and enclosing clauses bind).
func checkScope(cs []*clause, outer map[string]bool) error {
	bound := map[string]bool{}
	for v := range outer {
		bound[v] = true
	}
	for _, c := range cs {
		switch c.kind {
		case cPattern:
			for _, v := range c.vars {
				bound[v] = true
			}
		case cOr:
			for _, v := range c.join {
				bound[v] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, c := range cs {
			if c.kind == cFn && c.out.kind == tVar && !bound[c.out.name] && argsBound(c, bound) {
				bound[c.out.name], changed = true, true
			}
		}
	}
	for _, c := range cs {
		switch c.kind {
		case cFn:
			if !argsBound(c, bound) {
				for _, a := range c.args {
					if a.kind == tVar && !bound[a.name] {
						return invalid("%s in %s is not bound by a data pattern, a function or :in", a.name, c.text)
					}
				}
			}
		case cNot:
			if err := checkScope(c.body, bound); err != nil {
				return err
			}
		case cOr:
			for _, br := range c.branches {
				if err := checkScope(br, bound); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func argsBound(c *clause, bound map[string]bool) bool {
	for _, a := range c.args {
		if a.kind == tVar && !bound[a.name] {
			return false
		}
	}
	return true
}
