package noteedit

import (
	"bytes"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/loci-dev/loci/internal/errs"
)

// The frontmatter editor changes YAML frontmatter by replacing the lines of
// one top-level entry (key and value) and nothing else: key order, comments,
// quoting, blank lines and every byte of the other entries and of the body
// stay as they were. The YAML parser is only used to find the entries' line
// spans; new values are rendered with the style of the value they replace.

// Entry is one top-level key of the frontmatter and its lines.
type Entry struct {
	Key        string
	KeyNode    *yaml.Node
	Value      *yaml.Node
	Start, End int // 0-based line indexes in the note, inclusive
}

// Frontmatter is a note's YAML frontmatter.
type Frontmatter struct {
	Present     bool
	Open, Close int // 0-based lines of the fences
	Entries     []Entry
}

// ParseFrontmatter finds and parses the frontmatter of lines (LF text without BOM).
func ParseFrontmatter(lines []string, rel string) (*Frontmatter, error) {
	fm := &Frontmatter{}
	if len(lines) == 0 || !isFence(lines[0], "---") {
		return fm, nil
	}
	for i := 1; i < len(lines); i++ {
		if isFence(lines[i], "---") || isFence(lines[i], "...") {
			fm.Present, fm.Open, fm.Close = true, 0, i
			break
		}
	}
	if !fm.Present {
		return fm, nil // an unterminated fence is body text
	}
	text := strings.Join(lines[1:fm.Close], "\n")
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, errs.New(errs.CodeConflict, "the frontmatter of %s is not valid YAML (%v); fix it first (replace_lines on lines 2-%d)", rel, err, fm.Close).
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
		e := Entry{Key: k.Value, KeyNode: k, Value: v, Start: fm.Open + k.Line}
		if n := len(fm.Entries); n > 0 && fm.Entries[n-1].Start == e.Start {
			return nil, errs.New(errs.CodeConflict, "the frontmatter of %s has two keys on line %d", rel, e.Start+1).With("path", rel)
		}
		fm.Entries = append(fm.Entries, e)
	}
	for i := range fm.Entries {
		e := &fm.Entries[i]
		end := fm.Close - 1
		if i+1 < len(fm.Entries) {
			end = fm.Entries[i+1].Start - 1
		}
		// Blank lines and unindented comments before the next key belong to
		// it (or to nobody): they are never part of a replaced value.
		for end > e.Start && (strings.TrimSpace(lines[end]) == "" || strings.HasPrefix(lines[end], "#")) {
			end--
		}
		e.End = max(end, fm.Open+maxLine(e.Value))
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

// Find returns the entry of key: an exact match, else the only one that
// matches ignoring case.
func (fm *Frontmatter) Find(key string) *Entry {
	var fold *Entry
	n := 0
	for i := range fm.Entries {
		if fm.Entries[i].Key == key {
			return &fm.Entries[i]
		}
		if strings.EqualFold(fm.Entries[i].Key, key) {
			fold = &fm.Entries[i]
			n++
		}
	}
	if n == 1 {
		return fold
	}
	return nil
}

// SetKey sets key to value (any JSON value) and returns the new lines.
func SetKey(lines []string, rel, key string, value any) ([]string, error) {
	fm, err := ParseFrontmatter(lines, rel)
	if err != nil {
		return nil, err
	}
	if e := fm.Find(key); e != nil {
		repl, err := RenderEntry(e.Key, value, e, lines)
		if err != nil {
			return nil, err
		}
		return Splice(lines, e.Start, e.End+1, repl), nil
	}
	repl, err := RenderEntry(key, value, nil, lines)
	if err != nil {
		return nil, err
	}
	if !fm.Present {
		block := append(append([]string{"---"}, repl...), "---")
		return Splice(lines, 0, 0, block), nil
	}
	return Splice(lines, fm.Close, fm.Close, repl), nil
}

// DeleteKey removes key (and its value's lines); a missing key is no change.
func DeleteKey(lines []string, rel, key string) ([]string, bool, error) {
	fm, err := ParseFrontmatter(lines, rel)
	if err != nil {
		return nil, false, err
	}
	e := fm.Find(key)
	if e == nil {
		return lines, false, nil
	}
	return Splice(lines, e.Start, e.End+1, nil), true, nil
}

// GetKey returns the plain value of key (nil when absent).
func GetKey(lines []string, rel, key string) (any, *Entry, error) {
	fm, err := ParseFrontmatter(lines, rel)
	if err != nil {
		return nil, nil, err
	}
	e := fm.Find(key)
	if e == nil {
		return nil, nil, nil
	}
	var v any
	if err := e.Value.Decode(&v); err != nil {
		return nil, e, nil
	}
	// Timestamps keep their text (as the index does).
	if e.Value.Kind == yaml.ScalarNode && (e.Value.Tag == "!!timestamp" || isDateText(e.Value.Value)) {
		v = e.Value.Value
	}
	return v, e, nil
}

var dateText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?\s*(Z|[+-]\d{2}(:?\d{2})?)?)?$`)
})

func isDateText(s string) bool { return dateText().MatchString(s) }

// RenderEntry renders "key: value" as YAML lines. With old set, the value
// keeps old's style: quoting of a scalar, flow or block form of a list, the
// indentation of a block list.
func RenderEntry(key string, value any, old *Entry, lines []string) ([]string, error) {
	var hint *yaml.Node
	if old != nil {
		hint = old.Value
	}
	vn, err := valueNode(value, hint, false)
	if err != nil {
		return nil, err
	}
	kn := &yaml.Node{Kind: yaml.ScalarNode, Value: key}
	if old != nil {
		kn.Style = old.KeyNode.Style
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
	if old != nil && hint.LineComment != "" && vn.Kind == yaml.ScalarNode && len(out) == 1 && old.Start == old.End {
		gap := " "
		if orig := lines[old.Start]; strings.HasSuffix(orig, hint.LineComment) {
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
