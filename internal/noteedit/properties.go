package noteedit

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/loci-dev/loci/internal/errs"
)

// CheckProps validates block or page properties given by a caller.
func CheckProps(props map[string]string, allowID bool) error {
	for k, v := range props {
		if _, _, ok := PropLine(k + ":: x"); !ok || strings.Contains(k, "::") {
			return errs.New(errs.CodeInvalidInput, "property name %q is not valid (letters, digits, - _ . / ? !)", k).With("property", k)
		}
		if strings.EqualFold(k, "id") && !allowID {
			return errs.New(errs.CodeInvalidInput, "the id:: property is managed by loci and Logseq (block uuids stay stable); it cannot be set or removed").With("property", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return errs.New(errs.CodeInvalidInput, "the value of property %s spans lines", k).With("property", k)
		}
	}
	return nil
}

// PropLine parses a "key:: value" line (leading whitespace allowed), with the
// rules of the Logseq parser.
func PropLine(l string) (key, val string, ok bool) {
	s := strings.TrimLeft(l, " \t")
	i := strings.Index(s, "::")
	if i <= 0 {
		return "", "", false
	}
	for _, r := range s[:i] {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./?!", r)) {
			return "", "", false
		}
	}
	rest := s[i+2:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", "", false
	}
	return s[:i], strings.TrimSpace(rest), true
}

// PageRegion is where a page's properties are: "key:: value" lines at the
// top (plain), or a first block made only of properties (bulleted).
type PageRegion struct {
	Start, End int // [start, end) lines; empty when the page has none
	Bulleted   bool
}

// PageProps finds the page properties of a Logseq page's lines.
func PageProps(lines []string) PageRegion {
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) {
		return PageRegion{}
	}
	first := lines[i]
	t := strings.TrimLeft(first, " \t")
	if len(t) == len(first) && !strings.HasPrefix(t, "-") {
		if _, _, ok := PropLine(first); ok {
			j := i
			for j < len(lines) {
				if _, _, ok := PropLine(lines[j]); !ok || strings.HasPrefix(strings.TrimLeft(lines[j], " \t"), "- ") {
					break
				}
				j++
			}
			return PageRegion{Start: i, End: j}
		}
		return PageRegion{}
	}
	if strings.HasPrefix(first, "- ") {
		if _, _, ok := PropLine(first[2:]); ok {
			j := i + 1
			for j < len(lines) && strings.HasPrefix(lines[j], "  ") {
				if _, _, ok := PropLine(lines[j]); !ok {
					return PageRegion{} // the block has text: it is not the page's properties
				}
				j++
			}
			return PageRegion{Start: i, End: j, Bulleted: true}
		}
	}
	return PageRegion{}
}

// propValue renders a JSON value as a Logseq property value.
func propValue(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		if strings.ContainsAny(x, "\r\n") {
			return "", errs.New(errs.CodeInvalidInput, "a property value cannot span lines")
		}
		return x, nil
	case []any:
		parts := make([]string, 0, len(x))
		for _, it := range x {
			s, err := propValue(it)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ", "), nil
	case float64, bool:
		return fmt.Sprint(x), nil
	}
	return "", errs.New(errs.CodeInvalidInput, "unsupported property value of type %T", v)
}

// SetProperty sets a page property of a Logseq page.
func (d *Doc) SetProperty(key string, value any) error {
	val, err := propValue(value)
	if err != nil {
		return err
	}
	if err := CheckProps(map[string]string{key: val}, false); err != nil {
		return err
	}
	r := PageProps(d.Lines)
	for ln := r.Start; ln < r.End; ln++ {
		k, _, _ := PropLine(d.Lines[ln])
		if strings.EqualFold(k, key) {
			l := d.Lines[ln]
			prefix := l[:strings.Index(l, k)]
			d.Lines[ln] = strings.TrimRight(prefix+k+":: "+val, " ")
			return nil
		}
	}
	line := strings.TrimRight(key+":: "+val, " ")
	switch {
	case r.End > r.Start && r.Bulleted:
		d.Lines = Splice(d.Lines, r.End, r.End, []string{"  " + line})
	case r.End > r.Start:
		d.Lines = Splice(d.Lines, r.End, r.End, []string{line})
	default:
		repl := []string{line}
		if len(d.Lines) > 0 && strings.TrimSpace(d.Lines[0]) != "" {
			repl = append(repl, "")
		}
		d.Lines = Splice(d.Lines, 0, 0, repl)
	}
	return nil
}

// DeleteProperty removes a page property (no change when it is absent).
func DeleteProperty(lines []string, key string) []string {
	r := PageProps(lines)
	for ln := r.Start; ln < r.End; ln++ {
		k, _, _ := PropLine(lines[ln])
		if !strings.EqualFold(k, key) {
			continue
		}
		if r.Bulleted && ln == r.Start {
			if r.End-r.Start == 1 {
				return Splice(lines, r.Start, r.End, nil)
			}
			out := Splice(lines, ln, ln+1, nil)
			out[ln] = "- " + strings.TrimLeft(out[ln], " \t")
			return out
		}
		out := Splice(lines, ln, ln+1, nil)
		if r.End-r.Start == 1 && !r.Bulleted && ln < len(out) && strings.TrimSpace(out[ln]) == "" {
			out = Splice(out, ln, ln+1, nil)
		}
		return out
	}
	return lines
}

// pagePropValue returns a page property's value ("" and false when absent).
func pagePropValue(lines []string, key string) (string, bool) {
	r := PageProps(lines)
	for ln := r.Start; ln < r.End; ln++ {
		if k, v, _ := PropLine(lines[ln]); strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// propertyTags adds or removes tags in a Logseq page's tags:: property.
func (d *Doc) propertyTags(add bool, tags []string) error {
	cur, _ := pagePropValue(d.Lines, "tags")
	var have []string
	for _, t := range strings.Split(cur, ",") {
		t = strings.TrimSpace(t)
		if t != "" {
			have = append(have, t)
		}
	}
	plain := func(t string) string {
		t = NormTag(t)
		if strings.HasPrefix(t, "[[") && strings.HasSuffix(t, "]]") {
			t = t[2 : len(t)-2]
		}
		return strings.ToLower(strings.TrimSpace(t))
	}
	var out []string
	if add {
		out = have
		for _, t := range tags {
			seen := false
			for _, h := range out {
				seen = seen || plain(h) == plain(t)
			}
			if !seen {
				out = append(out, NormTag(t))
			}
		}
	} else {
		for _, h := range have {
			drop := false
			for _, t := range tags {
				drop = drop || plain(h) == plain(t)
			}
			if !drop {
				out = append(out, h)
			}
		}
	}
	if len(out) == len(have) {
		return nil
	}
	if len(out) == 0 {
		d.Lines = DeleteProperty(d.Lines, "tags")
		return nil
	}
	return d.SetProperty("tags", strings.Join(out, ", "))
}
