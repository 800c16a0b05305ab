package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"

	"github.com/loci-dev/loci/internal/errs"
)

// Problem is one thing wrong with a config file.
type Problem struct {
	// Key is the setting's path: writes.deny_paths, exclude[2],
	// ai.prices.gpt-4o.input_per_mtok ("" for the file as a whole).
	Key string `json:"key,omitempty"`
	// Line is the 1-based line of the key in the file (0 when unknown).
	Line int `json:"line,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Suggestion is the nearest valid key or value, for typos.
	Suggestion string `json:"suggestion,omitempty"`
	// Config is where the setting comes from: a file's path, "environment"
	// or "flags".
	Config string `json:"config,omitempty"`
}

// String renders the problem as "line 3: writes.deny_path: unknown key
// (did you mean deny_paths?)".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Message)
	if p.Suggestion != "" {
		fmt.Fprintf(&b, " (did you mean %s?)", p.Suggestion)
	}
	return b.String()
}

// Problems returns the problems of a config_invalid error (nil for any
// other error).
func Problems(err error) []Problem {
	e := errs.As(err)
	if e == nil || e.Code != errs.CodeConfigInvalid {
		return nil
	}
	p, _ := e.Details["problems"].([]Problem)
	return p
}

// invalid builds the config_invalid error of a file: its message names the
// first problem, details carry them all.
func invalid(path string, probs []Problem) *errs.Error {
	if probs[0].Config != "" {
		path = probs[0].Config
	}
	for i := range probs {
		if probs[i].Config == "" {
			probs[i].Config = path
		}
	}
	msg := "invalid config " + path + ": " + probs[0].String()
	if n := len(probs) - 1; n == 1 {
		msg += "; and 1 more problem (`loci config validate` lists them)"
	} else if n > 1 {
		msg += fmt.Sprintf("; and %d more problems (`loci config validate` lists them)", n)
	}
	return errs.New(errs.CodeConfigInvalid, "%s", msg).With("config", path).With("problems", probs)
}

// parseYAML reads the one YAML document of data (nil for an empty file or
// one with only comments).
func parseYAML(data []byte) (*yaml.Node, []Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // empty, or only comments
		}
		return nil, []Problem{yamlProblem(err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, []Problem{yamlProblem(err)}
		}
		return nil, []Problem{{Line: line, Message: "the file holds more than one YAML document (---); loci reads one"}}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	return root, nil
}

// decodeStrict decodes data into f, checking every key and value against
// f's type and its check tags first. It returns the problems found (all of
// them, in file order); f is filled only when there are none.
func decodeStrict(data []byte, f *File, source string) []Problem {
	root, probs := parseYAML(data)
	if probs != nil || root == nil {
		return probs
	}
	return decodeNode(root, f, source)
}

// decodeNode checks and decodes one parsed document into f.
func decodeNode(root *yaml.Node, f *File, source string) []Problem {
	w := &walker{source: source, lines: map[string]int{}}
	w.walk(root, reflect.TypeOf(*f), "", "", root.Line)
	if len(w.probs) > 0 {
		sort.SliceStable(w.probs, func(i, j int) bool { return w.probs[i].Line < w.probs[j].Line })
		return w.probs
	}
	if isNull(root) {
		return nil
	}
	if err := root.Decode(f); err != nil {
		return []Problem{yamlProblem(err)}
	}
	f.lines = w.lines
	return nil
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

func yamlProblem(err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	p := Problem{Message: "not valid YAML: " + strings.Join(strings.Fields(msg), " ")}
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
	}
	return p
}

type walker struct {
	source string
	probs  []Problem
	lines  map[string]int
	depth  int
	// visits counts the values walked, aliases expanded: a small file of
	// aliases of aliases can stand for millions (maxVisits).
	visits  int
	tooMany bool
}

// maxVisits bounds the values one file may hold once its aliases are
// expanded: far more than any real configuration, far less than a file
// built to expand (a 60 KB one can stand for nine million values).
const maxVisits = 100_000

func (w *walker) add(key string, line int, suggestion, format string, args ...any) {
	w.probs = append(w.probs, Problem{Key: key, Line: line, Message: fmt.Sprintf(format, args...), Suggestion: suggestion})
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names the YAML shape a Go type needs.
func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return describe(t.Elem())
	case reflect.Struct, reflect.Map:
		return "a mapping of keys"
	case reflect.Slice:
		return "a list"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	}
	return "a string"
}

func shape(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// walk checks node n against type t. path is the key's path, check the
// field's check tag, line the key's line.
func (w *walker) walk(n *yaml.Node, t reflect.Type, path, check string, line int) {
	if w.tooMany {
		return
	}
	if w.visits++; w.visits > maxVisits {
		w.tooMany = true
		w.add(path, line, "", "the file holds more than %d values once its YAML aliases are expanded (aliases of aliases?); write the settings out", maxVisits)
		return
	}
	if n.Kind == yaml.AliasNode {
		w.depth++
		defer func() { w.depth-- }()
		if w.depth > 10 || n.Alias == nil {
			w.add(path, line, "", "alias nested too deep")
			return
		}
		w.walk(n.Alias, t, path, check, line)
		return
	}
	if isNull(n) {
		return // an empty value leaves the setting unset
	}
	if path != "" {
		w.lines[path] = line
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			w.add(path, line, "", "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		w.walk(n, t.Elem(), path, check, line)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.add(path, line, "", "must be %s, not %s", describe(t), shape(n))
			return
		}
		fields := map[string]reflect.StructField{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name := strings.Split(sf.Tag.Get("yaml"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			fields[name] = sf
			names = append(names, name)
		}
		w.mapping(n, path, func(key string, k, v *yaml.Node) {
			sf, ok := fields[key]
			if !ok {
				w.add(join(path, key), k.Line, suggestKey(key, path, names), "unknown key%s", legacyHint(join(path, key)))
				return
			}
			if sf.Tag.Get("trust") == "user" && w.source == SourceVault {
				w.add(join(path, key), k.Line, "", "%s", userOnlyRule)
				return
			}
			w.walk(v, sf.Type, join(path, key), sf.Tag.Get("check"), k.Line)
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.add(path, line, "", "must be %s, not %s", describe(t), shape(n))
			return
		}
		w.mapping(n, path, func(key string, k, v *yaml.Node) {
			if check == "providername" {
				if msg := providerNameProblem(key); msg != "" {
					w.add(join(path, key), k.Line, "", "%s", msg)
					return
				}
				w.walk(v, t.Elem(), join(path, key), "", k.Line)
				return
			}
			w.walk(v, t.Elem(), join(path, key), check, k.Line)
		})
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			hint := ""
			if n.Kind == yaml.ScalarNode {
				hint = fmt.Sprintf(" (write [%s])", strconv.Quote(n.Value))
			}
			w.add(path, line, "", "must be a list, not %s%s", shape(n), hint)
			return
		}
		for i, el := range n.Content {
			w.walk(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), check, el.Line)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			w.add(path, line, "", "must be %s, not %s", describe(t), shape(n))
			return
		}
		v := reflect.New(t)
		if err := n.Decode(v.Interface()); err != nil {
			w.add(path, line, "", "must be %s, not %s", describe(t), shape(n))
			return
		}
		w.value(path, check, line, v.Elem())
	}
}

// mapping visits the entries of a mapping node, refusing non-scalar keys,
// merge keys and repeated keys.
func (w *walker) mapping(n *yaml.Node, path string, visit func(key string, k, v *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			w.add(path, k.Line, "", "keys must be plain names, not %s", shape(k))
			continue
		}
		if k.Tag == "!!merge" {
			w.add(join(path, k.Value), k.Line, "", "merge keys (<<) are not supported")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			w.add(join(path, k.Value), k.Line, "", "repeated key (first set at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		visit(k.Value, k, v)
	}
}

// value applies a field's check tag to its decoded value.
func (w *walker) value(path, check string, line int, v reflect.Value) {
	switch {
	case check == "", check == "role":
		// role: a provider name, checked once every layer is merged.
	case check == "url":
		if s := v.String(); s != "" && !httpURL(s) {
			w.add(path, line, "", "%q is not an http(s) URL", redactURL(s))
		}
	case check == "glob":
		if s := v.String(); !doublestar.ValidatePattern(s) {
			w.add(path, line, "", "%q is not a valid glob (doublestar syntax: *, **, ?, [a-z], {a,b})", s)
		}
	case check == "duration":
		if _, err := ParseDuration(path, v.String()); err != nil {
			w.add(path, line, "", "%q is not a positive duration (like 30s, 720h or 30d)", v.String())
		}
	case check == "prefix":
		// A prefix goes before every text embedded: a long one, from a
		// vault's file, would multiply what the user's provider bills.
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return
			}
			v = v.Elem()
		}
		if n := len(v.String()); n > MaxEmbedPrefix {
			w.add(path, line, "", "is %d bytes; a prefix is at most %d", n, MaxEmbedPrefix)
		}
	case check == "nonneg":
		if (v.CanInt() && v.Int() < 0) || (v.CanFloat() && v.Float() < 0) {
			w.add(path, line, "", "must not be negative")
		}
	case strings.HasPrefix(check, "enum="):
		allowed := strings.Split(strings.TrimPrefix(check, "enum="), "|")
		if s := v.String(); s != "" && !contains(allowed, s) {
			w.add(path, line, suggest(s, allowed), "%q is not one of %s", s, strings.Join(allowed, ", "))
		}
	case check == "indexdir":
		if w.source == SourceVault {
			if msg := vaultIndexDirProblem(v.String()); msg != "" {
				w.add(path, line, "", "%s", msg)
			}
		}
	}
}

// MaxEmbedPrefix bounds embed.query_prefix and embed.document_prefix
// (models' prefixes are a few words: "query: ", "search_document: ").
const MaxEmbedPrefix = 256

// vaultIndexDirProblem says what is wrong with an index_dir read from a
// vault's own config ("" if nothing): it must be a relative path without
// "..", so that the index stays inside the vault.
func vaultIndexDirProblem(dir string) string {
	const rule = "from the vault's own config, index_dir must be a relative path that stays inside the vault " +
		"(a planted or cloned vault could otherwise make loci write anywhere); use --index-dir, LOCI_INDEX_DIR or your own config for another place"
	d := strings.TrimSpace(dir)
	switch {
	case d == "":
		return ""
	case strings.HasPrefix(d, "/"), strings.HasPrefix(d, `\`), len(d) >= 2 && d[1] == ':':
		return fmt.Sprintf("%q is absolute; %s", dir, rule)
	case strings.HasPrefix(d, "~"):
		return fmt.Sprintf("%q is not expanded (~ is the shell's); %s", dir, rule)
	}
	for _, part := range strings.FieldsFunc(d, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return fmt.Sprintf("%q contains ..; %s", dir, rule)
		}
	}
	return ""
}

// providerNameProblem says what is wrong with a providers entry's name.
func providerNameProblem(name string) string {
	if !providerNameRE().MatchString(name) {
		return fmt.Sprintf("provider name %q: use 1-64 letters, digits, _, - or . (starting with a letter or digit)", name)
	}
	switch name {
	case "builtin", "model2vec", "onnx", "none", "off", "embeddings":
		return fmt.Sprintf("provider name %q is reserved (it means something else as a role's provider)", name)
	}
	return ""
}

var providerNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })

func httpURL(s string) bool {
	u, err := url.Parse(strings.TrimSpace(s))
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// userOnlyRule is why a vault's own file may not set a user-only key.
const userOnlyRule = "may only be set in your own config (~/.config/loci/config.yaml or $LOCI_CONFIG), not in a vault's: " +
	"a cloned or shared vault could otherwise switch on tool auto-approval, shell commands or MCP servers that run programs, " +
	"or decide who may call your server and how often"

// legacyHint explains keys whose spelling changed.
func legacyHint(key string) string {
	switch {
	case strings.HasPrefix(key, "chat.model."):
		return " (in config.yaml the chat model is chat.model: NAME with chat.provider or chat.base_url beside it; model: {name, base_url, ...} is chat.yaml's older spelling)"
	}
	return ""
}

// knownKeys lists every key path of File, for suggesting a key written in
// the wrong section (deny_paths at the top → writes.deny_paths).
var knownKeys = func() []string {
	var out []string
	var visit func(t reflect.Type, path string)
	visit = func(t reflect.Type, path string) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name := strings.Split(sf.Tag.Get("yaml"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			out = append(out, join(path, name))
			if ft := sf.Type; ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(unmarshalerType) {
				visit(ft, join(path, name))
			}
		}
	}
	visit(reflect.TypeOf(File{}), "")
	return out
}()

// suggestKey finds the key meant: a sibling a typo away, else the same
// name in another section.
func suggestKey(key, path string, siblings []string) string {
	if s := suggest(key, siblings); s != "" {
		return s
	}
	for _, k := range knownKeys {
		parent, last := "", k
		if i := strings.LastIndex(k, "."); i >= 0 {
			parent, last = k[:i], k[i+1:]
		}
		if parent != path && strings.EqualFold(last, key) {
			return k
		}
	}
	return ""
}

// suggest returns the option nearest to s (edit distance, case-insensitive;
// or an option that s begins), or "" when none is close.
func suggest(s string, options []string) string {
	ls := strings.ToLower(s)
	best, bestD := "", 1<<30
	for _, o := range options {
		d := levenshtein(ls, strings.ToLower(o))
		if d < bestD {
			best, bestD = o, d
		}
	}
	if bestD == 0 || (bestD <= 2 && bestD*2 < len(s)) {
		return best
	}
	if len(s) >= 3 {
		for _, o := range options {
			if strings.HasPrefix(strings.ToLower(o), ls) {
				return o
			}
		}
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
