// Package dataview evaluates a subset of Obsidian Dataview's query
// language (DQL) against loci's index: LIST, TABLE and TASK queries with
// FROM, WHERE, SORT, LIMIT, GROUP BY and FLATTEN. The parser is hand-written; anything
// outside the subset is an unsupported_query error naming the construct
// (docs/query.md has the conformance table).
package dataview

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/query"
)

// maxQuery bounds the query text and maxDepth the nesting of its
// expressions, so hostile input cannot exhaust the stack.
const (
	maxQuery = 16 << 10
	maxDepth = 64
)

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tNumber
	tString
	tTag
	tLink
	tPunct
)

type token struct {
	kind tokKind
	text string // identifiers as written; strings, tags and links unquoted
	pos  int
}

func lex(src string) ([]token, error) {
	var out []token
	i := 0
	for i < len(src) {
		r, w := utf8.DecodeRuneInString(src[i:])
		switch {
		case unicode.IsSpace(r):
			i += w
		case r == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(src) {
					return nil, syntaxErr(i, "unterminated string")
				}
				c := src[j]
				if c == '\\' && j+1 < len(src) {
					b.WriteByte(src[j+1])
					j += 2
					continue
				}
				if c == '"' {
					break
				}
				b.WriteByte(c)
				j++
			}
			out = append(out, token{tString, b.String(), i})
			i = j + 1
		case strings.HasPrefix(src[i:], "[["):
			end := strings.Index(src[i+2:], "]]")
			if end < 0 {
				return nil, syntaxErr(i, "unterminated [[link]]")
			}
			out = append(out, token{tLink, src[i+2 : i+2+end], i})
			i += end + 4
		case r == '#':
			j := i + 1
			for j < len(src) {
				r2, w2 := utf8.DecodeRuneInString(src[j:])
				if unicode.IsSpace(r2) || strings.ContainsRune(`,()"!<>=`, r2) {
					break
				}
				j += w2
			}
			if j == i+1 {
				return nil, syntaxErr(i, "empty #tag")
			}
			out = append(out, token{tTag, src[i+1 : j], i})
			i = j
		case r >= '0' && r <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			out = append(out, token{tNumber, src[i:j], i})
			i = j
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(src) {
				r2, w2 := utf8.DecodeRuneInString(src[j:])
				if !(r2 == '_' || r2 == '.' || unicode.IsLetter(r2) || unicode.IsDigit(r2) || (r2 == '-' && j+1 < len(src) && src[j+1] != ' ')) {
					break
				}
				j += w2
			}
			out = append(out, token{tIdent, strings.TrimRight(src[i:j], ".-"), i})
			i += len(strings.TrimRight(src[i:j], ".-"))
		default:
			p := string(r)
			for _, two := range []string{"!=", "<=", ">=", "&&", "||", "=="} {
				if strings.HasPrefix(src[i:], two) {
					p = two
				}
			}
			if !strings.Contains("()[],!=<>-+*/%&|{}:;.", p[:1]) {
				return nil, syntaxErr(i, "unexpected character %q", r)
			}
			out = append(out, token{tPunct, p, i})
			i += len(p)
		}
	}
	return append(out, token{tEOF, "", len(src)}), nil
}

func syntaxErr(pos int, format string, args ...any) *errs.Error {
	return errs.New(errs.CodeInvalidInput, "dataview query: "+format+" (at offset %d)", append(args, pos)...).With("offset", pos)
}

// Query is a parsed DQL query.
type Query struct {
	Kind      string // LIST, TABLE or TASK
	WithoutID bool
	Fields    []Field // TABLE columns, or LIST's one expression
	From      Source  // nil: every note
	Where     []Expr  // each WHERE clause, in order (all must hold)
	Sort      []SortKey
	Limit     int // 0: none
	// Steps are the data commands (WHERE, SORT, LIMIT, GROUP BY,
	// FLATTEN) in the order written: the evaluator runs them in turn, as
	// Dataview does (a SORT after GROUP BY sorts the groups). Where, Sort
	// and Limit above gather the same clauses by kind.
	Steps []Step
}

// Step is one data command.
type Step struct {
	Kind  string    // WHERE, SORT, LIMIT, GROUP or FLATTEN
	Expr  Expr      // WHERE's condition, GROUP BY's key, FLATTEN's value
	Sort  []SortKey // SORT's keys
	Limit int       // LIMIT's count
	Name  string    // GROUP BY's and FLATTEN's name (AS name, else the field path)
}

// Field is a TABLE column.
type Field struct {
	Expr Expr
	Name string
}

// SortKey is one SORT key.
type SortKey struct {
	Expr Expr
	Desc bool
}

// Source is a FROM source.
type Source interface{ isSource() }

type (
	srcTag      struct{ tag string }
	srcFolder   struct{ folder string }
	srcLinksTo  struct{ note string } // [[note]]: notes linking to it
	srcOutgoing struct{ note string } // outgoing([[note]])
	srcNot      struct{ s Source }
	srcAnd      struct{ a, b Source }
	srcOr       struct{ a, b Source }
)

func (srcTag) isSource()      {}
func (srcFolder) isSource()   {}
func (srcLinksTo) isSource()  {}
func (srcOutgoing) isSource() {}
func (srcNot) isSource()      {}
func (srcAnd) isSource()      {}
func (srcOr) isSource()       {}

// Expr is a WHERE / SORT / TABLE expression.
type Expr interface{ isExpr() }

type (
	eLit   struct{ v any }
	eField struct{ path string }
	eLink  struct{ target string }
	eNot   struct{ x Expr }
	eBin   struct {
		op   string // and, or, =, !=, <, >, <=, >=
		a, b Expr
	}
	eCall struct {
		fn   string
		args []Expr
	}
)

func (eLit) isExpr()   {}
func (eField) isExpr() {}
func (eLink) isExpr()  {}
func (eNot) isExpr()   {}
func (eBin) isExpr()   {}
func (eCall) isExpr()  {}

type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// kw reports whether the next token is the keyword k (any case).
func (p *parser) kw(k string) bool {
	t := p.peek()
	return t.kind == tIdent && strings.EqualFold(t.text, k)
}

func (p *parser) punct(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == s
}

func (p *parser) expect(s string) error {
	if !p.punct(s) {
		return syntaxErr(p.peek().pos, "expected %q", s)
	}
	p.next()
	return nil
}

func unsupported(construct string) error {
	return query.Unsupported(construct, "Dataview %s is not supported (docs/query.md lists what is)", construct)
}

var clauseWords = map[string]bool{"FROM": true, "WHERE": true, "SORT": true, "LIMIT": true, "GROUP": true, "FLATTEN": true}

// Parse parses a DQL query.
func Parse(src string) (q *Query, err error) {
	if len(src) > maxQuery {
		return nil, errs.New(errs.CodeInvalidInput, "dataview query: longer than %d bytes", maxQuery)
	}
	if !utf8.ValidString(src) {
		return nil, errs.New(errs.CodeInvalidInput, "dataview query: not UTF-8 text")
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	q = &Query{}
	head := p.next()
	if head.kind != tIdent {
		return nil, syntaxErr(head.pos, "a query starts with LIST, TABLE or TASK")
	}
	q.Kind = strings.ToUpper(head.text)
	switch q.Kind {
	case "LIST", "TABLE":
		if p.kw("WITHOUT") {
			p.next()
			if !p.kw("ID") {
				return nil, syntaxErr(p.peek().pos, "expected ID after WITHOUT")
			}
			p.next()
			q.WithoutID = true
		}
		for !p.atClause() {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			f := Field{Expr: e, Name: exprName(src, p, e)}
			if p.kw("AS") {
				p.next()
				t := p.next()
				if t.kind != tString && t.kind != tIdent {
					return nil, syntaxErr(t.pos, "expected a name after AS")
				}
				f.Name = t.text
			}
			q.Fields = append(q.Fields, f)
			if q.Kind == "LIST" {
				break
			}
			if !p.punct(",") {
				break
			}
			p.next()
		}
	case "TASK":
	case "CALENDAR":
		return nil, unsupported("CALENDAR queries")
	default:
		return nil, syntaxErr(head.pos, "a query starts with LIST, TABLE or TASK, not %q", head.text)
	}
	for p.peek().kind != tEOF {
		t := p.next()
		if t.kind != tIdent {
			return nil, syntaxErr(t.pos, "unexpected %q", t.text)
		}
		switch strings.ToUpper(t.text) {
		case "FROM":
			if q.From != nil {
				return nil, syntaxErr(t.pos, "FROM given twice")
			}
			if q.From, err = p.source(); err != nil {
				return nil, err
			}
		case "WHERE":
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			q.Where = append(q.Where, e)
			q.Steps = append(q.Steps, Step{Kind: "WHERE", Expr: e})
		case "SORT":
			n := len(q.Sort)
			for {
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				k := SortKey{Expr: e}
				if p.kw("DESC") || p.kw("DESCENDING") {
					p.next()
					k.Desc = true
				} else if p.kw("ASC") || p.kw("ASCENDING") {
					p.next()
				}
				q.Sort = append(q.Sort, k)
				if !p.punct(",") {
					break
				}
				p.next()
			}
			q.Steps = append(q.Steps, Step{Kind: "SORT", Sort: q.Sort[n:len(q.Sort):len(q.Sort)]})
		case "LIMIT":
			n := p.next()
			v, err := strconv.Atoi(n.text)
			if n.kind != tNumber || err != nil || v < 0 {
				return nil, syntaxErr(n.pos, "LIMIT takes a whole number")
			}
			q.Limit = v
			q.Steps = append(q.Steps, Step{Kind: "LIMIT", Limit: v})
		case "GROUP":
			if !p.kw("BY") {
				return nil, syntaxErr(p.peek().pos, "expected BY after GROUP")
			}
			p.next()
			st, err := p.named("GROUP")
			if err != nil {
				return nil, err
			}
			q.Steps = append(q.Steps, st)
		case "FLATTEN":
			st, err := p.named("FLATTEN")
			if err != nil {
				return nil, err
			}
			q.Steps = append(q.Steps, st)
		default:
			return nil, syntaxErr(t.pos, "unknown clause %q", t.text)
		}
		if !p.atClause() && p.peek().kind != tEOF {
			return nil, syntaxErr(p.peek().pos, "unexpected %q", p.peek().text)
		}
	}
	return q, nil
}

// named reads GROUP BY's or FLATTEN's "expr [AS name]".
func (p *parser) named(kind string) (Step, error) {
	e, err := p.expr()
	if err != nil {
		return Step{}, err
	}
	st := Step{Kind: kind, Expr: e, Name: exprName("", p, e)}
	if kind == "GROUP" && st.Name == "expr" {
		st.Name = "key"
	}
	if p.kw("AS") {
		p.next()
		t := p.next()
		if t.kind != tString && t.kind != tIdent {
			return Step{}, syntaxErr(t.pos, "expected a name after AS")
		}
		st.Name = t.text
	}
	return st, nil
}

func (p *parser) atClause() bool {
	t := p.peek()
	return t.kind == tEOF || t.kind == tIdent && clauseWords[strings.ToUpper(t.text)]
}

// exprName is a column's default header: the expression's source text.
func exprName(src string, p *parser, e Expr) string {
	if f, ok := e.(eField); ok {
		return f.path
	}
	return "expr"
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return syntaxErr(p.peek().pos, "nested too deeply")
	}
	return nil
}

func (p *parser) source() (Source, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	a, err := p.sourceAnd()
	if err != nil {
		return nil, err
	}
	for p.kw("or") || p.punct("||") {
		p.next()
		b, err := p.sourceAnd()
		if err != nil {
			return nil, err
		}
		a = srcOr{a, b}
	}
	return a, nil
}

func (p *parser) sourceAnd() (Source, error) {
	a, err := p.sourceUnary()
	if err != nil {
		return nil, err
	}
	for p.kw("and") || p.punct("&&") {
		p.next()
		b, err := p.sourceUnary()
		if err != nil {
			return nil, err
		}
		a = srcAnd{a, b}
	}
	return a, nil
}

func (p *parser) sourceUnary() (Source, error) {
	t := p.next()
	switch t.kind {
	case tPunct:
		switch t.text {
		case "-", "!":
			if err := p.enter(); err != nil {
				return nil, err
			}
			defer func() { p.depth-- }()
			s, err := p.sourceUnary()
			if err != nil {
				return nil, err
			}
			return srcNot{s}, nil
		case "(":
			s, err := p.source()
			if err != nil {
				return nil, err
			}
			return s, p.expect(")")
		}
	case tTag:
		return srcTag{t.text}, nil
	case tString:
		return srcFolder{t.text}, nil
	case tLink:
		if strings.TrimSpace(t.text) == "" || strings.HasPrefix(t.text, "#") {
			return nil, unsupported("[[]] (the current note) in FROM")
		}
		return srcLinksTo{t.text}, nil
	case tIdent:
		if strings.EqualFold(t.text, "outgoing") && p.punct("(") {
			p.next()
			l := p.next()
			if l.kind != tLink {
				return nil, syntaxErr(l.pos, "outgoing takes a [[note]]")
			}
			if strings.TrimSpace(l.text) == "" || strings.HasPrefix(l.text, "#") {
				return nil, unsupported("[[]] (the current note) in FROM")
			}
			return srcOutgoing{l.text}, p.expect(")")
		}
		if p.punct("(") {
			return nil, unsupported(fmt.Sprintf("FROM %s(...)", t.text))
		}
	}
	return nil, syntaxErr(t.pos, "expected a source (#tag, \"folder\", [[note]] or outgoing([[note]])), not %q", t.text)
}

func (p *parser) expr() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	a, err := p.andExpr()
	if err != nil {
		return nil, err
	}
	for p.kw("or") || p.punct("||") {
		p.next()
		b, err := p.andExpr()
		if err != nil {
			return nil, err
		}
		a = eBin{"or", a, b}
	}
	return a, nil
}

func (p *parser) andExpr() (Expr, error) {
	a, err := p.cmpExpr()
	if err != nil {
		return nil, err
	}
	for p.kw("and") || p.punct("&&") {
		p.next()
		b, err := p.cmpExpr()
		if err != nil {
			return nil, err
		}
		a = eBin{"and", a, b}
	}
	return a, nil
}

func (p *parser) cmpExpr() (Expr, error) {
	a, err := p.unary()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind == tPunct {
		switch t.text {
		case "=", "==", "!=", "<", ">", "<=", ">=":
			p.next()
			b, err := p.unary()
			if err != nil {
				return nil, err
			}
			op := t.text
			if op == "==" {
				op = "="
			}
			return eBin{op, a, b}, nil
		case "+", "-", "*", "/", "%":
			return nil, unsupported("arithmetic (" + t.text + ")")
		}
	}
	return a, nil
}

func (p *parser) unary() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	t := p.next()
	switch t.kind {
	case tNumber:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, syntaxErr(t.pos, "bad number %q", t.text)
		}
		return eLit{f}, nil
	case tString:
		return eLit{t.text}, nil
	case tLink:
		return eLink{t.text}, nil
	case tTag:
		return eLit{"#" + t.text}, nil
	case tPunct:
		switch t.text {
		case "!":
			x, err := p.unary()
			if err != nil {
				return nil, err
			}
			return eNot{x}, nil
		case "-":
			n := p.peek()
			if n.kind == tNumber {
				p.next()
				f, err := strconv.ParseFloat(n.text, 64)
				if err != nil {
					return nil, syntaxErr(n.pos, "bad number %q", n.text)
				}
				return eLit{-f}, nil
			}
			return nil, unsupported("arithmetic (-)")
		case "(":
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			return e, p.expect(")")
		case "[":
			return nil, unsupported("list literals")
		case "{":
			return nil, unsupported("object literals")
		}
	case tIdent:
		switch strings.ToLower(t.text) {
		case "true":
			return eLit{true}, nil
		case "false":
			return eLit{false}, nil
		case "null":
			return eLit{nil}, nil
		}
		if p.punct("(") {
			return p.call(t)
		}
		if p.punct("[") {
			return nil, unsupported("indexing (field[...])")
		}
		return eField{t.text}, nil
	}
	if t.kind == tEOF {
		return nil, syntaxErr(t.pos, "unexpected end of query")
	}
	return nil, syntaxErr(t.pos, "unexpected %q", t.text)
}

func (p *parser) call(name token) (Expr, error) {
	fn := strings.ToLower(name.text)
	p.next() // (
	if fn == "date" {
		// date(today), date(2024-05-01): the argument is raw text.
		var b strings.Builder
		for !p.punct(")") {
			t := p.next()
			if t.kind == tEOF {
				return nil, syntaxErr(t.pos, "unterminated date(...)")
			}
			b.WriteString(t.text)
		}
		p.next()
		d, err := parseDateArg(b.String())
		if err != nil {
			return nil, syntaxErr(name.pos, "%v", err)
		}
		return eLit{d}, nil
	}
	switch fn {
	case "contains", "icontains", "lower", "upper", "length", "sum", "min", "max":
	default:
		return nil, unsupported("function " + name.text + "()")
	}
	var args []Expr
	for !p.punct(")") {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		args = append(args, e)
		if p.punct(",") {
			p.next()
		} else if !p.punct(")") {
			return nil, syntaxErr(p.peek().pos, "expected , or ) in %s(...)", name.text)
		}
	}
	p.next()
	want := 1
	if fn == "contains" || fn == "icontains" {
		want = 2
	}
	if len(args) != want {
		return nil, syntaxErr(name.pos, "%s takes %d argument(s)", name.text, want)
	}
	return eCall{fn, args}, nil
}
