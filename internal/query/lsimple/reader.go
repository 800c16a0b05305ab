package lsimple

import (
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/query"
)

// Reader limits: a query is typed by a person, so these are generous for
// that and small enough that hostile input costs little.
const (
	MaxQueryBytes = 4096
	MaxDepth      = 32
	MaxNodes      = 512
)

// nodeKind is the kind of one expression of a query.
type nodeKind int

const (
	nList     nodeKind = iota // (op args...)
	nAtom                     // a bare word: operator names, TODO, -7d, keys
	nStr                      // "quoted text"
	nRef                      // [[page]]
	nTag                      // #tag or #[[tag]]
	nBlockRef                 // ((uuid))
)

// node is one parsed expression.
type node struct {
	kind  nodeKind
	text  string  // atom, string, ref or tag text
	items []*node // list items
}

// invalid is the error for a query that cannot be read.
func invalid(format string, args ...any) error {
	return errs.New(errs.CodeInvalidInput, "query: "+format, args...)
}

// unsupported is the error for a construct this evaluator does not handle.
func unsupported(construct string) error {
	return query.Unsupported(construct, "query: unsupported: %s", construct).With("detail", "unsupported: "+construct)
}

// parse reads a simple query, with or without its {{query ...}} wrapper.
// Several top-level expressions are and-ed, as Logseq does.
func parse(q string) (*node, error) {
	if len(q) > MaxQueryBytes {
		return nil, invalid("longer than %d bytes", MaxQueryBytes)
	}
	s := strings.TrimSpace(q)
	if strings.HasPrefix(s, "{{") {
		if !strings.HasSuffix(s, "}}") {
			return nil, invalid("unclosed {{")
		}
		s = strings.TrimSpace(s[2 : len(s)-2])
		if !strings.HasPrefix(s, "query") || (len(s) > 5 && s[5] != ' ' && s[5] != '\t' && s[5] != '\n') {
			return nil, invalid("only {{query ...}} is supported")
		}
		s = s[5:]
	}
	r := &reader{s: s}
	var top []*node
	for {
		r.space()
		if r.i >= len(r.s) {
			break
		}
		n, err := r.expr(0)
		if err != nil {
			return nil, err
		}
		top = append(top, n)
	}
	switch len(top) {
	case 0:
		return nil, invalid("empty query")
	case 1:
		return top[0], nil
	}
	// Bare words only ({{query what I look for}}): one full-text phrase.
	words := make([]string, 0, len(top))
	for _, n := range top {
		if n.kind != nAtom {
			words = nil
			break
		}
		words = append(words, n.text)
	}
	if words != nil {
		return &node{kind: nStr, text: strings.Join(words, " ")}, nil
	}
	return &node{kind: nList, items: append([]*node{{kind: nAtom, text: "and"}}, top...)}, nil
}

type reader struct {
	s     string
	i     int
	nodes int
}

func (r *reader) space() {
	for r.i < len(r.s) && (r.s[r.i] == ' ' || r.s[r.i] == '\t' || r.s[r.i] == '\n' || r.s[r.i] == '\r' || r.s[r.i] == ',') {
		r.i++
	}
}

func (r *reader) expr(depth int) (*node, error) {
	if depth > MaxDepth {
		return nil, invalid("nested deeper than %d", MaxDepth)
	}
	r.nodes++
	if r.nodes > MaxNodes {
		return nil, invalid("more than %d expressions", MaxNodes)
	}
	s := r.s
	if u, ok := blockRef(s[r.i:]); ok {
		r.i += len(u) + 4
		return &node{kind: nBlockRef, text: strings.ToLower(u)}, nil
	}
	switch {
	case s[r.i] == '(':
		r.i++
		n := &node{kind: nList}
		for {
			r.space()
			if r.i >= len(s) {
				return nil, invalid("unclosed (")
			}
			if s[r.i] == ')' {
				r.i++
				return n, nil
			}
			c, err := r.expr(depth + 1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, c)
		}
	case s[r.i] == ')':
		return nil, invalid("unexpected ) at byte %d", r.i)
	case s[r.i] == '"':
		var b strings.Builder
		for j := r.i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				if j+1 < len(s) {
					j++
					b.WriteByte(s[j])
				}
			case '"':
				r.i = j + 1
				return &node{kind: nStr, text: b.String()}, nil
			default:
				b.WriteByte(s[j])
			}
		}
		return nil, invalid("unclosed string")
	case strings.HasPrefix(s[r.i:], "[["):
		t, err := r.brackets()
		if err != nil {
			return nil, err
		}
		return &node{kind: nRef, text: t}, nil
	case strings.HasPrefix(s[r.i:], "#[["):
		r.i++
		t, err := r.brackets()
		if err != nil {
			return nil, err
		}
		return &node{kind: nTag, text: t}, nil
	}
	start := r.i
	for r.i < len(s) && !strings.ContainsRune(" \t\r\n,()\"", rune(s[r.i])) {
		r.i++
	}
	w := s[start:r.i]
	if strings.HasPrefix(w, "#") && len(w) > 1 {
		return &node{kind: nTag, text: w[1:]}, nil
	}
	return &node{kind: nAtom, text: w}, nil
}

// brackets reads [[...]] (nested pairs allowed) at r.i and returns the inside.
func (r *reader) brackets() (string, error) {
	s := r.s
	depth := 0
	for j := r.i; j+1 < len(s); j++ {
		switch {
		case s[j] == '[' && s[j+1] == '[':
			depth++
			j++
		case s[j] == ']' && s[j+1] == ']':
			depth--
			j++
			if depth == 0 {
				t := strings.TrimSpace(s[r.i+2 : j-1])
				r.i = j + 1
				if t == "" {
					return "", invalid("empty [[ ]]")
				}
				return t, nil
			}
		}
	}
	return "", invalid("unclosed [[")
}

// blockRef reads a block reference ((uuid)) at the start of s: a uuid in
// its 8-4-4-4-12 hex form between (( and )).
func blockRef(s string) (string, bool) {
	const n = 36
	if len(s) < n+4 || s[:2] != "((" || s[n+2:n+4] != "))" {
		return "", false
	}
	u := s[2 : n+2]
	for i := 0; i < n; i++ {
		c := u[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return "", false
			}
		}
	}
	return u, true
}
