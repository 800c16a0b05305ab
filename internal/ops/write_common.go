package ops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/vault"
)

// WriteSettings gate and tune the write operations (docs/writes.md). The
// zero value leaves writes off.
type WriteSettings struct {
	// Enabled turns the write operations on (--enable-writes,
	// LOCI_ENABLE_WRITES=1, writes.enabled in the config).
	Enabled bool
	// ReadOnly refuses every write even when Enabled (--read-only,
	// LOCI_READ_ONLY=1, writes.read_only).
	ReadOnly bool
	// WritePaths, when set, are the only globs writes may touch; DenyPaths
	// are never touched (deny wins).
	WritePaths []string
	DenyPaths  []string
	// Inbox is capture_note's default folder (default "Inbox").
	Inbox string
	// Undo journal bounds (defaults: 100 MiB, 30 days).
	JournalMaxBytes int64
	JournalMaxAge   time.Duration
	// LockTimeout bounds the wait for a note's write lock (default 30s).
	LockTimeout time.Duration
}

// Allowed reports whether write operations may run.
func (s WriteSettings) Allowed() bool { return s.Enabled && !s.ReadOnly }

// check refuses op unless the settings allow writes. vault names the
// vault in the message when several are served ("" otherwise).
func (s WriteSettings) check(op, vault string) *errs.Error {
	what, mode, cfg := "the vault", "loci runs in read-only mode", ".loci/config.yaml"
	if vault != "" {
		what, mode, cfg = fmt.Sprintf("vault %q", vault), "that vault is read-only", "that vault's .loci/config.yaml"
	}
	switch {
	case s.ReadOnly:
		return errs.New(errs.CodeWritesDisabled, "%s changes %s, and %s (--read-only, LOCI_READ_ONLY or writes.read_only in %s)", op, what, mode, cfg).
			With("operation", op).With("reason", "read_only")
	case !s.Enabled:
		return errs.New(errs.CodeWritesDisabled, "%s changes %s, and write operations are off: start loci with --enable-writes (or LOCI_ENABLE_WRITES=1, or writes.enabled: true in %s)", op, what, cfg).
			With("operation", op).With("reason", "disabled")
	}
	return nil
}

// checkWrites refuses op on vh unless vh's own write settings allow writes
// (writes_disabled, with details.vault). vh nil checks Env.Writes.
func (e *Env) checkWrites(vh *VaultHandle, op string) *errs.Error {
	ws := e.WritesFor(vh)
	if vh == nil {
		return ws.check(op, "")
	}
	name := ""
	if len(e.Vaults) > 1 {
		name = vh.Name
	}
	if err := ws.check(op, name); err != nil {
		return err.With("vault", vh.Name)
	}
	return nil
}

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Writer returns the vault's write pipeline, configured from the vault's
// own write settings (WritesFor: path policy, journal bounds, lock
// timeout). It does not check that writes are allowed: write_history reads
// the journal through it, and AI proposals preview through it; every write
// is checked in runWrite.
func (e *Env) Writer(vh *VaultHandle) (*vault.Writer, error) {
	vh.writerOnce.Do(func() {
		ws := e.WritesFor(vh)
		vh.writer, vh.writerErr = vault.NewWriter(vh.Vault, vault.WriterOptions{
			WritePaths: ws.WritePaths, DenyPaths: ws.DenyPaths,
			JournalMaxBytes: ws.JournalMaxBytes, JournalMaxAge: ws.JournalMaxAge,
			LockTimeout: ws.LockTimeout, Now: e.now,
		})
	})
	return vh.writer, vh.writerErr
}

// WriteOpts are the inputs every write operation shares.
type WriteOpts struct {
	Apply          bool   `json:"apply,omitempty" jsonschema:"false (the default) only previews: the result shows the diff, the paths and the etags and nothing is written; true writes the change"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a unique key for this change (e.g. a UUID): a retry with the same key and input returns the first result without writing again; the same key with another input fails with idempotency_key_reused"`
	Reindex        *bool  `json:"reindex,omitempty" jsonschema:"re-index the changed notes before returning (default true), so that the next search sees the change"`
	Vault          string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

func (o *WriteOpts) reindex() bool { return o.Reindex == nil || *o.Reindex }

func (o *WriteOpts) validate() error {
	if len(o.IdempotencyKey) > 200 {
		return errs.New(errs.CodeInvalidInput, "idempotency_key is longer than 200 characters")
	}
	return nil
}

// Guard is the optimistic-concurrency input of operations that change an
// existing note.
type Guard struct {
	IfMatch        string `json:"if_match,omitempty" jsonschema:"the etag of the note as you last read it (read_note, or the etag of your previous write); if the note changed since, nothing is written and the call fails with etag_mismatch and the current etag"`
	ExpectedSHA256 string `json:"expected_sha256,omitempty" jsonschema:"alias of if_match"`
}

// etag returns the expected etag ("" when none was given).
func (g *Guard) etag() (string, error) {
	norm := func(s string) string {
		s = strings.TrimSpace(s)
		s = strings.TrimPrefix(s, "W/")
		s = strings.Trim(s, `"`)
		s = strings.TrimPrefix(strings.ToLower(s), "sha256:")
		return s
	}
	a, b := norm(g.IfMatch), norm(g.ExpectedSHA256)
	if a != "" && b != "" && a != b {
		return "", errs.New(errs.CodeInvalidInput, "if_match and expected_sha256 differ; pass one of them").
			With("if_match", g.IfMatch).With("expected_sha256", g.ExpectedSHA256)
	}
	// Errors name the field the caller used, with the value it sent.
	field, raw := "if_match", g.IfMatch
	if a == "" {
		a, field, raw = b, "expected_sha256", g.ExpectedSHA256
	}
	if a == "" {
		return "", nil
	}
	if len(a) != 64 || strings.Trim(a, "0123456789abcdef") != "" {
		return "", errs.New(errs.CodeInvalidInput, "%s %q is not an etag (64 hex characters, as read_note returns it)", field, raw).
			With("field", field).With(field, raw)
	}
	return a, nil
}

// FileChange is one file of a write's result.
type FileChange struct {
	Path      string `json:"path" jsonschema:"vault-relative path (for a move: the old path)"`
	Action    string `json:"action" jsonschema:"create, update, delete (moved to .trash/), move (to the path in to) or remove"`
	To        string `json:"to,omitempty" jsonschema:"for a move: the new path"`
	OldEtag   string `json:"old_etag,omitempty" jsonschema:"etag before the change (empty for a new file)"`
	NewEtag   string `json:"new_etag,omitempty" jsonschema:"etag after the change (empty when the file goes away)"`
	TrashPath string `json:"trash_path,omitempty" jsonschema:"for a delete: where the note is (or will be) under .trash/"`
	Diff      string `json:"diff,omitempty" jsonschema:"unified diff of the file's text"`
}

// WriteResult is what every write operation returns.
type WriteResult struct {
	Applied   bool         `json:"applied" jsonschema:"true when the change was written; false for a preview (apply was false)"`
	Action    string       `json:"action" jsonschema:"what happens to the main note: create, update, delete, move, or none when there is nothing to change"`
	Path      string       `json:"path" jsonschema:"the main note (after a move: its new path)"`
	Etag      string       `json:"etag,omitempty" jsonschema:"the main note's etag as it is on disk now (after a preview: the current one; after an applied write: the new one); pass it as if_match to the next write"`
	OldEtag   string       `json:"old_etag,omitempty" jsonschema:"the main note's etag before the change (empty when it is created)"`
	NewEtag   string       `json:"new_etag,omitempty" jsonschema:"the main note's etag after the change (for a preview: once applied)"`
	Changes   []FileChange `json:"changes" jsonschema:"every file the change touches, with its unified diff"`
	UndoID    string       `json:"undo_id,omitempty" jsonschema:"the journal entry of an applied change; pass it to undo to revert the whole change"`
	Reindexed bool         `json:"reindexed" jsonschema:"true when the changed notes were re-indexed before returning"`
	Replayed  bool         `json:"replayed,omitempty" jsonschema:"true when this is the stored result of an earlier call with the same idempotency_key (nothing was written now)"`
	Warnings  []string     `json:"warnings,omitempty" jsonschema:"things to know: e.g. links left pointing at a deleted note"`
	Hint      string       `json:"hint,omitempty" jsonschema:"what to do next"`
}

func (r *WriteResult) result() *WriteResult { return r }
func (r *WriteResult) markReplayed()        { r.Replayed = true }

// noteFile is a note as a write read it (under its lock).
type noteFile struct {
	rel    string
	exists bool
	raw    []byte
	etag   string
	format vault.Format
	text   string // decoded: LF, no BOM
}

// stage collects the files a write reads and the changes it plans.
type stage struct {
	env   *Env
	vh    *VaultHandle
	w     *vault.Writer
	files map[string]*noteFile
	ops   []vault.FileOp
	// moves maps the old path of a moved note to its new path.
	moves map[string]string
	// texts holds the new text of every written path, for diffs.
	texts    map[string]string
	warnings []string
	// trashPaths is where each trashed note goes (for the preview).
	trashPaths map[string]string
	// main is the note the result is about.
	main string
}

// read reads a note under its lock. A missing note is exists=false.
func (s *stage) read(rel string) (*noteFile, error) {
	clean, _, err := s.w.Target(rel)
	if err != nil {
		return nil, err
	}
	if f := s.files[clean]; f != nil {
		return f, nil
	}
	b, etag, exists, err := s.w.ReadState(clean)
	if err != nil {
		return nil, err
	}
	f := &noteFile{rel: clean, exists: exists, raw: b, etag: etag, format: vault.NewFileFormat}
	if exists {
		f.format = vault.DetectFormat(b)
		if vault.CheckText(clean, b) == nil {
			f.text = f.format.Decode(b)
		}
	}
	s.files[clean] = f
	return f, nil
}

// readText reads a note that must exist and be UTF-8 text.
func (s *stage) readText(rel string) (*noteFile, error) {
	f, err := s.read(rel)
	if err != nil {
		return nil, err
	}
	if !f.exists {
		return nil, errs.New(errs.CodeNotFound, "note not found: %s", f.rel).With("path", f.rel)
	}
	if err := vault.CheckText(f.rel, f.raw); err != nil {
		return nil, err
	}
	return f, nil
}

// checkGuard compares the caller's if_match with the note's etag.
func checkGuard(f *noteFile, want string) error {
	if want == "" || want == f.etag {
		return nil
	}
	if !f.exists {
		return errs.New(errs.CodeEtagMismatch, "%s does not exist (expected etag %s)", f.rel, want).With("path", f.rel).With("current_etag", "").With("expected_etag", want)
	}
	return errs.New(errs.CodeEtagMismatch, "%s changed since it was read: its etag is now %s; read it again and redo the change", f.rel, f.etag).
		With("path", f.rel).With("current_etag", f.etag).With("expected_etag", want)
}

// put plans new text for a note that exists (or creates it).
func (s *stage) put(f *noteFile, text string) {
	data := f.format.Encode(text)
	s.ops = append(s.ops, vault.FileOp{Kind: vault.OpPut, Path: f.rel, Data: data, Guard: true, Etag: f.etag})
	s.texts[f.rel] = text
}

// create plans a new note; the path must be free when the change is applied.
func (s *stage) create(rel, text string) {
	s.ops = append(s.ops, vault.FileOp{Kind: vault.OpCreate, Path: rel, Data: vault.NewFileFormat.Encode(text), Guard: true})
	s.texts[rel] = text
}

// putBytes plans exact bytes for a path (undo restores files byte for
// byte): created when f does not exist, else replaced.
func (s *stage) putBytes(f *noteFile, data []byte) {
	kind := vault.OpPut
	if !f.exists {
		kind = vault.OpCreate
	}
	s.ops = append(s.ops, vault.FileOp{Kind: kind, Path: f.rel, Data: data, Guard: true, Etag: f.etag})
	s.texts[f.rel] = vault.DetectFormat(data).Decode(data)
}

// remove plans unlinking a note whose bytes live on elsewhere.
func (s *stage) remove(f *noteFile) {
	s.ops = append(s.ops, vault.FileOp{Kind: vault.OpRemove, Path: f.rel, Guard: true, Etag: f.etag})
}

// trash plans moving a note to .trash/. A trash loci may not use (a link
// planted at .trash) fails the preview as it would fail the write.
func (s *stage) trash(f *noteFile) error {
	tr, err := s.w.TrashTarget(f.rel)
	if err != nil {
		return err
	}
	s.ops = append(s.ops, vault.FileOp{Kind: vault.OpTrash, Path: f.rel, Guard: true, Etag: f.etag})
	s.trashPaths[f.rel] = tr
	return nil
}

// move plans a note's move to a free path, with new text.
func (s *stage) move(f *noteFile, to, text string) {
	s.ops = append(s.ops,
		vault.FileOp{Kind: vault.OpCreate, Path: to, Data: f.format.Encode(text), Guard: true},
		vault.FileOp{Kind: vault.OpRemove, Path: f.rel, Guard: true, Etag: f.etag})
	s.texts[to] = text
	s.moves[f.rel] = to
}

// writeSpec describes one write for runWrite.
type writeSpec struct {
	op    string
	vh    *VaultHandle
	opts  *WriteOpts
	locks []string
	build func(s *stage) error
	// undoes names the journal entries an undo reverts.
	undoes []string
	// guardPath and guardEtag, when set, are checked before waiting for the
	// locks too: a call bound to fail with etag_mismatch fails at once
	// instead of queueing behind the writer that changed the note. The
	// check under the lock (in build) is the one that counts.
	guardPath, guardEtag string
	// propose marks an AI proposal: its preview runs where writes are off
	// (only its apply needs them).
	propose bool
}

// runWrite runs the shared write pipeline: lock the paths, read them and
// plan the change (build), then either describe it (preview) or commit it
// through the vault's writer and re-index the changed notes. It is the one
// place every write goes through, so it is where the vault's own write
// settings are enforced: a write operation (preview or apply) or an AI
// apply on a vault whose settings do not allow writes is writes_disabled,
// before anything is read, locked or created.
func runWrite(ctx context.Context, env *Env, spec writeSpec) (*WriteResult, error) {
	if spec.opts.Apply || !spec.propose {
		if err := env.checkWrites(spec.vh, spec.op); err != nil {
			return nil, err
		}
	}
	w, err := env.Writer(spec.vh)
	if err != nil {
		return nil, err
	}
	locks := make([]string, 0, len(spec.locks))
	for _, p := range spec.locks {
		if clean, _, err := w.Target(p); err == nil {
			locks = append(locks, clean)
		} else {
			return nil, err
		}
	}
	if spec.guardEtag != "" {
		if b, etag, ok, err := w.ReadState(spec.guardPath); err == nil {
			if err := checkGuard(&noteFile{rel: spec.guardPath, exists: ok, raw: b, etag: etag}, spec.guardEtag); err != nil {
				return nil, err
			}
		}
	}
	unlock, err := w.Lock(ctx, locks...)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s := &stage{env: env, vh: spec.vh, w: w, files: map[string]*noteFile{}, moves: map[string]string{}, texts: map[string]string{}, trashPaths: map[string]string{}}
	if err := spec.build(s); err != nil {
		return nil, err
	}
	res := s.describe()
	if !spec.opts.Apply {
		switch {
		case res.Action == "none":
			res.Hint = "nothing to change: the note already reads like that"
		default:
			res.Hint = "preview only, nothing was written: call again with apply=true"
			if f := s.files[res.Path]; f != nil && f.exists {
				res.Hint += fmt.Sprintf(" and if_match=%q", f.etag)
			} else if from := s.movedFrom(res.Path); from != "" {
				res.Hint += fmt.Sprintf(" and if_match=%q", s.files[from].etag)
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
	rec, err := w.Commit(ctx, &vault.Change{Operation: spec.op, Surface: c.Surface, Session: c.Session, Subject: c.Subject,
		IdempotencyKey: spec.opts.IdempotencyKey, Undoes: spec.undoes, Ops: s.ops})
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
	env.reindexAfter(ctx, spec.vh, spec.opts, res, s.touched())
	env.emitWrite(spec.vh, spec.op, c, res)
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

func (s *stage) movedFrom(to string) string {
	for from, t := range s.moves {
		if t == to {
			return from
		}
	}
	return ""
}

// touched lists every path the planned change writes or removes.
func (s *stage) touched() []string {
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
func (s *stage) describe() *WriteResult {
	res := &WriteResult{Changes: []FileChange{}, Warnings: s.warnings}
	removedByMove := map[string]bool{}
	for from := range s.moves {
		removedByMove[from] = true
	}
	for _, op := range s.ops {
		f := s.files[op.Path]
		var oldText, oldEtag string
		if f != nil && f.exists {
			oldText, oldEtag = f.text, f.etag
		}
		switch op.Kind {
		case vault.OpPut:
			if f != nil && f.exists && vault.Etag(op.Data) == f.etag {
				continue
			}
			act := "update"
			if f == nil || !f.exists {
				act = "create"
			}
			res.Changes = append(res.Changes, FileChange{Path: op.Path, Action: act, OldEtag: oldEtag, NewEtag: vault.Etag(op.Data),
				Diff: noteedit.UnifiedDiff(op.Path, op.Path, oldText, s.texts[op.Path], act == "create")})
		case vault.OpCreate:
			if from := s.movedFrom(op.Path); from != "" {
				src := s.files[from]
				res.Changes = append(res.Changes, FileChange{Path: from, Action: "move", To: op.Path, OldEtag: src.etag, NewEtag: vault.Etag(op.Data),
					Diff: noteedit.UnifiedDiff(from, op.Path, src.text, s.texts[op.Path], false)})
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
	res.Path, res.Action = s.main, "none"
	if f := s.files[s.main]; f != nil && f.exists {
		res.Etag, res.OldEtag = f.etag, f.etag
	}
	for _, ch := range res.Changes {
		if ch.Path != s.main {
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

// resultOf lets the idempotency wrapper reach the embedded WriteResult.
type resultOf interface {
	result() *WriteResult
	markReplayed()
}

// idempotent runs an applied write at most once per idempotency key: the
// first result is stored under <vault>/.loci/idempotency/ and a retry with
// the same key and the same input gets it back (replayed=true) without
// writing; the same key with a different input is idempotency_key_reused.
// Calls sharing a key are serialized, so two concurrent retries write once.
func idempotent[Out any, PO interface {
	*Out
	resultOf
}](ctx context.Context, env *Env, vh *VaultHandle, op string, in any, o *WriteOpts, run func() (*Out, error)) (*Out, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if !o.Apply || o.IdempotencyKey == "" {
		return run()
	}
	// Checked before a stored result is replayed, too.
	if err := env.checkWrites(vh, op); err != nil {
		return nil, err
	}
	w, err := env.Writer(vh)
	if err != nil {
		return nil, err
	}
	unlock, err := w.Lock(ctx, vault.IdempotencyLockKey(o.IdempotencyKey))
	if err != nil {
		return nil, err
	}
	defer unlock()
	raw, _ := json.Marshal(in)
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])
	rec, err := w.IdempotencyLookup(o.IdempotencyKey)
	if err != nil {
		if errs.Code(err) == errs.CodePathDenied {
			return nil, err // a link planted at .loci/idempotency, named
		}
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot read the idempotency store")
	}
	if rec != nil {
		if rec.Operation != op || rec.InputHash != hash {
			return nil, errs.New(errs.CodeIdempotencyReuse, "idempotency_key %q was used at %s for a different call (%s); use a new key for a new change", o.IdempotencyKey, rec.Time.Format(time.RFC3339), rec.Operation).
				With("idempotency_key", o.IdempotencyKey).With("operation", rec.Operation)
		}
		out := new(Out)
		if err := json.Unmarshal(rec.Result, out); err != nil {
			return nil, errs.Wrap(err, errs.CodeInternal, "the stored result of this idempotency_key is damaged")
		}
		PO(out).markReplayed()
		return out, nil
	}
	out, err := run()
	if err != nil {
		return nil, err
	}
	if r := PO(out).result(); r.Applied {
		b, _ := json.Marshal(out)
		if err := w.IdempotencyStore(&vault.IdempotencyRecord{Key: o.IdempotencyKey, Operation: op, InputHash: hash, Result: b}); err != nil {
			r.Warnings = append(r.Warnings, "the change is written but its idempotency record could not be stored: "+err.Error())
		}
	}
	return out, nil
}

// writeTarget resolves the note an edit names (path, or note reference) to a
// vault-relative path that may be written.
func writeTarget(ctx context.Context, vh *VaultHandle, w *vault.Writer, p, ref string) (string, error) {
	rel := p
	if p == "" {
		r, _, _, err := notePath(ctx, vh, "", ref)
		if err != nil {
			return "", err
		}
		rel = r
	}
	clean, _, err := w.Target(rel)
	return clean, err
}

// writeErrors are the codes every write operation may return.
var writeErrors = []string{errs.CodeInvalidInput, errs.CodeWritesDisabled, errs.CodePathDenied, errs.CodeEtagMismatch,
	errs.CodeConflict, errs.CodeIdempotencyReuse, errs.CodeNoteLocked, errs.CodeVaultNotFound}

func withErrors(extra ...string) []string {
	return append(append([]string{}, writeErrors...), extra...)
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
