package read

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// ListFrontmatterKeysIn is the input of list_frontmatter_keys.
type ListFrontmatterKeysIn struct {
	Key   string `json:"key,omitempty" jsonschema:"list the distinct values of this key instead of the keys (case-sensitive, as written in the notes)"`
	Limit int    `json:"limit,omitempty" jsonschema:"maximum keys or values returned, 1-1000 (default 100)"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the key's length and the limit.
func (in *ListFrontmatterKeysIn) Validate() error {
	if err := checkKeyBytes(in.Key); err != nil {
		return err
	}
	return ops.CheckLimit(in.Limit, 1000)
}

// ListFrontmatterKeysOut is the output of list_frontmatter_keys.
type ListFrontmatterKeysOut struct {
	Keys        []index.KeyCount   `json:"keys,omitzero" jsonschema:"without key: every frontmatter key, most used first"`
	TotalKeys   int                `json:"total_keys,omitempty" jsonschema:"without key: number of distinct keys"`
	Key         string             `json:"key,omitempty" jsonschema:"with key: the key whose values are listed"`
	Notes       int                `json:"notes,omitempty" jsonschema:"with key: number of notes with a value for it"`
	Values      []index.ValueCount `json:"values,omitzero" jsonschema:"with key: its distinct values (list items one by one), most used first"`
	TotalValues int                `json:"total_values,omitempty" jsonschema:"with key: number of distinct values"`
	Truncated   bool               `json:"truncated" jsonschema:"true when more keys or values exist than limit"`
	Suggestions []string           `json:"suggestions,omitempty" jsonschema:"with an unknown key: existing keys that look like it"`
}

// ListFrontmatterKeys is the list_frontmatter_keys operation.
func ListFrontmatterKeys() ops.Def[ListFrontmatterKeysIn, ListFrontmatterKeysOut] {
	return ops.Def[ListFrontmatterKeysIn, ListFrontmatterKeysOut]{
		Name:  "list_frontmatter_keys",
		Title: "List frontmatter keys",
		Description: "Every frontmatter key used in the vault (Logseq page properties included) with the number of notes using it and the value types seen, most used first. " +
			"With key: that key's distinct values (list items one by one) with note counts. Use it before filtering search_notes by frontmatter or writing frontmatter consistently.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "fm-keys", Text: textFMKeys},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{"key": "status"}`,
		Handler: func(ctx context.Context, env *ops.Env, in *ListFrontmatterKeysIn) (*ListFrontmatterKeysOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			limit := ops.OrDefault(in.Limit, 100)
			hidden, err := env.ReadFence(ctx, vh).Hidden(ctx, vh)
			if err != nil {
				return nil, err
			}
			if in.Key == "" {
				keys, err := vh.Index.FrontmatterKeys(ctx, hidden...)
				if err != nil {
					return nil, err
				}
				out := &ListFrontmatterKeysOut{TotalKeys: len(keys), Keys: keys, Truncated: len(keys) > limit}
				if out.Truncated {
					out.Keys = keys[:limit]
				}
				return out, nil
			}
			p, err := frontmatterValues(ctx, vh.Index, in.Key, 0, limit, hidden)
			if err != nil {
				return nil, err
			}
			return &ListFrontmatterKeysOut{Key: in.Key, Notes: p.notes, Values: p.vals, TotalValues: p.total,
				Truncated: p.total > len(p.vals), Suggestions: p.suggestions}, nil
		},
	}
}

func textFMKeys(o any) string {
	out := o.(*ListFrontmatterKeysOut)
	var b strings.Builder
	if out.Key == "" {
		for _, k := range out.Keys {
			fmt.Fprintf(&b, "%6d  %s  (%s)\n", k.Notes, k.Key, strings.Join(k.Types, ", "))
		}
	} else {
		writeValues(&b, out.Key, out.Values, out.TotalValues, out.Suggestions)
	}
	if out.Truncated {
		b.WriteString("… more not shown: raise --limit\n")
	}
	return b.String()
}
