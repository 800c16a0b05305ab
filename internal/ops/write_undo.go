package ops

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/vault"
)

// UndoIn is the input of undo.
type UndoIn struct {
	ID      string `json:"id,omitempty" jsonschema:"the undo_id of the change to revert (from a write's result or write_history); default: the latest changes"`
	Session string `json:"session,omitempty" jsonschema:"revert the latest changes of this session (default: your own MCP session; from the CLI and REST: the latest changes of any session)"`
	Count   int    `json:"count,omitempty" jsonschema:"how many of the latest changes to revert, newest first, as one change (default 1, at most 50); not with id"`
	WriteOpts
}

// Validate checks the selection.
func (in *UndoIn) Validate() error {
	if in.ID != "" && (in.Count != 0 || in.Session != "") {
		return errs.New(errs.CodeInvalidInput, "pass id, or session and count, not both")
	}
	if in.Count < 0 || in.Count > 50 {
		return errs.New(errs.CodeInvalidInput, "count must be between 1 and 50").With("count", in.Count)
	}
	return in.Check()
}

// UndoOut is the output of undo.
type UndoOut struct {
	WriteResult
	Undone []string `json:"undone" jsonschema:"the journal entries reverted (or, in a preview, to revert), newest first"`
}

// WriteHistoryIn is the input of write_history.
type WriteHistoryIn struct {
	Path    string `json:"path,omitempty" jsonschema:"only changes that touched this vault-relative path"`
	Session string `json:"session,omitempty" jsonschema:"only changes made in this session"`
	Limit   int    `json:"limit,omitempty" jsonschema:"entries per call, 1-200 (default 20)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault   string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the limit.
func (in *WriteHistoryIn) Validate() error { return CheckLimit(in.Limit, 200) }

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
	Subject        string        `json:"subject,omitempty" jsonschema:"the authenticated principal, if any"`
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

func registerUndo(r *Registry) {
	register(r, Undo())
	register(r, WriteHistory())
}

// undoneBy maps each entry reverted by a (not itself reverted) undo to that undo.
func undoneBy(entries []*vault.JournalEntry) map[string]string {
	by := map[string]*vault.JournalEntry{}
	for _, e := range entries {
		by[e.ID] = e
	}
	memo := map[string]string{}
	var undone func(id string, depth int) string
	undone = func(id string, depth int) string {
		if v, ok := memo[id]; ok || depth > 1000 {
			return v
		}
		memo[id] = ""
		for _, u := range entries {
			if u.ID <= id || !containsStr(u.Undoes, id) {
				continue
			}
			if undone(u.ID, depth+1) == "" {
				memo[id] = u.ID
			}
		}
		return memo[id]
	}
	out := map[string]string{}
	for _, e := range entries {
		if u := undone(e.ID, 0); u != "" {
			out[e.ID] = u
		}
	}
	return out
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func undoWrites(ctx context.Context, env *Env, in *UndoIn) (*UndoOut, error) {
	vh, w, err := WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	return Idempotent(ctx, env, vh, "undo", in, &in.WriteOpts, func() (*UndoOut, error) {
		entries, err := w.Journal()
		if err != nil {
			return nil, err
		}
		done := undoneBy(entries)
		var targets []*vault.JournalEntry
		if in.ID != "" {
			e, err := w.JournalEntry(in.ID)
			if err != nil {
				return nil, err
			}
			if u := done[e.ID]; u != "" {
				return nil, errs.New(errs.CodeConflict, "change %s was already undone by %s (undo that to redo it)", e.ID, u).With("id", e.ID).With("undone_by", u)
			}
			targets = []*vault.JournalEntry{e}
		} else {
			session := in.Session
			if c := CallerFrom(ctx); session == "" && c.Surface == "mcp" {
				session = c.Session
			}
			count := OrDefault(in.Count, 1)
			for i := len(entries) - 1; i >= 0 && len(targets) < count; i-- {
				e := entries[i]
				if len(e.Undoes) > 0 || done[e.ID] != "" || (session != "" && e.Session != session) {
					continue
				}
				targets = append(targets, e)
			}
			if len(targets) == 0 {
				msg := "nothing to undo: the journal holds no change that is not undone yet"
				if session != "" {
					msg = fmt.Sprintf("nothing to undo in session %s (pass session, or an id from write_history)", session)
				}
				return nil, errs.New(errs.CodeUndoNotFound, "%s", msg).With("session", session)
			}
		}
		var ids []string
		pathSet := map[string]bool{}
		for _, e := range targets {
			ids = append(ids, e.ID)
			for _, f := range e.Files {
				pathSet[f.Path] = true
			}
		}
		var paths []string
		for p := range pathSet {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		res, err := RunWrite(ctx, env, WriteSpec{Op: "undo", Vault: vh, Opts: &in.WriteOpts, Locks: paths, Undoes: ids, Build: func(s *Stage) error {
			return planUndo(s, w, targets, paths)
		}})
		if err != nil {
			return nil, err
		}
		if res.Applied {
			// Deleted notes are back: drop the copies the deletes left in the trash.
			for _, e := range targets {
				for _, f := range e.Files {
					if f.TrashPath != "" {
						w.RemoveTrashCopy(f.TrashPath, f.BeforeEtag)
					}
				}
			}
		}
		return &UndoOut{WriteResult: *res, Undone: ids}, nil
	})
}

// fileState is a file's simulated content while undo entries are replayed.
type fileState struct {
	exists bool
	data   []byte
	etag   string
}

// planUndo replays the targets newest first over the files as they are now,
// checking at each step that a file still has the etag the change left.
func planUndo(s *Stage, w *vault.Writer, targets []*vault.JournalEntry, paths []string) error {
	state := map[string]*fileState{}
	cur := map[string]*NoteFile{}
	for _, p := range paths {
		f, err := s.Read(p)
		if err != nil {
			return err
		}
		cur[p] = f
		state[p] = &fileState{exists: f.Exists, data: f.Raw, etag: f.Etag}
	}
	for _, e := range targets {
		for i := len(e.Files) - 1; i >= 0; i-- {
			jf := e.Files[i]
			st := state[jf.Path]
			switch st.etag {
			case jf.AfterEtag:
			case jf.BeforeEtag:
				continue // the change never reached this file (or it was reverted by hand)
			default:
				now := st.etag
				if now == "" {
					now = "(no file)"
				}
				return errs.New(errs.CodeEtagMismatch, "%s changed after change %s (its etag is now %s, the change left %s); undoing would overwrite that later edit, so nothing was reverted",
					jf.Path, e.ID, ShortEtag(now), ShortEtag(jf.AfterEtag)).With("path", jf.Path).With("id", e.ID).With("current_etag", st.etag).With("expected_etag", jf.AfterEtag)
			}
			if jf.BeforeEtag == "" {
				state[jf.Path] = &fileState{}
				continue
			}
			b, err := w.JournalBlob(e.ID, jf.Blob)
			if err != nil {
				return err
			}
			if vault.Etag(b) != jf.BeforeEtag {
				return errs.New(errs.CodeInternal, "the journal copy of %s in change %s is damaged; nothing was reverted", jf.Path, e.ID).With("path", jf.Path).With("id", e.ID)
			}
			state[jf.Path] = &fileState{exists: true, data: b, etag: jf.BeforeEtag}
		}
	}
	// Notes the changes created go away: unlinked when another note comes
	// back in the same undo (an undone move), else to the trash.
	restores := false
	for _, p := range paths {
		restores = restores || (state[p].exists && !cur[p].Exists)
	}
	// The result is about the first file that comes back (or changes).
	s.Main = targets[0].Files[0].Path
	for _, jf := range targets[0].Files {
		if state[jf.Path].exists {
			s.Main = jf.Path
			break
		}
	}
	for _, p := range paths {
		f, st := cur[p], state[p]
		switch {
		case st.etag == f.Etag:
		case !st.exists:
			if restores {
				s.Remove(f)
			} else if err := s.Trash(f); err != nil {
				return err
			}
		default:
			s.PutBytes(f, st.data)
		}
	}
	return nil
}

func writeHistory(ctx context.Context, env *Env, in *WriteHistoryIn) (*WriteHistoryOut, error) {
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
	off, err := DecodeCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	entries, err := w.Journal()
	if err != nil {
		return nil, err
	}
	done := undoneBy(entries)
	var all []HistoryEntry
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if in.Session != "" && e.Session != in.Session {
			continue
		}
		h := HistoryEntry{ID: e.ID, Time: e.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Operation: e.Operation, Surface: e.Surface,
			Session: e.Session, Subject: e.Subject, IdempotencyKey: e.IdempotencyKey, Undoes: e.Undoes, UndoneBy: done[e.ID], Files: []HistoryFile{}}
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
	out.Entries, out.NextCursor = Page(all, off, OrDefault(in.Limit, 20))
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

// Undo is the undo operation.
func Undo() Def[UndoIn, UndoOut] {
	return Def[UndoIn, UndoOut]{
		Name:  "undo",
		Title: "Undo writes",
		Description: "Revert an applied change by its undo_id, or the latest count changes of a session, from the undo journal: every file gets back the bytes it had, " +
			"a moved note goes back with the links that were rewritten, a deleted one comes back from the trash. It is etag-guarded: if a file changed since " +
			"(a later edit, by anyone), nothing is reverted and the call fails with etag_mismatch. The undo is itself a change (undo it to redo). Preview by default.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "undo", Args: []string{"id"}, Text: TextWrite, Short: "Revert a write, or the latest ones (preview; --apply does it)"},
		Errors:      WithErrors(errs.CodeUndoNotFound, errs.CodeNotFound),
		Example:     `{"count": 1}`,
		Toolset:     ToolsetWrites,
		Handler:     undoWrites,
	}
}

// WriteHistory is the write_history operation.
func WriteHistory() Def[WriteHistoryIn, WriteHistoryOut] {
	return Def[WriteHistoryIn, WriteHistoryOut]{
		Name:  "write_history",
		Title: "History of writes",
		Description: "The changes loci applied to the vault, newest first, from the undo journal: undo id, time, operation, surface and session, and each file with its etag before and after. " +
			"Filter by path or session; shows which changes were undone. Use an id with undo.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "history", Text: textHistory},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeVaultNotFound},
		Example:     `{"limit": 10}`,
		Toolset:     ToolsetWrites,
		Handler:     writeHistory,
	}
}
