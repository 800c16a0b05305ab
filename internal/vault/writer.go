package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// WriterOptions configure a vault's write pipeline.
type WriterOptions struct {
	// WritePaths, when set, are the only doublestar globs writes may touch
	// (matched as written); DenyPaths are never touched (deny wins), in
	// any case: Private/** fences private/ and PRIVATE/ too.
	WritePaths []string
	DenyPaths  []string
	// Journal bounds (defaults DefaultJournalMaxBytes, DefaultJournalMaxAge).
	JournalMaxBytes int64
	JournalMaxAge   time.Duration
	// LockTimeout bounds waiting for a note's lock (default DefaultLockTimeout).
	LockTimeout time.Duration
	// IdempotencyTTL is how long idempotency keys are remembered (default 24h).
	IdempotencyTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Writer is the one way loci changes a vault. Every write goes through it:
// path policy, per-note locks (in the process and across processes),
// write-ahead undo journal, atomic file replacement, audit log. Its state
// lives in <vault>/.loci/ (journal/, idempotency/, audit.log, write.lock).
type Writer struct {
	v       *Vault
	root    safefs.Root
	opt     WriterOptions
	locks   *locker
	journal *journal
	idem    *idemStore
	audit   *auditLog

	afterApply func(i int) // test hook: runs after the i-th file of a change is applied
}

// NewWriter returns the write pipeline of v.
func NewWriter(v *Vault, opt WriterOptions) (*Writer, error) {
	for _, g := range append(append([]string{}, opt.WritePaths...), opt.DenyPaths...) {
		if !doublestar.ValidatePattern(g) {
			return nil, errs.New(errs.CodeInvalidInput, "invalid write_paths/deny_paths glob %q", g)
		}
	}
	if opt.JournalMaxBytes <= 0 {
		opt.JournalMaxBytes = DefaultJournalMaxBytes
	}
	if opt.JournalMaxAge <= 0 {
		opt.JournalMaxAge = DefaultJournalMaxAge
	}
	if opt.LockTimeout <= 0 {
		opt.LockTimeout = DefaultLockTimeout
	}
	if opt.IdempotencyTTL <= 0 {
		opt.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	// The writer's own state lives in <vault>/.loci/, reached like the
	// notes through safefs: no link is followed at any component.
	root := v.FS()
	return &Writer{
		v: v, root: root, opt: opt,
		locks:   lockerFor(root, stateDir+"/write.lock"),
		journal: &journal{root: root, dir: stateDir + "/journal", maxBytes: opt.JournalMaxBytes, maxAge: opt.JournalMaxAge},
		idem:    &idemStore{root: root, dir: stateDir + "/idempotency", ttl: opt.IdempotencyTTL},
		audit:   &auditLog{root: root, rel: stateDir + "/audit.log"},
	}, nil
}

// Vault returns the vault written.
func (w *Writer) Vault() *Vault { return w.v }

// stateDir is the vault-relative folder of the writer's state.
const stateDir = ".loci"

// statePaths are the folders (ending in "/x") and files a commit writes
// besides the notes.
var statePaths = []string{stateDir + "/journal/x", stateDir + "/idempotency/x", stateDir + "/audit.log", stateDir + "/audit.log.1", stateDir + "/write.lock"}

// checkState refuses to start a change when any of the writer's own files
// is a link (.loci/audit.log → ~/.bashrc, .loci/journal → /tmp): the
// journal holds note bytes and the audit log grows by a line per write, so
// neither may land outside the vault, and a change whose audit line or
// undo entry could not be written should not happen at all.
func (w *Writer) checkState() error {
	for _, p := range statePaths {
		if err := w.root.Check(p); err != nil {
			return err
		}
		if strings.HasSuffix(p, "/x") {
			continue
		}
		// A FIFO or a folder planted at a file loci appends to.
		if st, err := w.root.Lstat(p); err == nil && !st.Mode().IsRegular() {
			return errs.New(errs.CodePathDenied, "%s is not a regular file; loci keeps its own records there (remove it)", p).
				With("path", p).With("reason", "not a regular file")
		}
	}
	return nil
}

// AuditPath is where applied writes are logged.
func (w *Writer) AuditPath() string { return w.root.Join(w.audit.rel) }

// Target checks that a caller-supplied path may be written and returns its
// canonical vault-relative form. Refused: everything CleanRel refuses
// (absolute paths, '..', encoded traversal, .obsidian/, .git/, .trash/,
// .loci/), whatever is not a note by NoteRule (hidden files and folders,
// files other than .md, a Logseq graph's logseq/ folder, excluded paths),
// paths outside write_paths or inside deny_paths, any path that goes
// through a symbolic link (safefs's check), a new name NameProblem
// refuses, and an existing target that is not a regular file.
func (w *Writer) Target(rel string) (string, error) {
	clean, err := CleanRel(rel)
	if err != nil {
		return "", err
	}
	deny := func(reason string) (string, error) {
		return "", errs.New(errs.CodePathDenied, "path %q may not be written: %s", clean, reason).With("path", clean).With("reason", reason)
	}
	if why := w.v.NoteRule(clean); why != "" {
		return deny(why)
	}
	for _, g := range w.opt.DenyPaths {
		if matchAnyFold([]string{g}, clean) {
			return deny("it matches deny_paths " + g)
		}
	}
	if len(w.opt.WritePaths) > 0 {
		allowed := false
		for _, g := range w.opt.WritePaths {
			if ok, _ := doublestar.Match(g, clean); ok {
				allowed = true
				break
			}
		}
		if !allowed {
			return deny("it is outside write_paths (" + strings.Join(w.opt.WritePaths, ", ") + ")")
		}
	}
	// No existing component may be a link (a write never follows one, even
	// one inside the vault), and the folders on the way must be folders.
	missing, err := w.root.Missing(clean)
	if err != nil {
		e := errs.As(err)
		if link, ok := e.Details["symlink"].(string); ok {
			return "", errs.New(errs.CodePathDenied, "path %q may not be written: it goes through a symbolic link (%s); write the real path", clean, link).
				With("path", clean).With("reason", "symlink").With("symlink", link)
		}
		if safefs.IsDenied(err) {
			return deny(e.Message)
		}
		return "", errs.Wrap(err, errs.CodePathDenied, "cannot check path").With("path", clean)
	}
	// What does not exist yet will be created: its names must be names
	// every OS and the apps can hold.
	for k, seg := range missing {
		if why := NameProblem(seg, k < len(missing)-1); why != "" {
			return deny(why)
		}
	}
	if len(missing) == 0 {
		st, err := w.root.Lstat(clean)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			if safefs.IsDenied(err) {
				return "", err
			}
			return "", errs.Wrap(err, errs.CodePathDenied, "cannot check path").With("path", clean)
		}
		if err == nil && !st.Mode().IsRegular() {
			return deny("it is not a regular file")
		}
	}
	return clean, nil
}

// reservedName matches the names Windows reserves for devices, with or
// without an extension (CON, aux.md, COM1, lpt9.txt, ...).
var reservedName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$`)
})

// NameProblem says why seg cannot be the name of a new folder (folder) or
// note, or "" when it can: a folder named like a note (Home.md/) would
// stand where the note's path is; Windows reserves device names and drops
// a trailing dot or space (two names would become one); Windows and
// Obsidian refuse < > : " | ? * in a name (and on NTFS "a:b" names a
// stream of "a"); a name of spaces is invisible.
func NameProblem(seg string, folder bool) string {
	switch {
	case strings.TrimSpace(seg) == "":
		return fmt.Sprintf("%q is only spaces", seg)
	case folder && strings.EqualFold(path.Ext(seg), ".md"):
		return fmt.Sprintf("a folder may not be named like a note (%s)", seg)
	case reservedName().MatchString(seg):
		return fmt.Sprintf("%s is a name Windows reserves for a device", seg)
	case strings.HasSuffix(seg, " ") || strings.HasSuffix(seg, "."):
		return fmt.Sprintf("%q ends with a space or a dot, which Windows drops", seg)
	case strings.HasPrefix(seg, " "):
		return fmt.Sprintf("%q starts with a space", seg)
	}
	for _, r := range seg {
		if r < 0x20 || r == 0x7f {
			return fmt.Sprintf("%q holds a control character", seg)
		}
		if strings.ContainsRune(windowsForbidden, r) {
			return fmt.Sprintf("%q holds %q, which Windows and Obsidian do not allow in a name (%s)", seg, r, windowsForbidden)
		}
	}
	return ""
}

// windowsForbidden are the characters Windows refuses in a file name
// (besides the separators); Obsidian refuses them on every OS.
const windowsForbidden = `<>:"|?*`

// Lock takes the write locks of the given vault-relative paths (or other
// keys) and returns their release. Hold them from reading a note until its
// change is committed: that is what makes the etag check and the write one
// step for every other writer, in this process or another.
func (w *Writer) Lock(ctx context.Context, keys ...string) (func(), error) {
	return w.locks.lock(ctx, w.opt.LockTimeout, keys...)
}

// ReadState reads a note for a change: its bytes and etag, or exists=false.
func (w *Writer) ReadState(rel string) (data []byte, etag string, exists bool, err error) {
	clean, err := w.Target(rel)
	if err != nil {
		return nil, "", false, err
	}
	b, err := w.root.ReadFile(clean)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, readErr(err, clean)
	}
	return b, Etag(b), true, nil
}

// OpKind says what a FileOp does.
type OpKind string

const (
	OpPut    OpKind = "put"    // create or replace with Data
	OpCreate OpKind = "create" // create with Data; the path must be free
	OpTrash  OpKind = "trash"  // move the note to <vault>/.trash/
	OpRemove OpKind = "remove" // unlink (its bytes live on elsewhere, e.g. a move's new path)
)

// FileOp is one file of a Change.
type FileOp struct {
	Kind OpKind
	Path string
	Data []byte
	// Guard, when true, requires the file's etag to be Etag right now
	// ("" = the file must not exist); otherwise etag_mismatch.
	Guard bool
	Etag  string
}

// Change is one atomic unit of writes: journaled as one entry, undone as one.
type Change struct {
	Operation      string
	Surface        string
	Session        string
	Principal      string
	IdempotencyKey string
	Undoes         []string
	Ops            []FileOp
}

// FileResult is what happened to one file.
type FileResult struct {
	Path      string `json:"path"`
	Action    string `json:"action"` // create, update, delete, remove
	OldEtag   string `json:"old_etag,omitempty"`
	NewEtag   string `json:"new_etag,omitempty"`
	TrashPath string `json:"trash_path,omitempty"`
}

// Receipt is the outcome of Commit.
type Receipt struct {
	// ID is the journal entry ("" when nothing needed changing).
	ID    string
	Files []FileResult
	// Warning is set when the change is applied but its audit record could
	// not be written.
	Warning string
}

type applied struct {
	op        FileOp
	before    []byte
	existed   bool
	trashRel  string
	newEtag   string
	oldEtag   string
	action    string
	journalAt int
}

// Commit applies a change: every path is checked against the policy, read,
// and compared with its guard; ops that would not change anything are
// dropped; the undo journal entry is written (and fsynced) first; then each
// file is written atomically, in order; the audit log gets one line. If a
// file fails, the files already written are restored and the entry
// dropped; if one of them cannot be restored, the entry is kept (it holds
// their old bytes) and the error names it (details.undo_id).
// The caller must hold the locks of every path (Lock).
func (w *Writer) Commit(ctx context.Context, c *Change) (*Receipt, error) {
	now := w.opt.Now()
	if err := w.checkState(); err != nil {
		return nil, err
	}
	var todo []*applied
	for _, op := range c.Ops {
		clean, err := w.Target(op.Path)
		if err != nil {
			return nil, err
		}
		op.Path = clean
		a := &applied{op: op}
		b, err := w.root.ReadFile(clean)
		switch {
		case err == nil:
			a.before, a.existed, a.oldEtag = b, true, Etag(b)
		case errors.Is(err, fs.ErrNotExist):
		default:
			return nil, readErr(err, clean)
		}
		if op.Guard && op.Etag != a.oldEtag {
			e := errs.New(errs.CodeEtagMismatch, "%s changed since it was read (etag %s, expected %s); read it again", clean, short(a.oldEtag), short(op.Etag)).
				With("path", clean).With("current_etag", a.oldEtag).With("expected_etag", op.Etag)
			if !a.existed {
				e.Message = fmt.Sprintf("%s no longer exists (expected etag %s)", clean, short(op.Etag))
			}
			return nil, e
		}
		switch op.Kind {
		case OpCreate:
			if a.existed {
				return nil, errs.New(errs.CodeConflict, "%s already exists; loci never overwrites it", clean).With("path", clean).With("current_etag", a.oldEtag)
			}
			a.action, a.newEtag = "create", Etag(op.Data)
		case OpPut:
			a.newEtag = Etag(op.Data)
			if a.existed && a.newEtag == a.oldEtag {
				continue // nothing to change
			}
			a.action = "update"
			if !a.existed {
				a.action = "create"
			}
		case OpTrash, OpRemove:
			if !a.existed {
				return nil, errs.New(errs.CodeNotFound, "note not found: %s", clean).With("path", clean)
			}
			a.action = "delete"
			if op.Kind == OpRemove {
				a.action = "remove"
			}
		default:
			return nil, errs.New(errs.CodeInternal, "unknown write %q", op.Kind)
		}
		todo = append(todo, a)
	}
	if len(todo) == 0 {
		return &Receipt{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Write-ahead: the bytes before every change are durable before any file moves.
	e := &JournalEntry{ID: newID(now), Time: now.UTC(), Operation: c.Operation, Surface: c.Surface, Session: c.Session,
		Principal: c.Principal, IdempotencyKey: c.IdempotencyKey, Undoes: c.Undoes}
	befores := map[int][]byte{}
	for i, a := range todo {
		a.journalAt = i
		jf := JournalFile{Path: a.op.Path, Action: a.action, BeforeEtag: a.oldEtag, AfterEtag: a.newEtag}
		if a.op.Kind == OpTrash {
			// A trash that is a link (.trash → /tmp/outside) is refused
			// here, before the journal or any file changes.
			tr, err := w.trashTarget(a.op.Path)
			if err != nil {
				return nil, err
			}
			a.trashRel = tr
			jf.TrashPath = a.trashRel
		}
		if a.existed {
			befores[i] = a.before
		}
		e.Files = append(e.Files, jf)
	}
	if err := w.journal.record(e, befores); err != nil {
		if safefs.IsDenied(err) {
			return nil, err
		}
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot write the undo journal; nothing was changed").With("journal", w.journal.dir)
	}

	rewrite := false
	for i, a := range todo {
		if err := w.apply(a); err != nil {
			return nil, w.abort(e, todo[:i], a, err)
		}
		if w.afterApply != nil {
			w.afterApply(i)
		}
		if a.trashRel != e.Files[i].TrashPath {
			e.Files[i].TrashPath = a.trashRel
			rewrite = true
		}
	}
	if rewrite {
		w.journal.rewrite(e)
	}

	rec := &Receipt{ID: e.ID}
	wr := &WriteRecord{Time: now.UTC(), Vault: w.v.Name, Surface: c.Surface, Session: c.Session, Principal: c.Principal,
		Operation: c.Operation, IdempotencyKey: c.IdempotencyKey, UndoID: e.ID, Undoes: c.Undoes}
	for _, a := range todo {
		fr := FileResult{Path: a.op.Path, Action: a.action, OldEtag: a.oldEtag, NewEtag: a.newEtag, TrashPath: a.trashRel}
		rec.Files = append(rec.Files, fr)
		wr.Paths = append(wr.Paths, a.op.Path)
		wr.Changes = append(wr.Changes, AuditChange(fr))
	}
	if err := w.audit.append(wr); err != nil {
		rec.Warning = "the change is applied but its audit record could not be written: " + err.Error()
	}
	if w.journal.pruneDue(now) {
		w.journal.prune(now)
	}
	return rec, nil
}

func (w *Writer) apply(a *applied) error {
	switch a.op.Kind {
	case OpCreate:
		return writeFileAtomic(w.root, a.op.Path, a.op.Data, true)
	case OpPut:
		return writeFileAtomic(w.root, a.op.Path, a.op.Data, !a.existed)
	case OpRemove:
		return removeFile(w.root, a.op.Path)
	case OpTrash:
		for n := 0; n < 1000; n++ {
			err := moveNoReplace(w.root, a.op.Path, a.trashRel)
			if !errors.Is(err, errExist) {
				return err
			}
			if a.trashRel, err = w.trashTarget(a.op.Path); err != nil {
				return err
			}
		}
		return errors.New("no free name in the trash")
	}
	return nil
}

// abort ends a change whose file failed (cause) after the files done were
// applied: it restores those, newest first, and drops the journal entry
// only when every one was restored. If any could not be, the entry stays
// (it holds the only copy of their old bytes) and the error names it.
func (w *Writer) abort(e *JournalEntry, done []*applied, failed *applied, cause error) error {
	var notRestored []string
	var rbErr error
	for k := len(done) - 1; k >= 0; k-- {
		if err := w.rollback(done[k]); err != nil {
			notRestored = append(notRestored, done[k].op.Path)
			if rbErr == nil {
				rbErr = err
			}
		}
	}
	if len(notRestored) > 0 {
		// The entry keeps the files that were applied (the failed one and
		// the ones after it never were: undo would refuse a file that is
		// neither as before nor as after) and points at the trash copies
		// the deletes really made.
		e.Files = e.Files[:len(done)]
		for i, a := range done {
			e.Files[i].TrashPath = a.trashRel
		}
		w.journal.rewrite(e)
		return errs.Wrap(cause, errs.CodeInternal, fmt.Sprintf(
			"cannot write %s, and %s could not be restored (%v); the undo journal keeps the old bytes in entry %s: undo %s restores them",
			failed.op.Path, strings.Join(notRestored, ", "), rbErr, e.ID, e.ID)).
			With("path", failed.op.Path).With("undo_id", e.ID).With("not_restored", notRestored)
	}
	w.journal.drop(e.ID)
	switch {
	case errors.Is(cause, errExist):
		return errs.New(errs.CodeConflict, "%s already exists; loci never overwrites it", failed.op.Path).With("path", failed.op.Path)
	case safefs.IsDenied(cause):
		return cause
	}
	return errs.Wrap(cause, errs.CodeInternal, "cannot write "+failed.op.Path+"; every file of the change was restored").With("path", failed.op.Path)
}

// rollback restores a file applied earlier in a change that failed.
func (w *Writer) rollback(a *applied) error {
	switch {
	case a.op.Kind == OpTrash:
		return moveNoReplace(w.root, a.trashRel, a.op.Path)
	case a.existed:
		return writeFileAtomic(w.root, a.op.Path, a.before, false)
	default:
		return removeFile(w.root, a.op.Path)
	}
}

// trashDir is the vault-relative trash folder (Obsidian's own).
const trashDir = ".trash"

// trashTarget picks a free name under <vault>/.trash/ for rel, keeping its
// folders (Projects/A.md → .trash/Projects/A.md, then "A 2.md", ...). A
// link anywhere on the way (.trash itself, or a folder inside it) is
// path_denied naming it: a delete never moves a note out of the vault.
func (w *Writer) trashTarget(rel string) (string, error) {
	dir, file := path.Split(rel)
	ext := path.Ext(file)
	stem := strings.TrimSuffix(file, ext)
	if err := w.root.Check(trashDir + "/" + dir + file); err != nil {
		return "", err
	}
	for n := 1; ; n++ {
		name := file
		if n > 1 {
			name = fmt.Sprintf("%s %d%s", stem, n, ext)
		}
		tr := trashDir + "/" + dir + name
		if _, err := w.root.Lstat(tr); errors.Is(err, fs.ErrNotExist) || n > 10000 {
			return tr, nil
		} else if safefs.IsDenied(err) {
			return "", err
		}
	}
}

// TrashTarget is where a delete of rel would put it now (a preview; the
// name is picked again when the delete is applied). A trash that loci
// refuses to use is an error here too, so a preview shows the refusal.
func (w *Writer) TrashTarget(rel string) (string, error) { return w.trashTarget(rel) }

// RemoveTrashCopy deletes a file loci put in the trash if it still has the
// given etag (undoing a delete restores the note and drops that copy).
func (w *Writer) RemoveTrashCopy(trashRel, etag string) bool {
	if !strings.HasPrefix(trashRel, trashDir+"/") || strings.Contains(trashRel, "..") {
		return false
	}
	b, err := w.root.ReadFile(trashRel)
	if err != nil || Etag(b) != etag {
		return false
	}
	return removeFile(w.root, trashRel) == nil
}

// Journal returns every journal entry, oldest first.
func (w *Writer) Journal() ([]*JournalEntry, error) { return w.journal.list() }

// JournalEntry returns one entry by id.
func (w *Writer) JournalEntry(id string) (*JournalEntry, error) { return w.journal.load(id) }

// JournalBlob returns the bytes a journaled file had before its change.
func (w *Writer) JournalBlob(id, blob string) ([]byte, error) { return w.journal.blob(id, blob) }

// PruneJournal applies the journal's size and age bounds now.
func (w *Writer) PruneJournal() { w.journal.prune(w.opt.Now()) }

// IdempotencyLookup returns the stored result of key, or nil.
func (w *Writer) IdempotencyLookup(key string) (*IdempotencyRecord, error) {
	return w.idem.lookup(key, w.opt.Now())
}

// IdempotencyStore remembers the result of the first applied call with a key.
func (w *Writer) IdempotencyStore(r *IdempotencyRecord) error {
	r.Time = w.opt.Now().UTC()
	return w.idem.store(r, w.opt.Now())
}

// IdempotencyLockKey is the lock key that serializes calls sharing an
// idempotency key.
func IdempotencyLockKey(key string) string { return "\x00idempotency\x00" + key }

// Now returns the writer's clock.
func (w *Writer) Now() time.Time { return w.opt.Now() }

// readErr maps a failed read of a note the writer is about to change:
// safefs's refusals (a link, a special file) keep their code.
func readErr(err error, rel string) error {
	if safefs.IsDenied(err) {
		return err
	}
	return errs.Wrap(err, errs.CodeInternal, "cannot read note").With("path", rel)
}

func short(etag string) string {
	if etag == "" {
		return "(none)"
	}
	if len(etag) > 12 {
		return etag[:12] + "…"
	}
	return etag
}
