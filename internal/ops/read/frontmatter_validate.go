package read

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// ValidateIn is the input of frontmatter_validate.
type ValidateIn struct {
	Paths    []string          `json:"paths,omitempty" cli:"path" jsonschema:"vault-relative paths of the notes to check (default: every note)"`
	PathGlob string            `json:"path_glob,omitempty" jsonschema:"check the notes whose path matches this glob, e.g. Projects/** (instead of paths)"`
	Required []string          `json:"required,omitempty" jsonschema:"keys every checked note must have with a non-empty value"`
	Types    map[string]string `json:"types,omitempty" jsonschema:"expected value type per key: string, number, boolean, date (YYYY-MM-DD or ISO-8601 time) or list"`
	Limit    int               `json:"limit,omitempty" jsonschema:"issues per call, 1-1000 (default 100)"`
	Cursor   string            `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault    string            `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the selection and the rules.
func (in *ValidateIn) Validate() error {
	if len(in.Paths) > 0 && in.PathGlob != "" {
		return errs.New(errs.CodeInvalidInput, "pass paths or path_glob, not both")
	}
	if err := ops.CheckGlob(in.PathGlob); err != nil {
		return err
	}
	for _, k := range in.Required {
		if strings.TrimSpace(k) == "" {
			return errs.New(errs.CodeInvalidInput, "required holds an empty key")
		}
	}
	for k, t := range in.Types {
		if strings.TrimSpace(k) == "" {
			return errs.New(errs.CodeInvalidInput, "types holds an empty key")
		}
		if !slices.Contains(valueTypes, t) {
			return errs.New(errs.CodeInvalidInput, "unknown type %q for key %s (use %s)", t, k, strings.Join(valueTypes, ", ")).With("key", k).With("allowed", valueTypes)
		}
	}
	return ops.CheckLimit(in.Limit, 1000)
}

// Issue is one frontmatter problem.
type Issue struct {
	Path    string `json:"path" jsonschema:"the note"`
	Key     string `json:"key" jsonschema:"the frontmatter key concerned (empty for yaml)"`
	Rule    string `json:"rule" jsonschema:"yaml (invalid frontmatter), required (missing or empty key), id_created (a timestamp id disagrees with created), duplicate_id (another note has the same id) or type (value of the wrong type)"`
	Message string `json:"message" jsonschema:"what is wrong, for a person"`
}

// ValidateOut is the output of frontmatter_validate.
type ValidateOut struct {
	Checked         int            `json:"checked" jsonschema:"number of notes checked"`
	NotesWithIssues int            `json:"notes_with_issues" jsonschema:"number of checked notes with at least one issue"`
	Counts          map[string]int `json:"counts" jsonschema:"issues per rule (yaml, required, id_created, duplicate_id, type)"`
	Issues          []Issue        `json:"issues" jsonschema:"issues by path, then rule"`
	Total           int            `json:"total" jsonschema:"number of issues, over all calls"`
	NextCursor      string         `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get the next issues"`
}

// FrontmatterValidate is the frontmatter_validate operation.
func FrontmatterValidate() ops.Def[ValidateIn, ValidateOut] {
	return ops.Def[ValidateIn, ValidateOut]{
		Name:  "frontmatter_validate",
		Title: "Validate frontmatter",
		Description: "Check notes' frontmatter (all notes, a path glob, or a list of paths): invalid YAML, required keys missing or empty, a timestamp id (YYYYMMDDHHmm[ss]) whose date disagrees with created, an id another note also has, " +
			"and values of the wrong type (types: key → string, number, boolean, date or list). Returns issues with path, key, rule and message, and counts per rule; paginate with next_cursor.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "validate", Text: textValidate},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeVaultNotFound},
		Example:     `{"path_glob": "Projects/**", "required": ["status"], "types": {"created": "date", "tags": "list"}}`,
		Handler: func(ctx context.Context, env *ops.Env, in *ValidateIn) (*ValidateOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := ops.DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			var want map[string]bool
			if len(in.Paths) > 0 {
				want = map[string]bool{}
				for _, p := range in.Paths {
					_, rel, err := vh.Vault.Abs(p)
					if err != nil {
						return nil, err
					}
					want[strings.ToLower(rel)] = true
				}
			}
			notes, err := env.ListNotes(ctx, vh, true)
			if err != nil {
				return nil, err
			}
			out := &ValidateOut{Counts: map[string]int{"yaml": 0, "required": 0, "id_created": 0, "duplicate_id": 0, "type": 0}}
			// An id names one note: every note sharing one is reported,
			// whichever of them the selection holds.
			byID := map[string][]string{}
			for _, n := range notes {
				if id, ok := idString(n.Frontmatter); ok {
					byID[id] = append(byID[id], n.Path)
				}
			}
			var all []Issue
			for _, n := range notes {
				if want != nil {
					if !want[strings.ToLower(n.Path)] {
						continue
					}
					delete(want, strings.ToLower(n.Path))
				} else if !ops.GlobMatch(in.PathGlob, n.Path) {
					continue
				}
				out.Checked++
				issues := checkNote(n, in.Required, in.Types)
				if id, ok := idString(n.Frontmatter); ok && len(byID[id]) > 1 {
					var others []string
					for _, p := range byID[id] {
						if p != n.Path {
							others = append(others, p)
						}
					}
					issues = append(issues, Issue{Path: n.Path, Key: "id", Rule: "duplicate_id",
						Message: fmt.Sprintf("id %s is also the id of %s", id, strings.Join(others, ", "))})
				}
				if len(issues) > 0 {
					out.NotesWithIssues++
				}
				for _, is := range issues {
					out.Counts[is.Rule]++
				}
				all = append(all, issues...)
			}
			if len(want) > 0 {
				var missing []string
				for p := range want {
					missing = append(missing, p)
				}
				sort.Strings(missing)
				return nil, errs.New(errs.CodeNotFound, "not in the index: %s", strings.Join(missing, ", ")).With("paths", missing)
			}
			out.Total = len(all)
			out.Issues, out.NextCursor = ops.Page(all, off, ops.OrDefault(in.Limit, 100))
			return out, nil
		},
	}
}

var valueTypes = []string{"string", "number", "boolean", "date", "list"}

var timestampID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{12}(\d{2})?$`) })

// dateOf returns the YYYY-MM-DD date a value starts with.
func dateOf(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || len(s) < 10 {
		return "", false
	}
	if _, err := time.Parse("2006-01-02", s[:10]); err != nil {
		return "", false
	}
	if _, ok := parseTime(s); !ok {
		return "", false
	}
	return s[:10], true
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64, int64, int:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// idString is a note's frontmatter id as text ("" ids do not count).
func idString(fm map[string]any) (string, bool) {
	id, ok := fm["id"]
	if !ok || id == nil {
		return "", false
	}
	s := fmt.Sprint(id)
	if f, isNum := id.(float64); isNum {
		s = fmt.Sprintf("%.0f", f)
	}
	s = strings.TrimSpace(s)
	return s, s != ""
}

// checkNote applies the rules to one note's frontmatter.
func checkNote(n index.NoteSummary, required []string, types map[string]string) []Issue {
	var out []Issue
	add := func(key, rule, format string, args ...any) {
		out = append(out, Issue{Path: n.Path, Key: key, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	if n.FrontmatterError != "" {
		add("", "yaml", "invalid frontmatter: %s", n.FrontmatterError)
		return out
	}
	fm := n.Frontmatter
	for _, k := range required {
		v, ok := fm[k]
		switch {
		case !ok:
			add(k, "required", "required key %s is missing", k)
		case isEmpty(v):
			add(k, "required", "required key %s is empty", k)
		}
	}
	if id, ok := fm["id"]; ok {
		if created, ok := fm["created"]; ok {
			ids := fmt.Sprint(id)
			if f, isNum := id.(float64); isNum {
				ids = fmt.Sprintf("%.0f", f)
			}
			if timestampID().MatchString(ids) {
				if idDate, err := time.Parse("20060102", ids[:8]); err == nil {
					cd, ok := dateOf(created)
					switch {
					case !ok:
						add("created", "id_created", "created %v is not a date, so it cannot be checked against id %s", created, ids)
					case cd != idDate.Format("2006-01-02"):
						add("id", "id_created", "id %s is dated %s but created is %s", ids, idDate.Format("2006-01-02"), cd)
					}
				}
			}
		}
	}
	keys := make([]string, 0, len(types))
	for k := range types {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := fm[k]
		if !ok || v == nil {
			continue
		}
		want, got := types[k], typeName(v)
		good := false
		switch want {
		case "date":
			_, good = dateOf(v)
			if !good {
				got = fmt.Sprintf("%s %q", got, fmt.Sprint(v))
			}
		default:
			good = got == want
		}
		if !good {
			add(k, "type", "%s should be a %s, found %s", k, want, got)
		}
	}
	return out
}

func textValidate(o any) string {
	out := o.(*ValidateOut)
	var b strings.Builder
	for _, is := range out.Issues {
		fmt.Fprintf(&b, "%s: [%s] %s\n", is.Path, is.Rule, is.Message)
	}
	fmt.Fprintf(&b, "%d notes checked, %d with issues (%d issues)\n", out.Checked, out.NotesWithIssues, out.Total)
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}
