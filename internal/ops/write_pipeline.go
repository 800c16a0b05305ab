package ops

import (
	"context"
	"fmt"
	"sort"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/vault"
)

// NoteFile is a note as a write read it (under its lock).
type NoteFile struct {
	Rel    string // vault-relative path, cleaned
	Exists bool
	Raw    []byte // the file's bytes
	Etag   string
	Format vault.Format // BOM and line endings, kept when it is written back
	Text   string       // decoded: LF, no BOM
}

// Stage collects the files a write reads and the changes it plans: a
// write's Build reads notes (Read, ReadText, ReadGuarded) and plans their
// new state (Put, Create, PutBytes, Remove, Trash, Move); RunWrite then
// previews or commits the plan.
type Stage struct {
	// Vault is the vault being written.
	Vault *VaultHandle
	// Main is the note the result is about.
	Main string
	// Warnings are passed on to the result.
	Warnings []string

	env   *Env
	w     *vault.Writer
	fence *Fence // the caller's read fence: a fenced note is not there
	files map[string]*NoteFile
	ops   []vault.FileOp
	// moves maps the old path of a moved note to its new path.
	moves map[string]string
	// texts holds the new text of every written path, for diffs.
	texts map[string]string
	// trashPaths is where each trashed note goes (for the preview).
	trashPaths map[string]string
}

// Read reads a note under its lock. A missing note is Exists=false.
func (s *Stage) Read(rel string) (*NoteFile, error) {
	clean, err := s.w.Target(rel)
	if err != nil {
		return nil, err
	}
	if !s.fence.Allows(clean) {
		// A write would show the note (a preview's diff, an etag) or tell
		// that it exists (a create that finds it taken): refused the same
		// way whether it exists or not.
		return nil, FencedWrite(clean)
	}
	if f := s.files[clean]; f != nil {
		return f, nil
	}
	b, etag, exists, err := s.w.ReadState(clean)
	if err != nil {
		return nil, err
	}
	f := &NoteFile{Rel: clean, Exists: exists, Raw: b, Etag: etag, Format: vault.NewFileFormat}
	if exists {
		f.Format = vault.DetectFormat(b)
		if vault.CheckText(clean, b) == nil {
			f.Text = f.Format.Decode(b)
		}
	}
	s.files[clean] = f
	return f, nil
}

// ReadText reads a note that must exist and be UTF-8 text.
func (s *Stage) ReadText(rel string) (*NoteFile, error) {
	f, err := s.Read(rel)
	if err != nil {
		return nil, err
	}
	if !f.Exists {
		return nil, errs.New(errs.CodeNotFound, "note not found: %s", f.Rel).With("path", f.Rel)
	}
	if err := vault.CheckText(f.Rel, f.Raw); err != nil {
		return nil, err
	}
	return f, nil
}

// Put plans new text for a note that exists (or creates it).
func (s *Stage) Put(f *NoteFile, text string) {
	data := f.Format.Encode(text)
	s.ops = append(s.ops, vault.FileOp{Kind: vault.OpPut, Path: f.Rel, Data: data, Guard: true, Etag: f.Etag})
	s.texts[f.Rel] = text
}

// Create plans a new note; the path must be free when the change is applied.
func (s *Stage) Create(rel, text string) {
	s.ops = append(s.ops, vault.FileOp{Kind: vault.OpCreate, Path: rel, Data: vault.NewFileFormat.Encode(text), Guard: true})
	s.texts[rel] = text
}

// PutBytes plans exact bytes for a path (undo restores files byte for
// byte): created when f does not exist, else replaced.
func (s *Stage) PutBytes(f *NoteFile, data []byte) {
	kind := vault.OpPut
	if !f.Exists {
		kind = vault.OpCreate
	}
	s.ops = append(s.ops, vault.FileOp{Kind: kind, Path: f.Rel, Data: data, Guard: true, Etag: f.Etag})
	s.texts[f.Rel] = vault.DetectFormat(data).Decode(data)
}

// Remove plans unlinking a note whose bytes live on elsewhere.
func (s *Stage) Remove(f *NoteFile) {
	s.ops = append(s.ops, vault.FileOp{Kind: vault.OpRemove, Path: f.Rel, Guard: true, Etag: f.Etag})
}

// Trash plans moving a note to .trash/. A trash loci may not use (a link
// planted at .trash) fails the preview as it would fail the write.
func (s *Stage) Trash(f *NoteFile) error {
	tr, err := s.w.TrashTarget(f.Rel)
	if err != nil {
		return err
	}
	s.ops = append(s.ops, vault.FileOp{Kind: vault.OpTrash, Path: f.Rel, Guard: true, Etag: f.Etag})
	s.trashPaths[f.Rel] = tr
	return nil
}

// Move plans a note's move to a free path, with new text.
func (s *Stage) Move(f *NoteFile, to, text string) {
	s.ops = append(s.ops,
		vault.FileOp{Kind: vault.OpCreate, Path: to, Data: f.Format.Encode(text), Guard: true},
		vault.FileOp{Kind: vault.OpRemove, Path: f.Rel, Guard: true, Etag: f.Etag})
	s.texts[to] = text
	s.moves[f.Rel] = to
}

// WriteSpec describes one write for RunWrite.
type WriteSpec struct {
	// Op names the operation (journal, audit, events, errors).
	Op    string
	Vault *VaultHandle
	Opts  *WriteOpts
	// Locks are the paths locked for the whole write.
	Locks []string
	// Build reads the notes and plans the change.
	Build func(s *Stage) error
	// Undoes names the journal entries an undo reverts.
	Undoes []string
	// GuardPath and GuardEtag, when set, are checked before waiting for the
	// locks too: a call bound to fail with etag_mismatch fails at once
	// instead of queueing behind the writer that changed the note. The
	// check under the lock (in Build) is the one that counts.
	GuardPath, GuardEtag string
	// Propose marks an AI proposal: its preview runs where writes are off
	// (only its apply needs them).
	Propose bool
}

// RunWrite runs the shared write pipeline: lock the paths, read them and
// plan the change (build), then either describe it (preview) or commit it
// through the vault's writer and re-index the changed notes. It is the one
// place every write goes through, so it is where the vault's own write
// settings are enforced: a write operation (preview or apply) or an AI
// apply on a vault whose settings do not allow writes is writes_disabled,
// before anything is read, locked or created.
func RunWrite(ctx context.Context, env *Env, spec WriteSpec) (*WriteResult, error) {
	if spec.Opts.Apply || !spec.Propose {
		if err := env.CheckWrites(spec.Vault, spec.Op); err != nil {
			return nil, err
		}
	}
	w, err := env.Writer(spec.Vault)
	if err != nil {
		return nil, err
	}
	locks := make([]string, 0, len(spec.Locks))
	for _, p := range spec.Locks {
		if clean, err := w.Target(p); err == nil {
			locks = append(locks, clean)
		} else {
			return nil, err
		}
	}
	fence := env.ReadFence(ctx, spec.Vault)
	if spec.GuardEtag != "" && fence.Allows(spec.GuardPath) {
		if b, etag, ok, err := w.ReadState(spec.GuardPath); err == nil {
			if err := CheckGuard(&NoteFile{Rel: spec.GuardPath, Exists: ok, Raw: b, Etag: etag}, spec.GuardEtag); err != nil {
				return nil, err
			}
		}
	}
	unlock, err := w.Lock(ctx, locks...)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s := &Stage{env: env, fence: fence, Vault: spec.Vault, w: w, files: map[string]*NoteFile{}, moves: map[string]string{}, texts: map[string]string{}, trashPaths: map[string]string{}}
	if err := spec.Build(s); err != nil {
		return nil, err
	}
	res := s.describe()
	if !spec.Opts.Apply {
		switch {
		case res.Action == "none":
			res.Hint = "nothing to change: the note already reads like that"
		default:
			res.Hint = "preview only, nothing was written: call again with apply=true"
			if f := s.files[res.Path]; f != nil && f.Exists {
				res.Hint += fmt.Sprintf(" and if_match=%q", f.Etag)
			} else if from := s.movedFrom(res.Path); from != "" {
				res.Hint += fmt.Sprintf(" and if_match=%q", s.files[from].Etag)
			}
			res.Hint += " to write it"
		}
		return res, nil
	}
	if res.Action == "none" {
		res.Applied = true
		return res, nil
	}
	c := CallerFrom(ctx)
	rec, err := w.Commit(ctx, &vault.Change{Operation: spec.Op, Surface: c.Surface, Session: c.Session, Principal: c.Subject(),
		IdempotencyKey: spec.Opts.IdempotencyKey, Undoes: spec.Undoes, Ops: s.ops})
	unlock()
	if err != nil {
		return nil, err
	}
	res.Applied, res.UndoID = true, rec.ID
	if rec.Warning != "" {
		res.Warnings = append(res.Warnings, rec.Warning)
	}
	for _, fr := range rec.Files {
		for i := range res.Changes {
			ch := &res.Changes[i]
			if ch.Path == fr.Path && fr.TrashPath != "" {
				ch.TrashPath = fr.TrashPath
			}
		}
	}
	res.Etag = res.NewEtag
	env.reindexAfter(ctx, spec.Vault, spec.Opts, res, s.touched())
	env.emitWrite(spec.Vault, spec.Op, c, res)
	return res, nil
}

// reindexAfter re-indexes the changed paths (read-your-writes) unless the
// caller opted out. A failure does not undo the write: it is reported.
func (e *Env) reindexAfter(ctx context.Context, vh *VaultHandle, o *WriteOpts, res *WriteResult, paths []string) {
	if !o.reindex() || len(paths) == 0 {
		return
	}
	if _, err := e.Sync(ctx, vh, index.SyncOptions{Paths: paths, Wait: true}); err != nil {
		res.Warnings = append(res.Warnings, "the change is written but the index could not be updated ("+err.Error()+"); the next sync will pick it up")
		return
	}
	res.Reindexed = true
}

func (s *Stage) movedFrom(to string) string {
	for from, t := range s.moves {
		if t == to {
			return from
		}
	}
	return ""
}

// touched lists every path the planned change writes or removes.
func (s *Stage) touched() []string {
	seen := map[string]bool{}
	var out []string
	for _, op := range s.ops {
		if !seen[op.Path] {
			seen[op.Path] = true
			out = append(out, op.Path)
		}
	}
	sort.Strings(out)
	return out
}

// describe turns the planned ops into a result: one FileChange per file
// (a create+remove pair of a move becomes one "move"), with diffs.
func (s *Stage) describe() *WriteResult {
	res := &WriteResult{Changes: []FileChange{}, Warnings: s.Warnings}
	removedByMove := map[string]bool{}
	for from := range s.moves {
		removedByMove[from] = true
	}
	for _, op := range s.ops {
		f := s.files[op.Path]
		var oldText, oldEtag string
		if f != nil && f.Exists {
			oldText, oldEtag = f.Text, f.Etag
		}
		switch op.Kind {
		case vault.OpPut:
			if f != nil && f.Exists && vault.Etag(op.Data) == f.Etag {
				continue
			}
			act := "update"
			if f == nil || !f.Exists {
				act = "create"
			}
			res.Changes = append(res.Changes, FileChange{Path: op.Path, Action: act, OldEtag: oldEtag, NewEtag: vault.Etag(op.Data),
				Diff: noteedit.UnifiedDiff(op.Path, op.Path, oldText, s.texts[op.Path], act == "create")})
		case vault.OpCreate:
			if from := s.movedFrom(op.Path); from != "" {
				src := s.files[from]
				res.Changes = append(res.Changes, FileChange{Path: from, Action: "move", To: op.Path, OldEtag: src.Etag, NewEtag: vault.Etag(op.Data),
					Diff: noteedit.UnifiedDiff(from, op.Path, src.Text, s.texts[op.Path], false)})
				continue
			}
			res.Changes = append(res.Changes, FileChange{Path: op.Path, Action: "create", NewEtag: vault.Etag(op.Data),
				Diff: noteedit.UnifiedDiff(op.Path, op.Path, "", s.texts[op.Path], true)})
		case vault.OpTrash:
			res.Changes = append(res.Changes, FileChange{Path: op.Path, Action: "delete", OldEtag: oldEtag, TrashPath: s.trashPaths[op.Path]})
		case vault.OpRemove:
			if removedByMove[op.Path] {
				continue
			}
			res.Changes = append(res.Changes, FileChange{Path: op.Path, Action: "remove", OldEtag: oldEtag})
		}
	}
	res.Path, res.Action = s.Main, "none"
	if f := s.files[s.Main]; f != nil && f.Exists {
		res.Etag, res.OldEtag = f.Etag, f.Etag
	}
	for _, ch := range res.Changes {
		if ch.Path != s.Main {
			continue
		}
		res.Action, res.NewEtag = ch.Action, ch.NewEtag
		if ch.Action == "move" {
			res.Path = ch.To
		}
	}
	if res.Action == "none" {
		res.NewEtag = res.Etag
	}
	return res
}

// emitWrite publishes write.applied (and note.moved for each move) on the
// event bus.
func (e *Env) emitWrite(vh *VaultHandle, op string, c Caller, res *WriteResult) {
	if !e.hasEventSubs() {
		return
	}
	paths := make([]string, 0, len(res.Changes))
	for _, ch := range res.Changes {
		paths = append(paths, ch.Path)
		if ch.Action == "move" && ch.To != "" {
			e.Emit(Event{Kind: EventNoteMoved, Vault: vh.Name, Path: ch.To, From: ch.Path, Data: map[string]any{"undo_id": res.UndoID}})
		}
	}
	e.Emit(Event{Kind: EventWriteApplied, Vault: vh.Name, Path: res.Path, Data: map[string]any{
		"operation": op, "action": res.Action, "undo_id": res.UndoID, "paths": paths, "surface": c.Surface, "reindexed": res.Reindexed,
	}})
}

// ReadGuarded reads a note's text for an edit, refused with etag_mismatch
// when want is set and the note is not at that version.
func (s *Stage) ReadGuarded(rel, want string) (*NoteFile, error) {
	f, err := s.ReadText(rel)
	if err != nil {
		return nil, err
	}
	if err := CheckGuard(f, want); err != nil {
		return nil, err
	}
	return f, nil
}
