package read

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// ListTagsIn is the input of list_tags.
type ListTagsIn struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"only tags starting with this (case-insensitive), e.g. project/"`
	Vault  string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// ListTagsOut is the output of list_tags.
type ListTagsOut struct {
	Tags []index.TagCount `json:"tags" jsonschema:"tags with note counts, most used first"`
}

// ListTags is the list_tags operation.
func ListTags() ops.Def[ListTagsIn, ListTagsOut] {
	return ops.Def[ListTagsIn, ListTagsOut]{
		Name:        "list_tags",
		Title:       "List tags",
		Description: "Every tag in the vault (frontmatter and inline #tags, nested tags as written) with the number of notes carrying it, most used first.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "tags", Text: textTags},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{"prefix": "project/"}`,
		Handler: func(ctx context.Context, env *ops.Env, in *ListTagsIn) (*ListTagsOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			hidden, err := env.ReadFence(ctx, vh).Hidden(ctx, vh)
			if err != nil {
				return nil, err
			}
			tags, err := vh.Index.Tags(ctx, hidden...)
			if err != nil {
				return nil, err
			}
			if p := strings.ToLower(strings.TrimPrefix(in.Prefix, "#")); p != "" {
				kept := tags[:0]
				for _, t := range tags {
					if strings.HasPrefix(strings.ToLower(t.Tag), p) {
						kept = append(kept, t)
					}
				}
				tags = kept
			}
			return &ListTagsOut{Tags: tags}, nil
		},
	}
}

func textTags(o any) string {
	var b strings.Builder
	for _, t := range o.(*ListTagsOut).Tags {
		fmt.Fprintf(&b, "%6d  #%s\n", t.Notes, t.Tag)
	}
	return b.String()
}
