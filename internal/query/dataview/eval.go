package dataview

import (
	"context"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/query"
)

func init() { query.Register(query.Dataview, Eval) }

// link is a link value: to a note (path set) or unresolved (name only).
type link struct{ path, name string }

func (l link) String() string { return "[[" + l.name + "]]" }

func (l link) key() string {
	if l.path != "" {
		return strings.ToLower(l.path)
	}
	return "?" + strings.ToLower(l.name)
}

// tagValues is file.tags (with parents: #a/b gives #a/b and #a) or
// file.etags (the tags as written).
func tagValues(tags []string, parents bool) []any {
	var l []any
	seen := map[string]bool{}
	for _, t := range tags {
		forms := []string{t}
		if parents {
			parts := strings.Split(t, "/")
			for i := 1; i < len(parts); i++ {
				forms = append(forms, strings.Join(parts[:i], "/"))
			}
		}
		for _, f := range forms {
			if !seen[strings.ToLower(f)] {
				seen[strings.ToLower(f)] = true
				l = append(l, "#"+f)
			}
		}
	}
	return l
}

func linkValues(ls []link) []any {
	l := make([]any, len(ls))
	for i, x := range ls {
		l[i] = x
	}
	return l
}

// addValue sets m[k] to v, or appends v to what m[k] holds (a second
// value makes a list).
func addValue(m map[string]any, k string, v any) {
	old, ok := m[k]
	if !ok {
		m[k] = v
		return
	}
	if l, ok := old.(multi); ok {
		m[k] = append(l, v)
		return
	}
	m[k] = multi{old, v}
}

// multi is the list of a key's values when it occurs more than once (a
// []any underneath, so it reads as a list everywhere).
type multi = []any

// fieldValue types an inline field's value as Dataview does: a number, a
// boolean, a date, a [[link]], a "quoted" string, a list of those
// separated by commas, else the text as written. Empty is null.
func (m *model) fieldValue(s string) any {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if v, ok := m.literal(s); ok {
		return v
	}
	if strings.Contains(s, ",") {
		parts := splitTop(s)
		if len(parts) > 1 {
			var out []any
			for _, p := range parts {
				v, ok := m.literal(strings.TrimSpace(p))
				if !ok {
					return s
				}
				out = append(out, v)
			}
			return out
		}
	}
	return s
}

// literal reads one typed value (not plain text).
func (m *model) literal(s string) (any, bool) {
	switch strings.ToLower(s) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && !strings.Contains(s[1:len(s)-1], `"`) {
		return s[1 : len(s)-1], true
	}
	if len(s) > 4 && strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]]") && !strings.Contains(s[2:len(s)-2], "]]") {
		return m.linkValue(s[2 : len(s)-2]), true
	}
	if t, ok := asTime(s); ok {
		return t, true
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '-' || c == '.' {
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, true
		}
	}
	return nil, false
}

// splitTop splits s at the commas outside [[links]] and "quotes".
func splitTop(s string) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '[':
			depth++
		case c == ']':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// resolve finds the note a [[target]] names (nil when none or hidden).
func (m *model) resolve(target string) *note {
	t, _, _ := strings.Cut(target, "|")
	t, _, _ = strings.Cut(t, "#")
	t = strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), ".md")))
	return m.keyMap()[t]
}

func (m *model) linkValue(target string) link {
	if n := m.resolve(target); n != nil {
		return n.link()
	}
	t, _, _ := strings.Cut(target, "|")
	t, _, _ = strings.Cut(t, "#")
	return link{name: strings.TrimSpace(t)}
}

// sourceSet evaluates a FROM source to the set of note ids it names.
func (m *model) sourceSet(s Source) map[int64]bool {
	out := map[int64]bool{}
	switch s := s.(type) {
	case srcTag:
		want := strings.ToLower(s.tag)
		for _, n := range m.notes {
			for _, t := range n.tags {
				t = strings.ToLower(t)
				if t == want || strings.HasPrefix(t, want+"/") {
					out[n.id] = true
				}
			}
		}
	case srcFolder:
		f := strings.Trim(s.folder, "/")
		for _, n := range m.notes {
			if f == "" || strings.HasPrefix(n.path, f+"/") || n.path == f || strings.TrimSuffix(n.path, ".md") == f {
				out[n.id] = true
			}
		}
	case srcLinksTo:
		if t := m.resolve(s.note); t != nil {
			for _, n := range t.inNotes {
				out[n.id] = true
			}
		}
	case srcOutgoing:
		if t := m.resolve(s.note); t != nil {
			for _, n := range t.outNotes {
				out[n.id] = true
			}
		}
	case srcNot:
		in := m.sourceSet(s.s)
		for _, n := range m.notes {
			if !in[n.id] {
				out[n.id] = true
			}
		}
	case srcAnd:
		a, b := m.sourceSet(s.a), m.sourceSet(s.b)
		for id := range a {
			if b[id] {
				out[id] = true
			}
		}
	case srcOr:
		for id := range m.sourceSet(s.a) {
			out[id] = true
		}
		for id := range m.sourceSet(s.b) {
			out[id] = true
		}
	}
	return out
}

// item is what an expression is evaluated on: a note, a task in it, or
// (after GROUP BY) a group; vars holds FLATTEN's names.
type item struct {
	n     *note
	task  *index.TaskRow
	group *group
	vars  map[string]any
}

// group is one GROUP BY group: its key, under name, and its rows.
type group struct {
	name string
	key  any
	rows []item
}

// Eval is the dataview evaluator (query.Evaluator).
func Eval(ctx context.Context, ix *index.Index, src string, opt query.Options) (*query.Result, error) {
	q, err := Parse(src)
	if err != nil {
		return nil, err
	}
	m, err := load(ctx, ix, q, opt)
	if err != nil {
		return nil, err
	}
	return m.run(ctx, q, opt)
}

// run answers q over the model.
func (m *model) run(ctx context.Context, q *Query, opt query.Options) (*query.Result, error) {
	var from map[int64]bool
	if q.From != nil {
		from = m.sourceSet(q.From)
	}
	var items []item
	if q.Kind == "TASK" {
		for i := range m.tasks {
			n := m.byPath[m.tasks[i].Path]
			if n != nil && (from == nil || from[n.id]) {
				items = append(items, item{n: n, task: &m.tasks[i]})
			}
		}
	} else {
		for _, n := range m.notes {
			if from == nil || from[n.id] {
				items = append(items, item{n: n})
			}
		}
	}
	ev := &evaluator{m: m}
	var grouped *Step
	for i, st := range q.Steps {
		if err := query.Check(ctx); err != nil {
			return nil, err
		}
		var err error
		switch st.Kind {
		case "WHERE":
			items, err = ev.where(ctx, items, st.Expr)
		case "SORT":
			items, err = ev.sort(ctx, items, st.Sort)
		case "LIMIT":
			if st.Limit < len(items) {
				items = items[:st.Limit]
			}
		case "GROUP":
			if grouped != nil {
				return nil, unsupported("GROUP BY twice")
			}
			grouped = &q.Steps[i]
			items, err = ev.groupBy(ctx, items, st)
		case "FLATTEN":
			items, err = ev.flatten(ctx, items, st)
		}
		if err != nil {
			return nil, err
		}
	}
	res := &query.Result{Columns: columns(q, grouped), Rows: []query.Row{}}
	add := func(r query.Row) bool {
		if opt.Limit > 0 && len(res.Rows) == opt.Limit {
			res.Truncated = true
			return false
		}
		res.Rows = append(res.Rows, r)
		return true
	}
	for _, it := range items {
		if err := query.Check(ctx); err != nil {
			return nil, err
		}
		if q.Kind == "TASK" {
			var key []any
			if it.group != nil {
				key = []any{output(it.group.key)}
			}
			rows := []item{it}
			if it.group != nil {
				rows = it.group.rows
			}
			for _, r := range rows {
				if r.task == nil {
					continue
				}
				if !add(query.Row{Path: r.n.path, Line: r.task.Line, Block: r.task.Block,
					Values: append(append([]any{}, key...), r.task.Text, r.task.Status, nullIfEmpty(r.task.Due))}) {
					return res, nil
				}
			}
			continue
		}
		row := query.Row{Values: []any{}}
		if it.group == nil {
			row.Path = it.n.path
		}
		if !q.WithoutID {
			if it.group != nil {
				row.Values = append(row.Values, output(it.group.key))
			} else {
				row.Values = append(row.Values, it.n.link().String())
			}
		}
		for _, f := range q.Fields {
			v, err := ev.eval(f.Expr, it)
			if err != nil {
				return nil, err
			}
			row.Values = append(row.Values, output(v))
		}
		if q.Kind == "LIST" && it.group != nil && len(q.Fields) == 0 {
			v, _ := ev.field("rows", it)
			row.Values = append(row.Values, output(v))
		}
		if !add(row) {
			break
		}
	}
	return res, nil
}

func (ev *evaluator) where(ctx context.Context, items []item, cond Expr) ([]item, error) {
	kept := make([]item, 0, len(items))
	for _, it := range items {
		if err := query.Check(ctx); err != nil {
			return nil, err
		}
		v, err := ev.eval(cond, it)
		if err != nil {
			return nil, err
		}
		if truthy(v) {
			kept = append(kept, it)
		}
	}
	return kept, nil
}

func (ev *evaluator) sort(ctx context.Context, items []item, by []SortKey) ([]item, error) {
	keys := make([][]any, len(items))
	for i, it := range items {
		if err := query.Check(ctx); err != nil {
			return nil, err
		}
		for _, k := range by {
			v, err := ev.eval(k.Expr, it)
			if err != nil {
				return nil, err
			}
			keys[i] = append(keys[i], v)
		}
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		for k, sk := range by {
			c := compare(keys[idx[a]][k], keys[idx[b]][k])
			if c != 0 {
				return (c < 0) != sk.Desc
			}
		}
		return false
	})
	sorted := make([]item, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	return sorted, nil
}

// groupBy makes one item per distinct key, in key order (as Dataview
// sorts its groups), each holding its rows in their order so far.
func (ev *evaluator) groupBy(ctx context.Context, items []item, st Step) ([]item, error) {
	var groups []*group
	byKey := map[string]*group{}
	for _, it := range items {
		if err := query.Check(ctx); err != nil {
			return nil, err
		}
		k, err := ev.eval(st.Expr, it)
		if err != nil {
			return nil, err
		}
		ks := groupKey(k)
		g := byKey[ks]
		if g == nil {
			g = &group{name: st.Name, key: k}
			byKey[ks] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, it)
	}
	sort.SliceStable(groups, func(a, b int) bool { return compare(groups[a].key, groups[b].key) < 0 })
	out := make([]item, len(groups))
	for i, g := range groups {
		out[i] = item{group: g}
	}
	return out, nil
}

// groupKey is a value's identity for grouping.
func groupKey(v any) string {
	switch x := v.(type) {
	case link:
		return "l" + x.key()
	case time.Time:
		return "t" + x.UTC().Format(time.RFC3339Nano)
	case []any:
		var b strings.Builder
		b.WriteString("[")
		for _, e := range x {
			b.WriteString(groupKey(e))
			b.WriteString("\x00")
		}
		return b.String()
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// flatten makes one item per element of the value (a list; any other
// value is one element), binding it to the step's name.
func (ev *evaluator) flatten(ctx context.Context, items []item, st Step) ([]item, error) {
	var out []item
	for _, it := range items {
		if err := query.Check(ctx); err != nil {
			return nil, err
		}
		v, err := ev.eval(st.Expr, it)
		if err != nil {
			return nil, err
		}
		vals, ok := v.([]any)
		if !ok {
			vals = []any{v}
		}
		for _, x := range vals {
			c := it
			c.vars = make(map[string]any, len(it.vars)+1)
			for k, v := range it.vars {
				c.vars[k] = v
			}
			c.vars[st.Name] = x
			out = append(out, c)
		}
	}
	return out, nil
}

func columns(q *Query, grouped *Step) []string {
	var cols []string
	if q.Kind == "TASK" {
		if grouped != nil {
			cols = append(cols, grouped.Name)
		}
		return append(cols, "Task", "Status", "Due")
	}
	if !q.WithoutID {
		if grouped != nil {
			cols = append(cols, grouped.Name)
		} else {
			cols = append(cols, "File")
		}
	}
	for _, f := range q.Fields {
		cols = append(cols, f.Name)
	}
	if q.Kind == "LIST" && grouped != nil && len(q.Fields) == 0 {
		cols = append(cols, "rows")
	}
	return cols
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

type evaluator struct{ m *model }

func (e *evaluator) eval(x Expr, it item) (any, error) {
	switch x := x.(type) {
	case eLit:
		return x.v, nil
	case eLink:
		return e.m.linkValue(x.target), nil
	case eField:
		return e.field(x.path, it)
	case eNot:
		v, err := e.eval(x.x, it)
		if err != nil {
			return nil, err
		}
		return !truthy(v), nil
	case eBin:
		a, err := e.eval(x.a, it)
		if err != nil {
			return nil, err
		}
		switch x.op {
		case "and":
			if !truthy(a) {
				return false, nil
			}
			b, err := e.eval(x.b, it)
			return truthy(b), err
		case "or":
			if truthy(a) {
				return true, nil
			}
			b, err := e.eval(x.b, it)
			return truthy(b), err
		}
		b, err := e.eval(x.b, it)
		if err != nil {
			return nil, err
		}
		if a == nil && b != nil || b == nil && a != nil {
			// An ordering against null holds for no row (so that
			// due < date(today) skips tasks without a due date).
			switch x.op {
			case "<", ">", "<=", ">=":
				return false, nil
			}
		}
		c := compare(a, b)
		switch x.op {
		case "=":
			return c == 0, nil
		case "!=":
			return c != 0, nil
		case "<":
			return c < 0, nil
		case ">":
			return c > 0, nil
		case "<=":
			return c <= 0, nil
		case ">=":
			return c >= 0, nil
		}
	case eCall:
		var args []any
		for _, a := range x.args {
			v, err := e.eval(a, it)
			if err != nil {
				return nil, err
			}
			args = append(args, v)
		}
		switch x.fn {
		case "contains", "icontains":
			return contains(args[0], args[1], x.fn == "icontains"), nil
		case "lower", "upper":
			s, ok := args[0].(string)
			if !ok {
				return args[0], nil
			}
			if x.fn == "lower" {
				return strings.ToLower(s), nil
			}
			return strings.ToUpper(s), nil
		case "length":
			switch v := args[0].(type) {
			case []any:
				return float64(len(v)), nil
			case string:
				return float64(len([]rune(v))), nil
			case map[string]any:
				return float64(len(v)), nil
			case nil:
				return float64(0), nil
			}
			return float64(1), nil
		case "sum":
			l, ok := args[0].([]any)
			if !ok {
				return args[0], nil
			}
			s := 0.0
			for _, v := range l {
				if f, ok := v.(float64); ok {
					s += f
				}
			}
			return s, nil
		case "min", "max":
			l, ok := args[0].([]any)
			if !ok {
				return args[0], nil
			}
			var best any
			for _, v := range l {
				if v == nil {
					continue
				}
				if c := compare(v, best); best == nil || (x.fn == "min") == (c < 0) && c != 0 {
					best = v
				}
			}
			return best, nil
		}
	}
	return nil, fmt.Errorf("dataview: cannot evaluate %T", x)
}

var fileFields = map[string]bool{"name": true, "path": true, "folder": true, "ext": true, "link": true, "mtime": true,
	"ctime": true, "mday": true, "day": true, "size": true, "aliases": true, "cday": true, "tags": true, "etags": true, "outlinks": true, "inlinks": true, "frontmatter": true}

func (e *evaluator) field(p string, it item) (any, error) {
	if it.vars != nil {
		if v, ok := it.vars[p]; ok {
			return v, nil
		}
		best := ""
		for name := range it.vars {
			if len(name) > len(best) && strings.HasPrefix(p, name+".") {
				best = name
			}
		}
		if best != "" {
			return e.sub(it.vars[best], p[len(best)+1:])
		}
	}
	if g := it.group; g != nil {
		head, rest, _ := strings.Cut(p, ".")
		switch {
		case p == "key" || p == g.name:
			return g.key, nil
		case head == "rows":
			var out []any
			for _, r := range g.rows {
				var v any
				var err error
				if rest == "" {
					v = r.n.link()
					if r.task != nil {
						v = r.task.Text
					}
				} else if v, err = e.field(rest, r); err != nil {
					return nil, err
				}
				if l, ok := v.([]any); ok {
					out = append(out, l...)
				} else {
					out = append(out, v)
				}
			}
			if out == nil {
				out = []any{}
			}
			return out, nil
		}
		if strings.HasPrefix(p, g.name+".") {
			return e.sub(g.key, strings.TrimPrefix(p, g.name+"."))
		}
		return nil, nil
	}
	n := it.n
	if rest, ok := strings.CutPrefix(p, "file."); ok {
		name, sub, _ := strings.Cut(rest, ".")
		if !fileFields[name] {
			return nil, unsupported("field file." + name)
		}
		var v any
		switch name {
		case "name":
			v = n.name
		case "path":
			v = n.path
		case "folder":
			v = n.folder
		case "ext":
			v = strings.TrimPrefix(path.Ext(n.path), ".")
		case "link":
			v = n.link()
		case "mtime":
			v = n.mtime
		case "ctime":
			v = n.ctime
		case "mday":
			v = day(n.mtime)
		case "day":
			v = fileDay(n.name, n.frontmatter())
		case "size":
			v = float64(n.size)
		case "aliases":
			v = append([]any{}, n.aliases...)
		case "cday":
			v = day(n.ctime)
		case "tags":
			v = n.tagList
		case "etags":
			v = n.etagList
		case "outlinks":
			v = n.outLinks(e.m)
		case "inlinks":
			v = n.inLinks()
		case "frontmatter":
			v = anyMap(n.frontmatter())
		}
		if sub != "" {
			return e.sub(v, sub)
		}
		return v, nil
	}
	if t := it.task; t != nil {
		switch p {
		case "text":
			return t.Text, nil
		case "status":
			return t.Marker, nil
		case "completed":
			return t.Status == "done", nil
		case "checked":
			return t.Status != "todo", nil
		case "line":
			return float64(t.Line), nil
		case "due":
			return dateOrNull(t.Due), nil
		case "scheduled":
			return dateOrNull(t.Scheduled), nil
		case "start":
			return dateOrNull(t.Start), nil
		case "completion":
			return dateOrNull(t.Done), nil
		case "priority":
			return nullIfEmpty(t.Priority), nil
		}
		if v, ok := n.lineFields[t.Line][markdown.NormalizeFieldKey(p)]; ok {
			return v, nil
		}
	}
	if head, rest, dotted := strings.Cut(p, "."); dotted {
		// A nested frontmatter key, else a field of the value: an
		// object's key or a linked note's field (author.file.name).
		if v := fmValue(n.frontmatter(), p); v != nil {
			return v, nil
		}
		if v := n.value(head); v != nil {
			return e.sub(v, rest)
		}
		return nil, nil
	}
	return n.value(p), nil
}

// value is a note's field p: its frontmatter value and its inline
// fields' values merged (one value as is, several as a list, the
// frontmatter's first), looked up by the key as written or normalized.
func (n *note) value(p string) any {
	fv := fmValue(n.frontmatter(), p)
	if n.fields == nil || strings.Contains(p, ".") {
		return fv
	}
	iv, ok := n.fields[markdown.NormalizeFieldKey(p)]
	if !ok {
		return fv
	}
	if fv == nil {
		return iv
	}
	out := []any{}
	if l, ok := fv.([]any); ok {
		out = append(out, l...)
	} else {
		out = append(out, fv)
	}
	if l, ok := iv.(multi); ok {
		return append(out, l...)
	}
	return append(out, iv)
}

// sub reads a dotted path inside a value: an object's key, or (on a
// link) the linked note's field.
func (e *evaluator) sub(v any, p string) (any, error) {
	if s, ok := v.(string); ok && len(s) > 4 && strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]]") {
		v = e.m.linkValue(s[2 : len(s)-2]) // a link written in frontmatter
	}
	if l, ok := v.(link); ok && l.path != "" {
		if n := e.m.byPath[l.path]; n != nil {
			return e.field(p, item{n: n})
		}
		return nil, nil
	}
	return dig(v, p), nil
}

// fileDay is Dataview's file.day: a date the file name starts with
// (2026-11-20, or Logseq's 2026_11_20), else the frontmatter date field.
func fileDay(name string, fm map[string]any) any {
	if len(name) >= 10 {
		if t, err := time.Parse("2006-01-02", strings.ReplaceAll(name[:10], "_", "-")); err == nil {
			return t
		}
	}
	if s, ok := fmValue(fm, "date").(string); ok {
		if t, ok := asTime(s); ok {
			return day(t)
		}
	}
	return nil
}

func anyMap(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

func day(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }

func dateOrNull(s string) any {
	if s == "" {
		return nil
	}
	if t, ok := asTime(s); ok {
		return t
	}
	return s
}

// fmValue looks a (dotted) field up in the frontmatter: the key as
// written, else case-insensitively.
func fmValue(fm map[string]any, p string) any {
	if fm == nil {
		return nil
	}
	if v, ok := fm[p]; ok {
		return v
	}
	head, rest, dotted := strings.Cut(p, ".")
	for k, v := range fm {
		if strings.EqualFold(k, p) {
			return v
		}
	}
	if dotted {
		for k, v := range fm {
			if strings.EqualFold(k, head) {
				return dig(v, rest)
			}
		}
	}
	return nil
}

func dig(v any, p string) any {
	for _, k := range strings.Split(p, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = fmValue(m, k)
	}
	return v
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

// asTime reads a date (YYYY-MM-DD) or a date and time.
func asTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 10 || s[4] != '-' {
		return time.Time{}, false
	}
	for _, layout := range []string{"2006-01-02", time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// now is the clock date(today) reads; tests replace it.
var now = time.Now

func parseDateArg(s string) (time.Time, error) {
	t := day(now().UTC())
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "today":
		return t, nil
	case "tomorrow":
		return t.AddDate(0, 0, 1), nil
	case "yesterday":
		return t.AddDate(0, 0, -1), nil
	case "now":
		return now().UTC(), nil
	}
	if d, ok := asTime(s); ok {
		return d, nil
	}
	return time.Time{}, fmt.Errorf("date(%s): use today, tomorrow, yesterday, now or YYYY-MM-DD", s)
}

func rank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case bool:
		return 1
	case float64:
		return 2
	case time.Time:
		return 3
	case string:
		return 4
	case link:
		return 5
	case []any:
		return 6
	}
	return 7
}

// compare orders two values: null first, then by type; numbers, dates,
// strings and links by value (a string that reads as a date compares with
// a date as one).
func compare(a, b any) int {
	if ta, ok := a.(time.Time); ok {
		if s, ok := b.(string); ok {
			if tb, ok := asTime(s); ok {
				b = tb
			}
		}
		_ = ta
	}
	if tb, ok := b.(time.Time); ok {
		if s, ok := a.(string); ok {
			if ta, ok := asTime(s); ok {
				a = ta
			}
		}
		_ = tb
	}
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch x := a.(type) {
	case nil:
		return 0
	case bool:
		y := b.(bool)
		if x == y {
			return 0
		}
		if !x {
			return -1
		}
		return 1
	case float64:
		y := b.(float64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case time.Time:
		return x.Compare(b.(time.Time))
	case string:
		return strings.Compare(x, b.(string))
	case link:
		return strings.Compare(x.key(), b.(link).key())
	case []any:
		y := b.([]any)
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := compare(x[i], y[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(x), len(y))
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func contains(hay, needle any, fold bool) bool {
	eq := func(a, b any) bool {
		if fold {
			if sa, ok := a.(string); ok {
				if sb, ok := b.(string); ok {
					return strings.EqualFold(sa, sb)
				}
			}
		}
		return compare(a, b) == 0
	}
	switch h := hay.(type) {
	case []any:
		for _, x := range h {
			if eq(x, needle) {
				return true
			}
		}
		return false
	case string:
		s, ok := needle.(string)
		if !ok {
			return false
		}
		if fold {
			return strings.Contains(strings.ToLower(h), strings.ToLower(s))
		}
		return strings.Contains(h, s)
	case map[string]any:
		s, ok := needle.(string)
		if !ok {
			return false
		}
		_, ok = h[s]
		return ok
	}
	return eq(hay, needle)
}

// output turns a value into what a row carries (JSON-friendly): links as
// [[name]], dates as YYYY-MM-DD (or RFC 3339 with a time), whole numbers
// as integers.
func output(v any) any {
	switch v := v.(type) {
	case link:
		return v.String()
	case time.Time:
		if v.Equal(day(v)) {
			return v.Format("2006-01-02")
		}
		return v.Format(time.RFC3339)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v)
		}
		return v
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = output(x)
		}
		return out
	}
	return v
}
