package write

import (
	"context"
	"fmt"
	"sort"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/vault"
)

// UndoIn is the input of undo.
type UndoIn struct {
	ID      string `json:"id,omitempty" jsonschema:"the undo_id of the change to revert (from a write's result or write_history); default: the latest changes"`
	Session string `json:"session,omitempty" jsonschema:"revert the latest changes of this session (default: your own MCP session; from the CLI and REST: the latest changes of any session)"`
	Count   int    `json:"count,omitempty" jsonschema:"how many of the latest changes to revert, newest first, as one change (default 1, at most 50); not with id"`
	ops.WriteOpts
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
	ops.WriteResult
	Undone []string `json:"undone" jsonschema:"the journal entries reverted (or, in a preview, to revert), newest first"`
}

// Undo is the undo operation.
func Undo() ops.Def[UndoIn, UndoOut] {
	return ops.Def[UndoIn, UndoOut]{
		Name:  "undo",
		Title: "Undo writes",
		Description: "Revert an applied change by its undo_id, or the latest count changes of a session, from the undo journal: every file gets back the bytes it had, " +
			"a moved note goes back with the links that were rewritten, a deleted one comes back from the trash. It is etag-guarded: if a file changed since " +
			"(a later edit, by anyone), nothing is reverted and the call fails with etag_mismatch. The undo is itself a change (undo it to redo). Preview by default.",
		Annotations: ops.Annotations{Destructive: true},
		CLI:         ops.CLI{Use: "undo", Args: []string{"id"}, Text: ops.TextWrite, Short: "Revert a write, or the latest ones (preview; --apply does it)"},
		Errors:      ops.WithErrors(errs.CodeUndoNotFound, errs.CodeNotFound),
		Example:     `{"count": 1}`,
		Toolset:     ops.ToolsetWrites,
		ScopeFor:    undoScope,
		Handler:     undoWrites,
	}
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

func undoWrites(ctx context.Context, env *ops.Env, in *UndoIn) (*UndoOut, error) {
	vh, w, err := ops.WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	return ops.Idempotent(ctx, env, vh, "undo", in, &in.WriteOpts, func() (*UndoOut, error) {
		targets, err := undoTargets(ctx, w, in)
		if err != nil {
			return nil, err
		}
		if foreignChange(ctx, targets) {
			if err := ops.RequireScope(ctx, "undo", auth.ScopeDestructive); err != nil {
				return nil, err // the selection changed after the pipeline checked the scope
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
		res, err := ops.RunWrite(ctx, env, ops.WriteSpec{Op: "undo", Vault: vh, Opts: &in.WriteOpts, Locks: paths, Undoes: ids, Build: func(s *ops.Stage) error {
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

// undoTargets selects the journal entries an undo reverts: the one named
// by id, or the latest count of a session (the caller's own MCP session by
// default) that are not undone yet.
func undoTargets(ctx context.Context, w *vault.Writer, in *UndoIn) ([]*vault.JournalEntry, error) {
	entries, err := w.Journal()
	if err != nil {
		return nil, err
	}
	done := undoneBy(entries)
	if in.ID != "" {
		e, err := w.JournalEntry(in.ID)
		if err != nil {
			return nil, err
		}
		if u := done[e.ID]; u != "" {
			return nil, errs.New(errs.CodeConflict, "change %s was already undone by %s (undo that to redo it)", e.ID, u).With("id", e.ID).With("undone_by", u)
		}
		return []*vault.JournalEntry{e}, nil
	}
	session := in.Session
	if c := ops.CallerFrom(ctx); session == "" && c.Surface == "mcp" {
		session = c.Session
	}
	count := ops.OrDefault(in.Count, 1)
	var targets []*vault.JournalEntry
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
	return targets, nil
}

// foreignChange reports whether a target was recorded by another
// principal than the caller (an entry without one is the owner's).
func foreignChange(ctx context.Context, targets []*vault.JournalEntry) bool {
	me := ops.CallerFrom(ctx).Subject()
	for _, e := range targets {
		who := e.Principal
		if who == "" {
			who = auth.OwnerName
		}
		if who != me {
			return true
		}
	}
	return false
}

// undoScope: undoing another principal's change is destructive; undoing
// one's own is a write.
func undoScope(ctx context.Context, env *ops.Env, in *UndoIn) auth.Scope {
	_, w, err := ops.WriteVault(env, in.Vault)
	if err != nil {
		return ""
	}
	targets, err := undoTargets(ctx, w, in)
	if err != nil {
		return "" // the handler answers
	}
	if foreignChange(ctx, targets) {
		return auth.ScopeDestructive
	}
	return ""
}

// fileState is a file's simulated content while undo entries are replayed.
type fileState struct {
	exists bool
	data   []byte
	etag   string
}

// planUndo replays the targets newest first over the files as they are now,
// checking at each step that a file still has the etag the change left.
func planUndo(s *ops.Stage, w *vault.Writer, targets []*vault.JournalEntry, paths []string) error {
	state := map[string]*fileState{}
	cur := map[string]*ops.NoteFile{}
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
					jf.Path, e.ID, ops.ShortEtag(now), ops.ShortEtag(jf.AfterEtag)).With("path", jf.Path).With("id", e.ID).With("current_etag", st.etag).With("expected_etag", jf.AfterEtag)
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
