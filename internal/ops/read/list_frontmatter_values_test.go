package read_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
)

func valueCounts(vs []index.ValueCount) []string {
	return opstest.Paths(vs, func(v index.ValueCount) string { return fmt.Sprintf("%s=%d", v.Value, v.Notes) })
}

// TestListFrontmatterValues: the distinct values of a key with their note
// counts, most common first, list items one by one, paged by cursor.
func TestListFrontmatterValues(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"a.md": "---\nkeywords: [go, sqlite, search]\nstatus: active\n---\na\n",
		"b.md": "---\nkeywords: [go, search]\nstatus: done\n---\nb\n",
		"c.md": "---\nkeywords: go\nstatus: active\n---\nc\n",
		// A value repeated within one note counts the note once.
		"d.md": "---\nkeywords: [mcp, mcp]\n---\nd\n",
	})
	out := opstest.Call[read.ListFrontmatterValuesOut](t, env, "list_frontmatter_values", `{"key": "keywords"}`)
	if got, want := valueCounts(out.Values), []string{"go=3", "search=2", "mcp=1", "sqlite=1"}; !slices.Equal(got, want) ||
		out.TotalValues != 4 || out.Notes != 4 || out.NextCursor != "" || out.Key != "keywords" {
		t.Errorf("keywords = %v %+v, want %v", got, out, want)
	}
	// Pages of one, in the same order.
	var got []string
	cursor := ""
	for i := 0; i < 6; i++ {
		in := `{"key": "keywords", "limit": 1`
		if cursor != "" {
			in += `, "cursor": "` + cursor + `"`
		}
		out := opstest.Call[read.ListFrontmatterValuesOut](t, env, "list_frontmatter_values", in+"}")
		if len(out.Values) != 1 {
			t.Fatalf("page %d = %+v", i, out)
		}
		got = append(got, valueCounts(out.Values)...)
		if cursor = out.NextCursor; cursor == "" {
			break
		}
	}
	if want := []string{"go=3", "search=2", "mcp=1", "sqlite=1"}; !slices.Equal(got, want) {
		t.Errorf("paged = %v, want %v", got, want)
	}
	// An unknown key: nothing, and the keys that look like it.
	out = opstest.Call[read.ListFrontmatterValuesOut](t, env, "list_frontmatter_values", `{"key": "Keyword"}`)
	if out.Values == nil || len(out.Values) != 0 || out.TotalValues != 0 || !slices.Equal(out.Suggestions, []string{"keywords"}) {
		t.Errorf("unknown key = %+v", out)
	}
	for _, in := range []string{`{}`, `{"key": " "}`, `{"key": "status", "limit": 1001}`, `{"key": "status", "cursor": "%%"}`,
		`{"key": "` + strings.Repeat("k", 257) + `"}`} {
		opstest.WantCode(t, env, "list_frontmatter_values", in, errs.CodeInvalidInput)
	}
	opstest.WantCode(t, env, "list_frontmatter_keys", `{"key": "`+strings.Repeat("k", 257)+`"}`, errs.CodeInvalidInput)
}

// TestListFrontmatterValuesFenced: a fenced note's values are neither
// listed nor counted.
func TestListFrontmatterValuesFenced(t *testing.T) {
	env := fencedEnv(t)
	js, e := callAs(t, env, nil, "list_frontmatter_values", `{"key": "tags"}`)
	if e != nil {
		t.Fatal(js)
	}
	if out := decode[read.ListFrontmatterValuesOut](t, js); out.TotalValues != 0 || out.Notes != 0 {
		t.Errorf("fenced tags = %s", js)
	}
	js, _ = callAs(t, env, nil, "list_frontmatter_values", `{"key": "diary_key"}`)
	if out := decode[read.ListFrontmatterValuesOut](t, js); !slices.Equal(valueCounts(out.Values), []string{"x=1"}) {
		t.Errorf("owner diary_key = %s", js)
	}
	js, _ = callAs(t, env, narrowed, "list_frontmatter_values", `{"key": "diary_key"}`)
	if out := decode[read.ListFrontmatterValuesOut](t, js); out.TotalValues != 0 || out.Notes != 0 || len(out.Suggestions) != 0 {
		t.Errorf("narrowed diary_key = %s", js)
	}
}

// TestFrontmatterValuesText: list_frontmatter_values and
// list_frontmatter_keys {key} print a key's values the same way; an empty
// page past the last value is not "no value".
func TestFrontmatterValuesText(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"a.md": "---\nstatus: active\n---\na\n",
		"b.md": "---\nstatus: done\n---\nb\n",
	})
	text := func(name, in string) string {
		op, _ := opstest.Reg.Get(name)
		if name == "list_frontmatter_values" {
			return op.CLI.Text(opstest.Call[read.ListFrontmatterValuesOut](t, env, name, in))
		}
		return op.CLI.Text(opstest.Call[read.ListFrontmatterKeysOut](t, env, name, in))
	}
	values, keys := text("list_frontmatter_values", `{"key": "status"}`), text("list_frontmatter_keys", `{"key": "status"}`)
	if want := "     1  active\n     1  done\n"; values != want || keys != want {
		t.Errorf("values text %q, keys text %q, want %q", values, keys, want)
	}
	unknown := text("list_frontmatter_values", `{"key": "Status"}`)
	if want := "no note has a value for Status\nsimilar keys: status\n"; unknown != want || text("list_frontmatter_keys", `{"key": "Status"}`) != want {
		t.Errorf("unknown key text %q, want %q", unknown, want)
	}
	past := text("list_frontmatter_values", `{"key": "status", "cursor": "`+ops.EncodeCursor(5)+`"}`)
	if past != "" {
		t.Errorf("page past the last value: %q, want nothing", past)
	}
}
