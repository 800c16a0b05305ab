package noteedit

import (
	"fmt"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/loci-dev/loci/internal/errs"
)

// NormTag strips '#' and spaces from a tag as a caller wrote it.
func NormTag(t string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "#"))
}

// ValidTag checks a tag the way Obsidian accepts them: no spaces, not only
// digits, no characters that end a tag.
func ValidTag(t string) error {
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

// TagList reads a tags value (list, or a string of tags split by commas or
// spaces) as tags without '#'.
func TagList(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, it := range x {
			if s := NormTag(fmt.Sprint(it)); s != "" && it != nil {
				out = append(out, s)
			}
		}
	case string:
		for _, s := range strings.FieldsFunc(x, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			if s = NormTag(s); s != "" {
				out = append(out, s)
			}
		}
	case nil:
	default:
		if s := NormTag(fmt.Sprint(x)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ContainsFold reports whether list holds s, ignoring case.
func ContainsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// fmTagKey is the key holding a note's tags (tags, or tag when only that exists).
func fmTagKey(fm *Frontmatter) string {
	if fm.Find("tags") == nil && fm.Find("tag") != nil {
		return fm.Find("tag").Key
	}
	return "tags"
}

// fmAddTags adds tags to the frontmatter's tag list. A block list gets new
// item lines appended (its other lines untouched); another form is
// re-rendered as a list.
func fmAddTags(lines []string, rel string, tags []string) ([]string, []string, error) {
	fm, err := ParseFrontmatter(lines, rel)
	if err != nil {
		return nil, nil, err
	}
	key := fmTagKey(fm)
	cur, e, err := GetKey(lines, rel, key)
	if err != nil {
		return nil, nil, err
	}
	have := TagList(cur)
	var added []string
	for _, t := range tags {
		if t = NormTag(t); !ContainsFold(have, t) && !ContainsFold(added, t) {
			added = append(added, t)
		}
	}
	if len(added) == 0 {
		return lines, nil, nil
	}
	if e != nil && e.Value.Kind == yaml.SequenceNode && e.Value.Style&yaml.FlowStyle == 0 && len(e.Value.Content) > 0 {
		first := e.Value.Content[0]
		ind := strings.Repeat(" ", max(first.Column-3, 0))
		var repl []string
		for _, t := range added {
			item, err := encodeYAML(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{stringNode(t, first, false)}})
			if err != nil {
				return nil, nil, err
			}
			repl = append(repl, ind+item[0])
		}
		return Splice(lines, e.End+1, e.End+1, repl), added, nil
	}
	all := make([]any, 0, len(have)+len(added))
	for _, t := range append(have, added...) {
		all = append(all, t)
	}
	out, err := SetKey(lines, rel, key, all)
	return out, added, err
}

// fmRemoveTags removes tags (case-insensitive, with or without '#'). Items
// of a block list are removed line by line.
func fmRemoveTags(lines []string, rel string, tags []string) ([]string, []string, error) {
	fm, err := ParseFrontmatter(lines, rel)
	if err != nil {
		return nil, nil, err
	}
	key := fmTagKey(fm)
	cur, e, err := GetKey(lines, rel, key)
	if err != nil || e == nil {
		return lines, nil, err
	}
	drop := map[string]bool{}
	for _, t := range tags {
		drop[strings.ToLower(NormTag(t))] = true
	}
	var removed []string
	if e.Value.Kind == yaml.SequenceNode && e.Value.Style&yaml.FlowStyle == 0 {
		out := append([]string(nil), lines...)
		singleLine := true
		for _, it := range e.Value.Content {
			singleLine = singleLine && it.Kind == yaml.ScalarNode && !strings.Contains(it.Value, "\n")
		}
		if singleLine {
			for i := len(e.Value.Content) - 1; i >= 0; i-- {
				it := e.Value.Content[i]
				if drop[strings.ToLower(NormTag(it.Value))] {
					removed = append([]string{NormTag(it.Value)}, removed...)
					ln := e.Start - e.KeyNode.Line + it.Line
					out = Splice(out, ln, ln+1, nil)
				}
			}
			return out, removed, nil
		}
	}
	var keep []any
	for _, t := range TagList(cur) {
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
	out, err := SetKey(lines, rel, e.Key, keep)
	return out, removed, err
}

// ToAny turns a string list into a frontmatter list value.
func ToAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// ContainsAnyFold reports whether a frontmatter list holds s, ignoring case.
func ContainsAnyFold(list []any, s string) bool {
	for _, x := range list {
		if strings.EqualFold(fmt.Sprint(x), s) {
			return true
		}
	}
	return false
}
