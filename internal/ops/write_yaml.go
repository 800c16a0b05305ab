package ops

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/loci-dev/loci/internal/errs"
)

// The frontmatter editor changes YAML frontmatter by replacing the lines of
// one top-level entry (key and value) and nothing else: key order, comments,
// quoting, blank lines and every byte of the other entries and of the body
// stay as they were. The YAML parser is only used to find the entries' line
// spans; new values are rendered with the style of the value they replace.

// fmEntry is one top-level key of the frontmatter and its lines.
type fmEntry struct {
	key        string
	keyNode    *yaml.Node
	val        *yaml.Node
	start, end int // 0-based line indexes in the note, inclusive
}

// fmBlock is a note's YAML frontmatter.
type fmBlock struct {
	present     bool
	open, close int // 0-based lines of the fences
	entries     []fmEntry
}

// isFence reports whether line is fence followed only by spaces or tabs.
func isFence(line, fence string) bool {
	return strings.TrimRight(line, " \t\r") == fence
}

// parseFM finds and parses the frontmatter of lines (LF text without BOM).
func parseFM(lines []string, rel string) (*fmBlock, error) {
	fm := &fmBlock{}
	if len(lines) == 0 || !isFence(lines[0], "---") {
		return fm, nil
	}
	for i := 1; i < len(lines); i++ {
		if isFence(lines[i], "---") || isFence(lines[i], "...") {
			fm.present, fm.open, fm.close = true, 0, i
			break
		}
	}
	if !fm.present {
		return fm, nil // an unterminated fence is body text
	}
	text := strings.Join(lines[1:fm.close], "\n")
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, errs.New(errs.CodeConflict, "the frontmatter of %s is not valid YAML (%v); fix it first (replace_lines on lines 2-%d)", rel, err, fm.close).
			With("path", rel).With("yaml_error", err.Error())
	}
	if len(doc.Content) == 0 {
		return fm, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && (root.Tag == "!!null" || root.Value == "") {
		return fm, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, errs.New(errs.CodeConflict, "the frontmatter of %s is not a mapping of keys to values", rel).With("path", rel)
	}
	if root.Style&yaml.FlowStyle != 0 {
		return nil, errs.New(errs.CodeConflict, "the frontmatter of %s is written in flow style ({...}); it cannot be edited key by key without rewriting it", rel).With("path", rel)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, errs.New(errs.CodeConflict, "the frontmatter of %s has a complex key; it cannot be edited key by key", rel).With("path", rel)
		}
		if seen[k.Value] {
			return nil, errs.New(errs.CodeConflict, "the frontmatter of %s has key %s twice", rel, k.Value).With("path", rel).With("key", k.Value)
		}
		seen[k.Value] = true
		e := fmEntry{key: k.Value, keyNode: k, val: v, start: fm.open + k.Line}
		if n := len(fm.entries); n > 0 && fm.entries[n-1].start == e.start {
			return nil, errs.New(errs.CodeConflict, "the frontmatter of %s has two keys on line %d", rel, e.start+1).With("path", rel)
		}
		fm.entries = append(fm.entries, e)
	}
	for i := range fm.entries {
		e := &fm.entries[i]
		end := fm.close - 1
		if i+1 < len(fm.entries) {
			end = fm.entries[i+1].start - 1
		}
		// Blank lines and unindented comments before the next key belong to
		// it (or to nobody): they are never part of a replaced value.
		for end > e.start && (strings.TrimSpace(lines[end]) == "" || strings.HasPrefix(lines[end], "#")) {
			end--
		}
		e.end = max(end, fm.open+maxLine(e.val))
	}
	return fm, nil
}

func maxLine(n *yaml.Node) int {
	m := n.Line
	for _, c := range n.Content {
		m = max(m, maxLine(c))
	}
	return m
}

// find returns the entry of key: an exact match, else the only one that
// matches ignoring case.
func (fm *fmBlock) find(key string) *fmEntry {
	var fold *fmEntry
	n := 0
	for i := range fm.entries {
		if fm.entries[i].key == key {
			return &fm.entries[i]
		}
		if strings.EqualFold(fm.entries[i].key, key) {
			fold = &fm.entries[i]
			n++
		}
	}
	if n == 1 {
		return fold
	}
	return nil
}

// splice replaces lines[a:b] with repl.
func splice(lines []string, a, b int, repl []string) []string {
	out := make([]string, 0, len(lines)-(b-a)+len(repl))
	out = append(out, lines[:a]...)
	out = append(out, repl...)
	return append(out, lines[b:]...)
}

// fmSet sets key to value (any JSON value) and returns the new lines.
func fmSet(lines []string, rel, key string, value any) ([]string, error) {
	fm, err := parseFM(lines, rel)
	if err != nil {
		return nil, err
	}
	if e := fm.find(key); e != nil {
		repl, err := renderEntry(e.key, value, e, lines)
		if err != nil {
			return nil, err
		}
		return splice(lines, e.start, e.end+1, repl), nil
	}
	repl, err := renderEntry(key, value, nil, lines)
	if err != nil {
		return nil, err
	}
	if !fm.present {
		block := append(append([]string{"---"}, repl...), "---")
		return splice(lines, 0, 0, block), nil
	}
	return splice(lines, fm.close, fm.close, repl), nil
}

// fmDelete removes key (and its value's lines); a missing key is no change.
func fmDelete(lines []string, rel, key string) ([]string, bool, error) {
	fm, err := parseFM(lines, rel)
	if err != nil {
		return nil, false, err
	}
	e := fm.find(key)
	if e == nil {
		return lines, false, nil
	}
	return splice(lines, e.start, e.end+1, nil), true, nil
}

// fmGet returns the plain value of key (nil when absent).
func fmGet(lines []string, rel, key string) (any, *fmEntry, error) {
	fm, err := parseFM(lines, rel)
	if err != nil {
		return nil, nil, err
	}
	e := fm.find(key)
	if e == nil {
		return nil, nil, nil
	}
	var v any
	if err := e.val.Decode(&v); err != nil {
		return nil, e, nil
	}
	// Timestamps keep their text (as the index does).
	if e.val.Kind == yaml.ScalarNode && (e.val.Tag == "!!timestamp" || isDateText(e.val.Value)) {
		v = e.val.Value
	}
	return v, e, nil
}

var dateText = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?\s*(Z|[+-]\d{2}(:?\d{2})?)?)?$`)

func isDateText(s string) bool { return dateText.MatchString(s) }

// renderEntry renders "key: value" as YAML lines. With old set, the value
// keeps old's style: quoting of a scalar, flow or block form of a list, the
// indentation of a block list.
func renderEntry(key string, value any, old *fmEntry, lines []string) ([]string, error) {
	var hint *yaml.Node
	if old != nil {
		hint = old.val
	}
	vn, err := valueNode(value, hint, false)
	if err != nil {
		return nil, err
	}
	kn := &yaml.Node{Kind: yaml.ScalarNode, Value: key}
	if old != nil {
		kn.Style = old.keyNode.Style
	}
	out, err := encodeYAML(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{kn, vn}})
	if err != nil {
		return nil, err
	}
	// A block list keeps its indentation ("tags:\n- a" or "tags:\n    - a").
	if old != nil && hint.Kind == yaml.SequenceNode && hint.Style&yaml.FlowStyle == 0 && vn.Kind == yaml.SequenceNode && vn.Style&yaml.FlowStyle == 0 && len(hint.Content) > 0 {
		ind := hint.Content[0].Column - 3 // column of the item, minus "- "
		if ind >= 0 && ind != 2 {
			for i := 1; i < len(out); i++ {
				if strings.HasPrefix(out[i], "  ") {
					out[i] = strings.Repeat(" ", ind) + out[i][2:]
				}
			}
		}
	}
	// An inline comment after a scalar value stays.
	if old != nil && hint.LineComment != "" && vn.Kind == yaml.ScalarNode && len(out) == 1 && old.start == old.end {
		gap := " "
		if orig := lines[old.start]; strings.HasSuffix(orig, hint.LineComment) {
			before := orig[:len(orig)-len(hint.LineComment)]
			if g := before[len(strings.TrimRight(before, " \t")):]; g != "" {
				gap = g
			}
		}
		out[0] += gap + hint.LineComment
	}
	return out, nil
}

func encodeYAML(n *yaml.Node) ([]string, error) {
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(n); err != nil {
		return nil, errs.New(errs.CodeInvalidInput, "cannot write that value as YAML: %v", err)
	}
	e.Close()
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"), nil
}

// valueNode converts a JSON value to a YAML node, styled like hint.
func valueNode(v any, hint *yaml.Node, flow bool) (*yaml.Node, error) {
	switch x := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, errs.New(errs.CodeInvalidInput, "numbers must be finite")
		}
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(int64(x), 10)}, nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(x, 'g', -1, 64)}, nil
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}, nil
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10)}, nil
	case string:
		return stringNode(x, hint, flow), nil
	case []string:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		return valueNode(items, hint, flow)
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		if flow || (hint != nil && hint.Kind == yaml.SequenceNode && hint.Style&yaml.FlowStyle != 0) {
			n.Style = yaml.FlowStyle
		}
		for i, item := range x {
			var ih *yaml.Node
			if hint != nil && hint.Kind == yaml.SequenceNode && i < len(hint.Content) {
				ih = hint.Content[i]
			}
			c, err := valueNode(item, ih, n.Style == yaml.FlowStyle)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode}
		if flow {
			n.Style = yaml.FlowStyle
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c, err := valueNode(x[k], nil, flow)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, c)
		}
		return n, nil
	}
	return nil, errs.New(errs.CodeInvalidInput, "unsupported frontmatter value of type %T", v)
}

// stringNode renders a string: plain when YAML reads it back as the same
// string (dates stay unquoted, as Obsidian writes them), else in double
// quotes (Obsidian's style: "[[Ada Lovelace]]"), a literal block for
// multi-line text, and the quoting of the value it replaces.
func stringNode(s string, hint *yaml.Node, flow bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(s, "\n"):
		n.Style = yaml.LiteralStyle
		return n
	case hint != nil && hint.Kind == yaml.ScalarNode && hint.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		n.Style = hint.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle)
		return n
	case isDateText(s):
		n.Tag = ""
		return n
	}
	if flow && (strings.ContainsAny(s, ",[]{}") || s != strings.TrimSpace(s)) {
		n.Style = yaml.DoubleQuotedStyle
		return n
	}
	out, err := encodeYAML(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "k"}, n}})
	if err == nil && len(out) == 1 {
		v := strings.TrimPrefix(out[0], "k: ")
		if strings.HasPrefix(v, "'") || strings.HasPrefix(v, `"`) {
			n.Style = yaml.DoubleQuotedStyle
		}
	}
	return n
}

// normTag strips '#' and spaces from a tag as a caller wrote it.
func normTag(t string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "#"))
}

// validTag checks a tag the way Obsidian accepts them: no spaces, not only
// digits, no characters that end a tag.
func validTag(t string) error {
	if t == "" {
		return errs.New(errs.CodeInvalidInput, "empty tag")
	}
	digits := true
	for _, r := range t {
		if unicode.IsSpace(r) || strings.ContainsRune(",;#\"'`()[]{}<>|\\", r) {
			return errs.New(errs.CodeInvalidInput, "tag %q contains %q; tags are words joined by - _ or / (nested)", t, r).With("tag", t)
		}
		digits = digits && unicode.IsDigit(r)
	}
	if digits {
		return errs.New(errs.CodeInvalidInput, "tag %q is only digits, which Obsidian does not read as a tag", t).With("tag", t)
	}
	return nil
}

// tagList reads a tags value (list, or a string of tags split by commas or
// spaces) as tags without '#'.
func tagList(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, it := range x {
			if s := normTag(fmt.Sprint(it)); s != "" && it != nil {
				out = append(out, s)
			}
		}
	case string:
		for _, s := range strings.FieldsFunc(x, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			if s = normTag(s); s != "" {
				out = append(out, s)
			}
		}
	case nil:
	default:
		if s := normTag(fmt.Sprint(x)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// fmTagKey is the key holding a note's tags (tags, or tag when only that exists).
func fmTagKey(fm *fmBlock) string {
	if fm.find("tags") == nil && fm.find("tag") != nil {
		return fm.find("tag").key
	}
	return "tags"
}

// fmAddTags adds tags to the frontmatter's tag list. A block list gets new
// item lines appended (its other lines untouched); another form is
// re-rendered as a list.
func fmAddTags(lines []string, rel string, tags []string) ([]string, []string, error) {
	fm, err := parseFM(lines, rel)
	if err != nil {
		return nil, nil, err
	}
	key := fmTagKey(fm)
	cur, e, err := fmGet(lines, rel, key)
	if err != nil {
		return nil, nil, err
	}
	have := tagList(cur)
	var added []string
	for _, t := range tags {
		if t = normTag(t); !containsFold(have, t) && !containsFold(added, t) {
			added = append(added, t)
		}
	}
	if len(added) == 0 {
		return lines, nil, nil
	}
	if e != nil && e.val.Kind == yaml.SequenceNode && e.val.Style&yaml.FlowStyle == 0 && len(e.val.Content) > 0 {
		first := e.val.Content[0]
		ind := strings.Repeat(" ", max(first.Column-3, 0))
		var repl []string
		for _, t := range added {
			item, err := encodeYAML(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{stringNode(t, first, false)}})
			if err != nil {
				return nil, nil, err
			}
			repl = append(repl, ind+item[0])
		}
		return splice(lines, e.end+1, e.end+1, repl), added, nil
	}
	all := make([]any, 0, len(have)+len(added))
	for _, t := range append(have, added...) {
		all = append(all, t)
	}
	out, err := fmSet(lines, rel, key, all)
	return out, added, err
}

// fmRemoveTags removes tags (case-insensitive, with or without '#'). Items
// of a block list are removed line by line.
func fmRemoveTags(lines []string, rel string, tags []string) ([]string, []string, error) {
	fm, err := parseFM(lines, rel)
	if err != nil {
		return nil, nil, err
	}
	key := fmTagKey(fm)
	cur, e, err := fmGet(lines, rel, key)
	if err != nil || e == nil {
		return lines, nil, err
	}
	drop := map[string]bool{}
	for _, t := range tags {
		drop[strings.ToLower(normTag(t))] = true
	}
	var removed []string
	if e.val.Kind == yaml.SequenceNode && e.val.Style&yaml.FlowStyle == 0 {
		out := append([]string(nil), lines...)
		singleLine := true
		for _, it := range e.val.Content {
			singleLine = singleLine && it.Kind == yaml.ScalarNode && !strings.Contains(it.Value, "\n")
		}
		if singleLine {
			for i := len(e.val.Content) - 1; i >= 0; i-- {
				it := e.val.Content[i]
				if drop[strings.ToLower(normTag(it.Value))] {
					removed = append([]string{normTag(it.Value)}, removed...)
					ln := e.start - e.keyNode.Line + it.Line
					out = splice(out, ln, ln+1, nil)
				}
			}
			return out, removed, nil
		}
	}
	var keep []any
	for _, t := range tagList(cur) {
		if drop[strings.ToLower(t)] {
			removed = append(removed, t)
		} else {
			keep = append(keep, t)
		}
	}
	if len(removed) == 0 {
		return lines, nil, nil
	}
	if keep == nil {
		keep = []any{}
	}
	out, err := fmSet(lines, rel, e.key, keep)
	return out, removed, err
}
