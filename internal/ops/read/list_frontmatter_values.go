package read

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// maxKeyBytes bounds the key of list_frontmatter_values and list_frontmatter_keys.
const maxKeyBytes = 256

// ListFrontmatterValuesIn is the input of list_frontmatter_values.
type ListFrontmatterValuesIn struct {
	Key    string `json:"key" jsonschema:"the frontmatter key (Logseq page property) whose values to list, case-sensitive as written in the notes"`
	Limit  int    `json:"limit,omitempty" jsonschema:"values per page, 1-1000 (default 100)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous page"`
	Vault  string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the key and the limit.
func (in *ListFrontmatterValuesIn) Validate() error {
	if strings.TrimSpace(in.Key) == "" {
		return errs.New(errs.CodeInvalidInput, "key is empty")
	}
	if err := checkKeyBytes(in.Key); err != nil {
		return err
	}
	return ops.CheckLimit(in.Limit, 1000)
}

// checkKeyBytes bounds a frontmatter key given as input.
func checkKeyBytes(key string) error {
	if len(key) > maxKeyBytes {
		return errs.New(errs.CodeInvalidInput, "the key is %d bytes long; at most %d are accepted", len(key), maxKeyBytes).
			With("bytes", len(key)).With("max_bytes", maxKeyBytes)
	}
	return nil
}

// ListFrontmatterValuesOut is the output of list_frontmatter_values.
type ListFrontmatterValuesOut struct {
	Key         string             `json:"key" jsonschema:"the key whose values are listed"`
	Values      []index.ValueCount `json:"values" jsonschema:"its distinct values with the number of notes having each, most common first (ties by value); list items count one by one"`
	TotalValues int                `json:"total_values" jsonschema:"number of distinct values"`
	Notes       int                `json:"notes" jsonschema:"number of notes with a value for the key"`
	NextCursor  string             `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get the next page"`
	Suggestions []string           `json:"suggestions,omitempty" jsonschema:"when no note has the key: existing keys that look like it"`
}

// ListFrontmatterValues is the list_frontmatter_values operation.
func ListFrontmatterValues() ops.Def[ListFrontmatterValuesIn, ListFrontmatterValuesOut] {
	return ops.Def[ListFrontmatterValuesIn, ListFrontmatterValuesOut]{
		Name:  "list_frontmatter_values",
		Title: "List frontmatter values",
		Description: "The distinct values of one frontmatter key (Logseq page properties included) with the number of notes having each, most common first; list values count element by element. " +
			"Use it to see a vault's vocabulary (status, type, keywords) before filtering search_notes by frontmatter. Paginate with next_cursor.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "fm-values", Args: []string{"key"}, Text: textFMValues},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{"key": "status"}`,
		Handler: func(ctx context.Context, env *ops.Env, in *ListFrontmatterValuesIn) (*ListFrontmatterValuesOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := ops.DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			limit := ops.OrDefault(in.Limit, 100)
			hidden, err := env.ReadFence(ctx, vh).Hidden(ctx, vh)
			if err != nil {
				return nil, err
			}
			p, err := frontmatterValues(ctx, vh.Index, in.Key, off, limit, hidden)
			if err != nil {
				return nil, err
			}
			out := &ListFrontmatterValuesOut{Key: in.Key, Values: p.vals, TotalValues: p.total, Notes: p.notes, Suggestions: p.suggestions}
			if off+len(p.vals) < p.total {
				out.NextCursor = ops.EncodeCursor(off + len(p.vals))
			}
			return out, nil
		},
	}
}

// valuesPage is one page of a frontmatter key's values, shared by
// list_frontmatter_values and list_frontmatter_keys {key}.
type valuesPage struct {
	vals         []index.ValueCount
	total, notes int
	suggestions  []string // when no note has the key: keys that look like it
}

// frontmatterValues reads the page of key's values from off on, notes in
// hidden not counted; when the key has no value it suggests similar keys.
func frontmatterValues(ctx context.Context, ix *index.Index, key string, off, limit int, hidden []int64) (valuesPage, error) {
	var p valuesPage
	var err error
	p.vals, p.total, p.notes, err = ix.FrontmatterValuesPage(ctx, key, off, limit, hidden...)
	if err != nil || p.total > 0 {
		return p, err
	}
	keys, err := ix.FrontmatterKeys(ctx, hidden...)
	if err != nil {
		return p, err
	}
	p.suggestions = similarKeys(keys, key)
	return p, nil
}

// writeValues writes the text form of a values page: one line per value,
// or that the key has none and the keys that look like it.
func writeValues(b *strings.Builder, key string, vals []index.ValueCount, total int, suggestions []string) {
	for _, v := range vals {
		fmt.Fprintf(b, "%6d  %s\n", v.Notes, v.Value)
	}
	if total == 0 {
		fmt.Fprintf(b, "no note has a value for %s\n", key)
		if len(suggestions) > 0 {
			fmt.Fprintf(b, "similar keys: %s\n", strings.Join(suggestions, ", "))
		}
	}
}

// similarKeys are the keys that look like key: the same in another case,
// or one containing the other.
func similarKeys(keys []index.KeyCount, key string) []string {
	var out []string
	low := strings.ToLower(key)
	for _, k := range keys {
		kl := strings.ToLower(k.Key)
		if kl == low || strings.Contains(kl, low) || strings.Contains(low, kl) {
			out = append(out, k.Key)
		}
	}
	return out
}

func textFMValues(o any) string {
	out := o.(*ListFrontmatterValuesOut)
	var b strings.Builder
	writeValues(&b, out.Key, out.Values, out.TotalValues, out.Suggestions)
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}
