package datalog

import (
	"strings"

	"olympos.io/encoding/edn"
)

// Logseq's built-in rules (the ones its advanced queries may call without
// :rules), expanded here into plain clauses with fresh variables.
var ruleArity = map[string][2]int{
	"task": {2, 2}, "priority": {2, 2}, "page-ref": {2, 2}, "between": {3, 3},
	"property": {2, 3}, "page-property": {2, 3}, "has-property": {2, 2}, "has-page-property": {2, 2},
	"page": {2, 2}, "page-tags": {2, 2}, "all-page-tags": {1, 1}, "namespace": {2, 2}, "block-content": {2, 2},
}

func (q *Query) rule(name string, raw []any) ([]*clause, error) {
	ar, ok := ruleArity[name]
	if !ok {
		return nil, unsupported("rule ("+name+")", "(%s ...) is not a supported clause: rules other than Logseq's built-in ones are not supported", name)
	}
	if len(raw) < ar[0] || len(raw) > ar[1] {
		return nil, invalid("(%s) takes %d arguments", name, ar[0])
	}
	args := make([]term, len(raw))
	for i, x := range raw {
		t, err := q.term(x)
		if err != nil {
			return nil, err
		}
		if t.kind == tSrc || t.kind == tBlank && i > 0 {
			return nil, invalid("(%s): unexpected %v", name, x)
		}
		args[i] = t
	}
	e := args[0]
	if e.kind == tConst {
		return nil, invalid("(%s) takes a variable first", name)
	}
	if e.kind == tBlank {
		e = term{kind: tVar, name: q.freshVar()}
	}
	v := func() term { return term{kind: tVar, name: q.freshVar()} }
	pat := func(e term, attr string, val term) *clause {
		return &clause{kind: cPattern, e: e, attr: attr, v: val, vars: varsOf(e, val), text: "(" + name + " ...)"}
	}
	fn := func(f string, out term, args ...term) *clause {
		c := &clause{kind: cFn, fn: f, args: args, out: out, pred: out.kind == tBlank, text: "(" + name + " ...)"}
		c.vars = varsOf(append(append([]term{}, args...), out)...)
		return c
	}
	blank := term{kind: tBlank}
	// name matches a page name: a constant is lower-cased here, a
	// variable at run time.
	pageNamed := func(p, n term) []*clause {
		if n.kind == tConst {
			if s, ok := n.val.(string); ok {
				return []*clause{pat(p, "block/name", term{kind: tConst, val: strings.ToLower(strings.TrimSpace(s))})}
			}
			return []*clause{pat(p, "block/name", n)}
		}
		l := v()
		return []*clause{fn("clojure.string/lower-case", l, n), pat(p, "block/name", l)}
	}
	key := func(t term) (term, error) {
		if t.kind == tConst {
			switch k := t.val.(type) {
			case edn.Keyword:
				return term{kind: tConst, val: edn.Keyword(normKey(string(k)))}, nil
			case string:
				return term{kind: tConst, val: edn.Keyword(normKey(k))}, nil
			}
			return t, invalid("(%s): a property name is a keyword such as :type", name)
		}
		return t, nil
	}
	switch name {
	case "task", "priority":
		m := v()
		attr := "block/marker"
		if name == "priority" {
			attr = "block/priority"
		}
		return []*clause{pat(e, attr, m), fn("contains?", blank, args[1], m)}, nil
	case "page-ref":
		p := v()
		return append([]*clause{pat(e, "block/path-refs", p)}, pageNamed(p, args[1])...), nil
	case "between":
		p, d := v(), v()
		return []*clause{pat(e, "block/page", p), pat(p, "block/journal-day", d),
			fn(">=", blank, d, args[1]), fn("<=", blank, d, args[2])}, nil
	case "property", "page-property", "has-property", "has-page-property":
		k, err := key(args[1])
		if err != nil {
			return nil, err
		}
		pr, val := v(), v()
		out := []*clause{}
		if strings.HasPrefix(name, "page-") || name == "has-page-property" {
			out = append(out, pat(e, "block/name", blank))
		}
		out = append(out, pat(e, "block/properties", pr), fn("get", val, pr, k))
		if len(args) == 3 {
			out = append(out, fn("loci/property-matches?", blank, val, args[2]))
		}
		return out, nil
	case "page":
		p := v()
		return append([]*clause{pat(e, "block/page", p)}, pageNamed(p, args[1])...), nil
	case "page-tags":
		t, n := v(), v()
		return []*clause{pat(e, "block/tags", t), pat(t, "block/name", n), fn("contains?", blank, args[1], n)}, nil
	case "all-page-tags":
		return []*clause{pat(term{kind: tVar, name: q.freshVar()}, "block/tags", e)}, nil
	case "namespace":
		ns := v()
		return append([]*clause{pat(e, "block/namespace", ns)}, pageNamed(ns, args[1])...), nil
	case "block-content":
		c := v()
		return []*clause{pat(e, "block/content", c), fn("clojure.string/includes?", blank, c, args[1])}, nil
	}
	return nil, unsupported("rule ("+name+")", "(%s ...) is not supported", name)
}
