package write

import (
	"context"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/vault"
)

// WriteHistoryIn is the input of write_history.
type WriteHistoryIn struct {
	Path    string `json:"path,omitempty" jsonschema:"only changes that touched this vault-relative path"`
	Session string `json:"session,omitempty" jsonschema:"only changes made in this session"`
	Limit   int    `json:"limit,omitempty" jsonschema:"entries per call, 1-200 (default 20)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault   string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the limit.
func (in *WriteHistoryIn) Validate() error { return ops.CheckLimit(in.Limit, 200) }

// HistoryFile is one file of a journaled change.
type HistoryFile struct {
	Path       string `json:"path" jsonschema:"vault-relative path"`
	Action     string `json:"action" jsonschema:"create, update, delete (to .trash/) or remove"`
	BeforeEtag string `json:"before_etag,omitempty" jsonschema:"etag before the change (empty: the file did not exist)"`
	AfterEtag  string `json:"after_etag,omitempty" jsonschema:"etag the change left (empty: the file was removed)"`
	TrashPath  string `json:"trash_path,omitempty" jsonschema:"for a delete: where the note went"`
}

// HistoryEntry is one journaled change.
type HistoryEntry struct {
	ID             string        `json:"id" jsonschema:"the undo id: pass it to undo"`
	Time           string        `json:"time" jsonschema:"when the change was applied (RFC 3339, UTC)"`
	Operation      string        `json:"operation" jsonschema:"the write operation"`
	Surface        string        `json:"surface,omitempty" jsonschema:"cli, mcp or rest"`
	Session        string        `json:"session,omitempty" jsonschema:"the MCP session that made it"`
	Principal      string        `json:"principal,omitempty" jsonschema:"the principal that made the change (owner: the vault token, the CLI or stdio)"`
	IdempotencyKey string        `json:"idempotency_key,omitempty" jsonschema:"the idempotency key of the call"`
	Files          []HistoryFile `json:"files" jsonschema:"the files it changed"`
	Undoes         []string      `json:"undoes,omitempty" jsonschema:"for an undo: the changes it reverted"`
	UndoneBy       string        `json:"undone_by,omitempty" jsonschema:"the undo that reverted this change, if any"`
}

// WriteHistoryOut is the output of write_history.
type WriteHistoryOut struct {
	Entries    []HistoryEntry `json:"entries" jsonschema:"journaled changes, newest first"`
	Total      int            `json:"total" jsonschema:"number of entries matching, over all calls"`
	NextCursor string         `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get older entries"`
}

// WriteHistory is the write_history operation.
func WriteHistory() ops.Def[WriteHistoryIn, WriteHistoryOut] {
	return ops.Def[WriteHistoryIn, WriteHistoryOut]{
		Name:  "write_history",
		Title: "History of writes",
		Description: "The changes loci applied to the vault, newest first, from the undo journal: undo id, time, operation, surface and session, and each file with its etag before and after. " +
			"Filter by path or session; shows which changes were undone. Use an id with undo.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "history", Text: textHistory},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeVaultNotFound},
		Example:     `{"limit": 10}`,
		Toolset:     ops.ToolsetWrites,
		Handler:     writeHistory,
	}
}

func writeHistory(ctx context.Context, env *ops.Env, in *WriteHistoryIn) (*WriteHistoryOut, error) {
	vh, err := env.Vault(in.Vault)
	if err != nil {
		return nil, err
	}
	w, err := env.Writer(vh)
	if err != nil {
		return nil, err
	}
	want := ""
	if in.Path != "" {
		// Confined like any path input (the note itself may be gone).
		if _, want, err = vh.Vault.Abs(in.Path); err != nil {
			return nil, err
		}
	}
	off, err := ops.DecodeCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	entries, err := w.Journal()
	if err != nil {
		return nil, err
	}
	done := undoneBy(entries)
	fence := env.ReadFence(ctx, vh)
	var all []HistoryEntry
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if in.Session != "" && e.Session != in.Session {
			continue
		}
		if fenced(fence, e.Files) {
			continue // a change to a note the caller may not read is not shown
		}
		h := HistoryEntry{ID: e.ID, Time: e.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Operation: e.Operation, Surface: e.Surface,
			Session: e.Session, Principal: e.Principal, IdempotencyKey: e.IdempotencyKey, Undoes: e.Undoes, UndoneBy: done[e.ID], Files: []HistoryFile{}}
		match := want == ""
		for _, f := range e.Files {
			h.Files = append(h.Files, HistoryFile{Path: f.Path, Action: f.Action, BeforeEtag: f.BeforeEtag, AfterEtag: f.AfterEtag, TrashPath: f.TrashPath})
			match = match || strings.EqualFold(f.Path, want)
		}
		if match {
			all = append(all, h)
		}
	}
	out := &WriteHistoryOut{Total: len(all)}
	out.Entries, out.NextCursor = ops.Page(all, off, ops.OrDefault(in.Limit, 20))
	return out, nil
}

func textHistory(o any) string {
	out := o.(*WriteHistoryOut)
	var b strings.Builder
	if len(out.Entries) == 0 {
		return "no journaled writes\n"
	}
	for _, e := range out.Entries {
		fmt.Fprintf(&b, "%s  %s  %s", e.ID, e.Time, e.Operation)
		if e.Surface != "" {
			fmt.Fprintf(&b, "  [%s", e.Surface)
			if e.Session != "" {
				fmt.Fprintf(&b, " %s", e.Session)
			}
			b.WriteString("]")
		}
		if e.UndoneBy != "" {
			fmt.Fprintf(&b, "  (undone by %s)", e.UndoneBy)
		}
		b.WriteString("\n")
		for _, f := range e.Files {
			fmt.Fprintf(&b, "    %-7s %s", f.Action, f.Path)
			if f.TrashPath != "" {
				fmt.Fprintf(&b, " → %s", f.TrashPath)
			}
			b.WriteString("\n")
		}
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}

// fenced reports whether a change touched a path the read fence hides
// (lexically: the note may be gone).
func fenced(f *ops.Fence, files []vault.JournalFile) bool {
	if f == nil {
		return false
	}
	for _, x := range files {
		if !f.Allows(x.Path) {
			return true
		}
	}
	return false
}
