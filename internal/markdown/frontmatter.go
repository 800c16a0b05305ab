package markdown

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// bom is the UTF-8 byte order mark.
const bom = "\uFEFF"

// Limits on YAML conversion, so anchors and aliases cannot blow up
// ("billion laughs") and deep nesting cannot exhaust the stack.
const (
	maxYAMLNodes = 10000
	maxYAMLDepth = 100
)

var errYAMLTooLarge = errors.New("yaml: frontmatter too large (alias expansion or nesting limit exceeded)")

// SplitFrontmatter finds a YAML frontmatter block: a first line "---"
// (optionally after a UTF-8 BOM, trailing spaces allowed, LF or CRLF) up to
// the next line that is "---" or "...". It returns the YAML text between the
// fences (a sub-slice of src), the 1-based line where the body starts (the
// line after the closing fence) and true. Without a complete block it returns
// nil, 1, false: an unterminated fence means the whole file is body.
func SplitFrontmatter(src []byte) (yaml []byte, bodyLine int, ok bool) {
	p := 0
	if bytes.HasPrefix(src, []byte(bom)) {
		p = len(bom)
	}
	first, next := nextLine(src, p)
	if !isFenceLine(first, "---") {
		return nil, 1, false
	}
	start := next
	ln := 2
	for q := next; q < len(src); ln++ {
		line, nq := nextLine(src, q)
		if isFenceLine(line, "---") || isFenceLine(line, "...") {
			return src[start:q], ln + 1, true
		}
		q = nq
	}
	return nil, 1, false
}

// nextLine returns the line starting at src[p] without its "\n" or "\r\n"
// and the offset of the following line.
func nextLine(src []byte, p int) ([]byte, int) {
	j := bytes.IndexByte(src[p:], '\n')
	if j < 0 {
		return src[p:], len(src)
	}
	line := src[p : p+j]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, p + j + 1
}

// isFenceLine reports whether line is fence followed only by spaces or tabs.
func isFenceLine(line []byte, fence string) bool {
	return string(bytes.TrimRight(line, " \t")) == fence
}

// frontmatter parses the YAML frontmatter y and fills Doc.Frontmatter,
// FrontmatterKeys, FrontmatterError, Aliases, Tags and typed Links.
func (p *parser) frontmatter(y []byte) {
	root, err := parseYAML(y)
	if err != nil {
		p.doc.FrontmatterError = err.Error()
		return
	}
	if root == nil {
		return
	}
	c := &yamlConv{budget: maxYAMLNodes}
	m, keys := c.mapping(root, 0, true)
	if c.err != nil {
		p.doc.FrontmatterError = c.err.Error()
		return
	}
	if len(keys) == 0 {
		return
	}
	p.doc.Frontmatter, p.doc.FrontmatterKeys = m, keys
	if t, ok := lookupFold(m, keys, "title"); ok {
		if s, ok := t.(string); ok {
			p.fmTitle = strings.TrimSpace(s)
		}
	}

	// The YAML text starts on line 2 of the file (after "---").
	const lineOffset = 1
	forEachPair(root, func(k string, v *yaml.Node) {
		switch strings.ToLower(k) {
		case "tags", "tag":
			for _, s := range yamlStrings(v, true) {
				p.addTag(s, 0, "frontmatter")
			}
		case "aliases", "alias":
			for _, s := range yamlStrings(v, false) {
				p.addAlias(s)
			}
		default:
			p.typedLinksYAML(k, v, lineOffset)
		}
	})
}

// parseYAML parses y into a mapping node. It returns nil, nil for an empty
// document (only comments, or "~"), and an error for invalid YAML or a
// top level that is not a mapping.
func parseYAML(y []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("yaml: internal error: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(y, &doc); err != nil {
		return nil, err
	}
	n := &doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case n.Kind == 0:
		return nil, nil
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		return nil, nil
	case n.Kind != yaml.MappingNode:
		return nil, errors.New("yaml: frontmatter is not a mapping")
	}
	return n, nil
}

// forEachPair calls fn for each key/value pair of a mapping node whose key
// is a scalar, in file order.
func forEachPair(m *yaml.Node, fn func(k string, v *yaml.Node)) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
			continue
		}
		fn(k.Value, m.Content[i+1])
	}
}

// yamlConv converts yaml.Nodes to plain Go values within a node budget.
type yamlConv struct {
	budget int
	err    error
}

// spend charges one node and reports whether conversion may continue.
func (c *yamlConv) spend(depth int) bool {
	c.budget--
	if c.budget < 0 || depth > maxYAMLDepth {
		if c.err == nil {
			c.err = errYAMLTooLarge
		}
		return false
	}
	return c.err == nil
}

// value converts any node.
func (c *yamlConv) value(n *yaml.Node, depth int) any {
	if !c.spend(depth) {
		return nil
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil
		}
		return c.value(n.Alias, depth+1)
	case yaml.ScalarNode:
		return scalarValue(n)
	case yaml.SequenceNode:
		if s, ok := flowWikilink(n); ok {
			return s
		}
		out := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			out = append(out, c.value(e, depth+1))
		}
		return out
	case yaml.MappingNode:
		m, _ := c.mapping(n, depth, false)
		return m
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			return c.value(n.Content[0], depth+1)
		}
	}
	return nil
}

// mapping converts a mapping node, honouring "<<" merge keys. At the top
// level the keys id, created and updated keep their scalar text.
func (c *yamlConv) mapping(n *yaml.Node, depth int, top bool) (map[string]any, []string) {
	m := make(map[string]any, len(n.Content)/2)
	var keys []string
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.AliasNode && kn.Alias != nil {
			kn = kn.Alias
		}
		if kn.Kind != yaml.ScalarNode {
			continue // complex keys are not representable as map[string]any
		}
		if kn.ShortTag() == "!!merge" {
			merges = append(merges, vn)
			continue
		}
		k := kn.Value
		var v any
		if top && vn.Kind == yaml.ScalarNode && isTextKey(k) {
			if c.spend(depth + 1) {
				v = scalarText(vn)
			}
		} else {
			v = c.value(vn, depth+1)
		}
		if _, dup := m[k]; !dup {
			keys = append(keys, k)
		}
		m[k] = v
	}
	for _, mv := range merges {
		c.merge(m, &keys, mv, depth+1)
	}
	return m, keys
}

// merge adds the pairs of a "<<" value (a mapping, an alias of one or a
// sequence of those) for keys not already present.
func (c *yamlConv) merge(m map[string]any, keys *[]string, n *yaml.Node, depth int) {
	if !c.spend(depth) {
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias != nil {
			c.merge(m, keys, n.Alias, depth+1)
		}
	case yaml.SequenceNode:
		for _, e := range n.Content {
			c.merge(m, keys, e, depth+1)
		}
	case yaml.MappingNode:
		sub, subKeys := c.mapping(n, depth, false)
		for _, k := range subKeys {
			if _, ok := m[k]; !ok {
				m[k] = sub[k]
				*keys = append(*keys, k)
			}
		}
	}
}

// isTextKey reports whether a top-level key keeps its original scalar text.
func isTextKey(k string) bool {
	return strings.EqualFold(k, "id") || strings.EqualFold(k, "created") || strings.EqualFold(k, "updated")
}

// scalarText is the original text of a scalar, or nil for null.
func scalarText(n *yaml.Node) any {
	if n.ShortTag() == "!!null" {
		return nil
	}
	return n.Value
}

// scalarValue converts a scalar by its (resolved) tag. Timestamps, binary
// data, custom tags and values that do not fit int64/float64 (including
// .inf and .nan, which JSON cannot encode) keep their text.
func scalarValue(n *yaml.Node) any {
	v := n.Value
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		switch strings.ToLower(v) {
		case "true", "yes", "on", "y":
			return true
		case "false", "no", "off", "n":
			return false
		}
	case "!!int":
		plain := strings.ReplaceAll(v, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return float64(u)
		}
	case "!!float":
		if f, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64); err == nil &&
			!isInfOrNaN(f) {
			return f
		}
	}
	return v
}

func isInfOrNaN(f float64) bool { return math.IsInf(f, 0) || math.IsNaN(f) }

// flowWikilink recognises an unquoted "[[X]]" in YAML, which parses as a
// flow sequence holding one flow sequence holding one scalar, and returns
// the string "[[X]]".
func flowWikilink(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.SequenceNode || n.Style&yaml.FlowStyle == 0 || len(n.Content) != 1 {
		return "", false
	}
	in := n.Content[0]
	if in.Kind != yaml.SequenceNode || in.Style&yaml.FlowStyle == 0 || len(in.Content) != 1 {
		return "", false
	}
	s := in.Content[0]
	if s.Kind != yaml.ScalarNode || s.Value == "" {
		return "", false
	}
	return "[[" + s.Value + "]]", true
}

// yamlStrings returns the texts of a scalar or of the scalar elements of a
// sequence (following aliases one level). A scalar string is split on commas,
// and also on whitespace when splitSpace is set (tags).
func yamlStrings(n *yaml.Node, splitSpace bool) []string {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return nil
		}
		if splitSpace {
			return splitTagList(n.Value)
		}
		return strings.Split(n.Value, ",")
	case yaml.SequenceNode:
		if s, ok := flowWikilink(n); ok {
			return []string{s}
		}
		var out []string
		for _, e := range n.Content {
			if e.Kind == yaml.AliasNode && e.Alias != nil {
				e = e.Alias
			}
			if e.Kind == yaml.ScalarNode && e.ShortTag() != "!!null" {
				out = append(out, e.Value)
			} else if s, ok := flowWikilink(e); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// typedLinksYAML records a typed link for every wikilink in the string value
// of key k, or in the string elements of a list value.
func (p *parser) typedLinksYAML(k string, v *yaml.Node, lineOffset int) {
	add := func(n *yaml.Node, s string) {
		for _, l := range wikilinksIn(s) {
			l.Kind, l.Key, l.Line = LinkTyped, k, n.Line+lineOffset
			p.doc.Links = append(p.doc.Links, l)
		}
	}
	val := v
	if val.Kind == yaml.AliasNode && val.Alias != nil {
		val = val.Alias
	}
	switch val.Kind {
	case yaml.ScalarNode:
		if strings.Contains(val.Value, "[[") {
			add(v, val.Value)
		}
	case yaml.SequenceNode:
		if s, ok := flowWikilink(val); ok {
			add(v, s)
			return
		}
		for _, e := range val.Content {
			ev := e
			if ev.Kind == yaml.AliasNode && ev.Alias != nil {
				ev = ev.Alias
			}
			if ev.Kind == yaml.ScalarNode && strings.Contains(ev.Value, "[[") {
				add(e, ev.Value)
			} else if s, ok := flowWikilink(ev); ok {
				add(e, s)
			}
		}
	}
}
