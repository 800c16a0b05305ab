package dataview

import (
	"context"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/index"
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

type note struct {
	id                 int64
	path, name, folder string
	mtime, ctime       time.Time
	size               int64
	day                any // file.day: a date in the file name (or the date field), else nil
	fm                 map[string]any
	tags               []string // as written, without '#', deduplicated
	aliases            []any
	out, in            []link
	outIDs             map[int64]bool
	inIDs              map[int64]bool
}

func (n *note) link() link { return link{n.path, n.name} }

// model is the part of the index a query reads, with hidden notes left out.
type model struct {
	notes  []*note
	byID   map[int64]*note
	byPath map[string]*note
	keys   map[string]*note // path without .md, file name and title, lower-cased
}

func load(ctx context.Context, ix *index.Index, opt query.Options) (*model, error) {
	list, err := ix.ListNotes(ctx, true)
	if err != nil {
		return nil, err
	}
	m := &model{byID: map[int64]*note{}, byPath: map[string]*note{}, keys: map[string]*note{}}
	for _, s := range list {
		if !opt.Shows(s.Path) {
			continue
		}
		n := &note{id: s.ID, path: s.Path, fm: s.Frontmatter, outIDs: map[int64]bool{}, inIDs: map[int64]bool{}}
		n.name = strings.TrimSuffix(path.Base(s.Path), path.Ext(s.Path))
		if d := path.Dir(s.Path); d != "." {
			n.folder = d
		}
		n.mtime = time.Unix(0, s.ModTime).UTC()
		n.ctime = n.mtime
		if t, ok := asTime(s.Created); ok {
			n.ctime = t
		}
		n.day = fileDay(n.name, s.Frontmatter)
		m.notes = append(m.notes, n)
		m.byID[n.id] = n
		m.byPath[n.path] = n
		for _, k := range []string{strings.ToLower(n.name), strings.ToLower(s.Title), strings.ToLower(strings.TrimSuffix(s.Path, path.Ext(s.Path)))} {
			if _, taken := m.keys[k]; !taken || k == strings.ToLower(strings.TrimSuffix(s.Path, path.Ext(s.Path))) {
				m.keys[k] = n
			}
		}
	}
	if err := query.Check(ctx); err != nil {
		return nil, err
	}
	rows, err := ix.DB.QueryContext(ctx, `SELECT id, size FROM notes`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, size int64
		if err := rows.Scan(&id, &size); err != nil {
			rows.Close()
			return nil, err
		}
		if n := m.byID[id]; n != nil {
			n.size = size
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = ix.DB.QueryContext(ctx, `SELECT note_id, alias FROM aliases ORDER BY rowid`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var a string
		if err := rows.Scan(&id, &a); err != nil {
			rows.Close()
			return nil, err
		}
		if n := m.byID[id]; n != nil {
			n.aliases = append(n.aliases, a)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = ix.DB.QueryContext(ctx, `SELECT note_id, tag FROM tags ORDER BY note_id, line`)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for rows.Next() {
		var id int64
		var tag string
		if err := rows.Scan(&id, &tag); err != nil {
			rows.Close()
			return nil, err
		}
		n := m.byID[id]
		k := fmt.Sprint(id, "\x00", strings.ToLower(tag))
		if n == nil || seen[k] {
			continue
		}
		seen[k] = true
		n.tags = append(n.tags, tag)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = ix.DB.QueryContext(ctx, `SELECT src_id, target, dst_id FROM links
		WHERE kind IN ('wikilink','embed','markdown','typed') ORDER BY src_id, line`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	outSeen := map[string]bool{}
	for rows.Next() {
		var src int64
		var target string
		var dst *int64
		if err := rows.Scan(&src, &target, &dst); err != nil {
			return nil, err
		}
		n := m.byID[src]
		if n == nil {
			continue
		}
		var l link
		if dst != nil {
			d := m.byID[*dst]
			if d == nil {
				continue // a hidden note: neither named nor counted
			}
			l = d.link()
			if !d.inIDs[src] {
				d.inIDs[src] = true
				d.in = append(d.in, n.link())
			}
			n.outIDs[d.id] = true
		} else {
			t, _, _ := strings.Cut(target, "#")
			l = link{name: strings.TrimSuffix(path.Base(t), ".md")}
		}
		if k := fmt.Sprint(src, "\x00", l.key()); !outSeen[k] {
			outSeen[k] = true
			n.out = append(n.out, l)
		}
	}
	return m, rows.Err()
}

// resolve finds the note a [[target]] names (nil when none or hidden).
func (m *model) resolve(target string) *note {
	t, _, _ := strings.Cut(target, "|")
	t, _, _ = strings.Cut(t, "#")
	t = strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), ".md")))
	return m.keys[t]
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
			for id := range t.inIDs {
				out[id] = true
			}
		}
	case srcOutgoing:
		if t := m.resolve(s.note); t != nil {
			for id := range t.outIDs {
				out[id] = true
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

// item is what an expression is evaluated on: a note, or a task in it.
type item struct {
	n    *note
	task *index.TaskRow
}

// Eval is the dataview evaluator (query.Evaluator).
func Eval(ctx context.Context, ix *index.Index, src string, opt query.Options) (*query.Result, error) {
	q, err := Parse(src)
	if err != nil {
		return nil, err
	}
	m, err := load(ctx, ix, opt)
	if err != nil {
		return nil, err
	}
	var tasks []index.TaskRow
	if q.Kind == "TASK" {
		if tasks, err = ix.Tasks(ctx, index.TaskFilter{}); err != nil {
			return nil, err
		}
	}
	return m.run(ctx, q, tasks, opt)
}

// run answers q over the model (and, for TASK, the index's tasks).
func (m *model) run(ctx context.Context, q *Query, tasks []index.TaskRow, opt query.Options) (*query.Result, error) {
	var from map[int64]bool
	if q.From != nil {
		from = m.sourceSet(q.From)
	}
	var items []item
	if q.Kind == "TASK" {
		sort.SliceStable(tasks, func(i, j int) bool {
			if tasks[i].Path != tasks[j].Path {
				return tasks[i].Path < tasks[j].Path
			}
			return tasks[i].Line < tasks[j].Line
		})
		for i := range tasks {
			n := m.byPath[tasks[i].Path]
			if n != nil && (from == nil || from[n.id]) {
				items = append(items, item{n, &tasks[i]})
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
	kept := items[:0]
	for _, it := range items {
		if err := query.Check(ctx); err != nil {
			return nil, err
		}
		ok := true
		for _, w := range q.Where {
			v, err := ev.eval(w, it)
			if err != nil {
				return nil, err
			}
			if !truthy(v) {
				ok = false
				break
			}
		}
		if ok {
			kept = append(kept, it)
		}
	}
	items = kept
	if len(q.Sort) > 0 {
		keys := make([][]any, len(items))
		for i, it := range items {
			if err := query.Check(ctx); err != nil {
				return nil, err
			}
			for _, k := range q.Sort {
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
			for k, sk := range q.Sort {
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
		items = sorted
	}
	limit := opt.Limit
	res := &query.Result{Columns: columns(q), Rows: []query.Row{}}
	if q.Limit > 0 && q.Limit < len(items) {
		items = items[:q.Limit]
	}
	for _, it := range items {
		if err := query.Check(ctx); err != nil {
			return nil, err
		}
		if limit > 0 && len(res.Rows) == limit {
			res.Truncated = true
			break
		}
		row := query.Row{Path: it.n.path, Values: []any{}}
		if it.task != nil {
			row.Line, row.Block = it.task.Line, it.task.Block
			row.Values = append(row.Values, it.task.Text, it.task.Status, nullIfEmpty(it.task.Due))
		} else {
			if !q.WithoutID {
				row.Values = append(row.Values, it.n.link().String())
			}
			for _, f := range q.Fields {
				v, err := ev.eval(f.Expr, it)
				if err != nil {
					return nil, err
				}
				row.Values = append(row.Values, output(v))
			}
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

func columns(q *Query) []string {
	if q.Kind == "TASK" {
		return []string{"Task", "Status", "Due"}
	}
	var cols []string
	if !q.WithoutID {
		cols = append(cols, "File")
	}
	for _, f := range q.Fields {
		cols = append(cols, f.Name)
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
		}
	}
	return nil, fmt.Errorf("dataview: cannot evaluate %T", x)
}

var fileFields = map[string]bool{"name": true, "path": true, "folder": true, "ext": true, "link": true, "mtime": true,
	"ctime": true, "mday": true, "day": true, "size": true, "aliases": true, "cday": true, "tags": true, "etags": true, "outlinks": true, "inlinks": true, "frontmatter": true}

func (e *evaluator) field(p string, it item) (any, error) {
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
			v = n.day
		case "size":
			v = float64(n.size)
		case "aliases":
			v = append([]any{}, n.aliases...)
		case "cday":
			v = day(n.ctime)
		case "tags", "etags":
			var l []any
			seen := map[string]bool{}
			for _, t := range n.tags {
				forms := []string{t}
				if name == "tags" {
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
			v = l
		case "outlinks", "inlinks":
			ls := n.out
			if name == "inlinks" {
				ls = n.in
			}
			l := make([]any, len(ls))
			for i, x := range ls {
				l[i] = x
			}
			v = l
		case "frontmatter":
			v = anyMap(n.fm)
		}
		if sub != "" {
			return dig(v, sub), nil
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
	}
	return fmValue(n.fm, p), nil
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
