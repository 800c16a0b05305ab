package datalog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"olympos.io/encoding/edn"

	"github.com/loci-dev/loci/internal/query/graph"
)

// sig is a function's arity; src functions take $ first and an
// attribute third.
type sig struct {
	min, max int // max -1: any
	src      bool
}

func (s sig) arity() string {
	switch {
	case s.max == s.min:
		return fmt.Sprintf("%d argument(s)", s.min)
	case s.max < 0:
		return fmt.Sprintf("at least %d arguments", s.min)
	}
	return fmt.Sprintf("%d to %d arguments", s.min, s.max)
}

// maxStr caps the strings str makes (repeated str could double a string
// per clause).
const maxStr = 64 << 10

// funcs are the functions and predicates a clause may call.
var funcs = map[string]sig{
	"=": {2, -1, false}, "==": {2, -1, false}, "not=": {2, -1, false}, "!=": {2, -1, false},
	"<": {2, -1, false}, ">": {2, -1, false}, "<=": {2, -1, false}, ">=": {2, -1, false},
	"contains?": {2, 2, false}, "get": {2, 3, false},
	"clojure.string/includes?": {2, 2, false}, "clojure.string/starts-with?": {2, 2, false},
	"clojure.string/ends-with?": {2, 2, false}, "clojure.string/blank?": {1, 1, false},
	"clojure.string/lower-case": {1, 1, false}, "clojure.string/upper-case": {1, 1, false},
	"str": {0, -1, false}, "ground": {1, 1, false}, "identity": {1, 1, false},
	"nil?": {1, 1, false}, "some?": {1, 1, false}, "not": {1, 1, false}, "true?": {1, 1, false}, "false?": {1, 1, false},
	"empty?": {1, 1, false}, "not-empty": {1, 1, false},
	"re-pattern": {1, 1, false}, "re-find": {2, 2, false}, "re-matches": {2, 2, false},
	"missing?": {3, 3, true}, "get-else": {4, 4, true},
	"loci/property-matches?": {2, 2, false},
	"subs":                   {2, 3, false}, "count": {1, 1, false}, "name": {1, 1, false},
	"+": {0, -1, false}, "-": {1, -1, false}, "*": {0, -1, false}, "inc": {1, 1, false}, "dec": {1, 1, false},
}

// call applies a function to its arguments' values; nil means no value
// (a false predicate, or no binding).
func (d *db) call(name string, args []any) (any, error) {
	switch name {
	case "=", "==", "not=", "!=":
		eq := true
		for i := 1; i < len(args); i++ {
			if !equal(args[0], args[i], name == "==") {
				eq = false
				break
			}
		}
		if name == "not=" || name == "!=" {
			return truth(!eq), nil
		}
		return truth(eq), nil
	case "<", ">", "<=", ">=":
		for i := 1; i < len(args); i++ {
			c, ok := compare(args[i-1], args[i])
			if !ok {
				return nil, nil
			}
			switch {
			case name == "<" && c >= 0, name == ">" && c <= 0, name == "<=" && c > 0, name == ">=" && c < 0:
				return nil, nil
			}
		}
		return true, nil
	case "contains?":
		return truth(contains(args[0], args[1])), nil
	case "get":
		var v any
		if pm, ok := args[0].(*propMap); ok {
			switch k := args[1].(type) {
			case edn.Keyword:
				v = pm.m[normKey(string(k))]
			case string:
				v = pm.m[normKey(k)]
			}
		}
		if v == nil && len(args) == 3 {
			v = args[2]
		}
		return v, nil
	case "clojure.string/includes?", "clojure.string/starts-with?", "clojure.string/ends-with?":
		s, ok1 := args[0].(string)
		t, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, nil
		}
		switch name {
		case "clojure.string/includes?":
			return truth(strings.Contains(s, t)), nil
		case "clojure.string/starts-with?":
			return truth(strings.HasPrefix(s, t)), nil
		}
		return truth(strings.HasSuffix(s, t)), nil
	case "clojure.string/blank?":
		s, ok := args[0].(string)
		return truth(ok && strings.TrimSpace(s) == "" || args[0] == nil), nil
	case "clojure.string/lower-case", "clojure.string/upper-case":
		s, ok := args[0].(string)
		if !ok {
			return nil, nil
		}
		if name == "clojure.string/lower-case" {
			return strings.ToLower(s), nil
		}
		return strings.ToUpper(s), nil
	case "str":
		var b strings.Builder
		for _, a := range args {
			b.WriteString(d.str(a))
			if b.Len() > maxStr {
				return nil, unsupported("str longer than 64 KiB", "(str) made a string longer than %d bytes", maxStr)
			}
		}
		return b.String(), nil
	case "ground", "identity":
		return args[0], nil
	case "nil?":
		return truth(args[0] == nil), nil
	case "some?":
		return truth(args[0] != nil), nil
	case "not":
		return truth(args[0] == nil || args[0] == false), nil
	case "true?":
		return truth(args[0] == true), nil
	case "false?":
		return truth(args[0] == false), nil
	case "empty?", "not-empty":
		n := -1
		switch v := args[0].(type) {
		case string:
			n = len(v)
		case *setVal:
			n = len(v.m)
		case *propMap:
			n = len(v.m)
		}
		if n < 0 {
			return nil, nil
		}
		if name == "empty?" {
			return truth(n == 0), nil
		}
		if n == 0 {
			return nil, nil
		}
		return args[0], nil
	case "re-pattern":
		s, ok := args[0].(string)
		if !ok {
			return nil, nil
		}
		if re, ok := d.regexps[s]; ok {
			return re, nil
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, invalid("(re-pattern): %v", err)
		}
		if len(d.regexps) < 64 {
			d.regexps[s] = re
		}
		return re, nil
	case "re-find", "re-matches":
		re, ok1 := args[0].(*regexp.Regexp)
		s, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, nil
		}
		loc := re.FindStringIndex(s)
		if loc == nil || name == "re-matches" && (loc[0] != 0 || loc[1] != len(s)) {
			return nil, nil
		}
		return s[loc[0]:loc[1]], nil
	case "missing?", "get-else":
		e, ok := args[1].(*entity)
		var vs []Val
		if ok {
			vs = d.attr(string(args[2].(edn.Keyword))).byE[e.id]
		}
		if name == "missing?" {
			return truth(ok && len(vs) == 0), nil
		}
		if len(vs) > 0 {
			return d.vals[vs[0]], nil
		}
		return args[3], nil
	case "subs":
		s, ok := args[0].(string)
		if !ok {
			return nil, nil
		}
		rs := []rune(s)
		from, ok1 := args[1].(int64)
		to, ok2 := int64(len(rs)), true
		if len(args) == 3 {
			to, ok2 = args[2].(int64)
		}
		if !ok1 || !ok2 || from < 0 || to < from || to > int64(len(rs)) {
			return nil, nil // Clojure throws; the row is dropped
		}
		return string(rs[from:to]), nil
	case "count":
		switch v := args[0].(type) {
		case string:
			return int64(len([]rune(v))), nil
		case *setVal:
			return int64(len(v.m)), nil
		case *propMap:
			return int64(len(v.m)), nil
		}
		return nil, nil
	case "name":
		switch v := args[0].(type) {
		case edn.Keyword:
			if i := strings.LastIndex(string(v), "/"); i >= 0 && i < len(v)-1 {
				return string(v[i+1:]), nil
			}
			return string(v), nil
		case string:
			return v, nil
		}
		return nil, nil
	case "+", "-", "*", "inc", "dec":
		return arith(name, args), nil
	case "loci/property-matches?":
		return truth(propertyMatches(args[0], args[1])), nil
	}
	return nil, unsupported("function "+name, "the function %s is not supported", name)
}

// truth is true, or nil for false (a predicate's false drops the row).
func truth(b bool) any {
	if b {
		return true
	}
	return nil
}

func (d *db) str(a any) string {
	switch v := a.(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case edn.Keyword:
		return ":" + string(v)
	case *entity:
		return strconv.Itoa(int(v.id))
	}
	return fmt.Sprint(d.display(a))
}

func num(a any) (float64, bool) {
	switch v := a.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// equal is Clojure's =: the same type and value (== compares numbers
// across int and float).
func equal(a, b any, numeric bool) bool {
	if numeric {
		x, ok1 := num(a)
		y, ok2 := num(b)
		if ok1 && ok2 {
			return x == y
		}
	}
	switch x := a.(type) {
	case *setVal:
		y, ok := b.(*setVal)
		if !ok || len(x.m) != len(y.m) {
			return false
		}
		if x.names || y.names {
			x, y = foldSet(x), foldSet(y)
		}
		for k := range x.m {
			if !y.m[k] {
				return false
			}
		}
		return true
	case *propMap:
		y, ok := b.(*propMap)
		if !ok || len(x.m) != len(y.m) {
			return false
		}
		for k, v := range x.m {
			if w, ok := y.m[k]; !ok || w != v {
				return false
			}
		}
		return true
	}
	return a == b
}

// compare orders two numbers or two strings; false for anything else.
func compare(a, b any) (int, bool) {
	if x, ok := num(a); ok {
		y, ok := num(b)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	x, ok1 := a.(string)
	y, ok2 := b.(string)
	if ok1 && ok2 {
		return strings.Compare(x, y), true
	}
	x1, ok1 := a.(edn.Keyword)
	y1, ok2 := b.(edn.Keyword)
	if ok1 && ok2 {
		return strings.Compare(string(x1), string(y1)), true
	}
	return 0, false
}

// contains is Clojure's contains? on a set or a property map (a key);
// on a property value (text) it asks whether x is one of its
// comma-separated items, case-insensitively (Logseq keeps such values as
// sets of page names).
func contains(coll, x any) bool {
	switch c := coll.(type) {
	case *setVal:
		if c.names {
			s, ok := x.(string)
			return ok && c.m[strings.ToLower(strings.TrimSpace(s))]
		}
		return c.m[x]
	case *propMap:
		switch k := x.(type) {
		case edn.Keyword:
			_, ok := c.m[normKey(string(k))]
			return ok
		case string:
			_, ok := c.m[normKey(k)]
			return ok
		}
	case string:
		s, ok := x.(string)
		if !ok {
			return false
		}
		s = strings.ToLower(strings.TrimSpace(s))
		for _, it := range graph.ListValues(c) {
			if it == s {
				return true
			}
		}
	}
	return false
}

// foldSet is s with its strings lower-cased (s itself when it is a set
// of names, already folded).
func foldSet(s *setVal) *setVal {
	if s.names {
		return s
	}
	out := &setVal{m: make(map[any]bool, len(s.m))}
	for k := range s.m {
		if t, ok := k.(string); ok {
			k = strings.ToLower(strings.TrimSpace(t))
		}
		out.m[k] = true
	}
	return out
}

// propertyMatches is Logseq's (property ?b :k v) test, (or [(= ?v val)]
// [(contains? ?v val)]): the value equals v (as text, case-insensitively),
// or one of its page names or comma-separated items does.
func propertyMatches(val, want any) bool {
	if val == nil {
		return false
	}
	if equal(val, want, true) {
		return true
	}
	if s, ok := val.(*setVal); ok {
		switch w := want.(type) {
		case string:
			return contains(s, w)
		case edn.Keyword:
			return contains(s, string(w))
		case int64, float64, bool:
			return contains(s, fmt.Sprint(w))
		}
		return false
	}
	var w string
	switch x := want.(type) {
	case string:
		w = x
	case edn.Keyword:
		w = string(x)
	case int64, float64, bool:
		w = fmt.Sprint(x)
	default:
		return false
	}
	w = strings.ToLower(strings.TrimSpace(w))
	v := strings.ToLower(strings.TrimSpace(fmt.Sprint(val)))
	if v == w {
		return true
	}
	if s, ok := val.(string); ok {
		return contains(s, w)
	}
	return false
}

// arith is +, -, *, inc and dec over integers and decimals (nil when an
// argument is not a number).
func arith(op string, args []any) any {
	switch op {
	case "inc":
		args, op = []any{args[0], int64(1)}, "+"
	case "dec":
		args, op = []any{args[0], int64(1)}, "-"
	}
	allInt := true
	for _, a := range args {
		if _, ok := num(a); !ok {
			return nil
		}
		if _, ok := a.(int64); !ok {
			allInt = false
		}
	}
	if allInt {
		ns := make([]int64, len(args))
		for i, a := range args {
			ns[i] = a.(int64)
		}
		return fold(op, ns)
	}
	ns := make([]float64, len(args))
	for i, a := range args {
		ns[i], _ = num(a)
	}
	return fold(op, ns)
}

// fold applies +, * or - (negation for one argument) across ns.
func fold[T int64 | float64](op string, ns []T) T {
	var acc T
	if op == "*" {
		acc = 1
	}
	for i, n := range ns {
		switch {
		case op == "+":
			acc += n
		case op == "*":
			acc *= n
		case i == 0 && len(ns) == 1:
			acc = -n
		case i == 0:
			acc = n
		default:
			acc -= n
		}
	}
	return acc
}
