package read

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// RecentNotesIn is the input of recent_notes.
type RecentNotesIn struct {
	By       string `json:"by,omitempty" jsonschema:"mtime (file modification time, the default) or updated (frontmatter updated/modified, else the file time)"`
	Since    string `json:"since,omitempty" jsonschema:"only notes modified on or after this date (YYYY-MM-DD or an ISO-8601 time)"`
	PathGlob string `json:"path_glob,omitempty" jsonschema:"only notes whose vault-relative path matches this glob, e.g. Meetings/**"`
	Limit    int    `json:"limit,omitempty" jsonschema:"notes per call, 1-200 (default 20)"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault    string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the ordering, date and glob.
func (in *RecentNotesIn) Validate() error {
	switch in.By {
	case "", "mtime", "updated":
	default:
		return errs.New(errs.CodeInvalidInput, "by must be mtime or updated, not %q", in.By).With("by", in.By)
	}
	if in.Since != "" {
		if _, ok := parseTime(in.Since); !ok {
			return errs.New(errs.CodeInvalidInput, "invalid since date %q: use YYYY-MM-DD", in.Since).With("since", in.Since)
		}
	}
	if err := ops.CheckGlob(in.PathGlob); err != nil {
		return err
	}
	return ops.CheckLimit(in.Limit, 200)
}

// RecentNote is one note of recent_notes.
type RecentNote struct {
	Path     string `json:"path" jsonschema:"vault-relative path"`
	Title    string `json:"title" jsonschema:"the note's title"`
	Modified string `json:"modified" jsonschema:"file modification time (UTC, RFC 3339)"`
	Updated  string `json:"updated,omitempty" jsonschema:"frontmatter updated/modified as written, when present"`
}

// RecentNotesOut is the output of recent_notes.
type RecentNotesOut struct {
	By         string       `json:"by" jsonschema:"the ordering used"`
	Notes      []RecentNote `json:"notes" jsonschema:"most recent first"`
	Total      int          `json:"total" jsonschema:"number of notes matching, over all calls"`
	NextCursor string       `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get older notes"`
}

// RecentNotes is the recent_notes operation.
func RecentNotes() ops.Def[RecentNotesIn, RecentNotesOut] {
	return ops.Def[RecentNotesIn, RecentNotesOut]{
		Name:  "recent_notes",
		Title: "Recently changed notes",
		Description: "Notes by most recent change: file modification time, or with by=updated the frontmatter updated/modified date (falling back to the file time). " +
			"Filter by path glob and a since date; paginate with next_cursor.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "recent", Text: textRecent},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound},
		Example:     `{"since": "2026-11-01", "path_glob": "Projects/**", "limit": 10}`,
		Handler: func(ctx context.Context, env *ops.Env, in *RecentNotesIn) (*RecentNotesOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := ops.DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			notes, err := env.ListNotes(ctx, vh, false)
			if err != nil {
				return nil, err
			}
			by := in.By
			if by == "" {
				by = "mtime"
			}
			var since time.Time
			if in.Since != "" {
				since, _ = parseTime(in.Since)
			}
			type row struct {
				n   RecentNote
				key time.Time
			}
			var rows []row
			for _, n := range notes {
				if !ops.GlobMatch(in.PathGlob, n.Path) {
					continue
				}
				mt := time.Unix(0, n.ModTime).UTC()
				key := mt
				if by == "updated" {
					if t, ok := parseTime(n.Updated); ok {
						key = t
					}
				}
				if !since.IsZero() && key.Before(since) {
					continue
				}
				rows = append(rows, row{RecentNote{Path: n.Path, Title: n.Title, Modified: mt.Format(time.RFC3339), Updated: n.Updated}, key})
			}
			sort.SliceStable(rows, func(i, j int) bool {
				if !rows[i].key.Equal(rows[j].key) {
					return rows[i].key.After(rows[j].key)
				}
				return rows[i].n.Path < rows[j].n.Path
			})
			all := make([]RecentNote, len(rows))
			for i, r := range rows {
				all[i] = r.n
			}
			out := &RecentNotesOut{By: by, Total: len(all)}
			out.Notes, out.NextCursor = ops.Page(all, off, ops.OrDefault(in.Limit, 20))
			return out, nil
		},
	}
}

func textRecent(o any) string {
	out := o.(*RecentNotesOut)
	var b strings.Builder
	for _, n := range out.Notes {
		when := n.Modified
		if out.By == "updated" && n.Updated != "" {
			when = n.Updated
		}
		fmt.Fprintf(&b, "%-25s  %s\n", when, n.Path)
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}
