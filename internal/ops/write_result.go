package ops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/vault"
)

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

func (r *WriteResult) markReplayed() { r.Replayed = true }

// resultOf lets the idempotency wrapper reach the embedded WriteResult.
type resultOf interface {
	result() *WriteResult
	markReplayed()
}

// Idempotent runs an applied write at most once per idempotency key: the
// first result is stored under <vault>/.loci/idempotency/ and a retry with
// the same key and the same input gets it back (replayed=true) without
// writing; the same key with a different input is idempotency_key_reused.
// Calls sharing a key are serialized, so two concurrent retries write once.
func Idempotent[Out any, PO interface {
	*Out
	resultOf
}](ctx context.Context, env *Env, vh *VaultHandle, op string, in any, o *WriteOpts, run func() (*Out, error)) (*Out, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if !o.Apply || o.IdempotencyKey == "" {
		return run()
	}
	return RunKeyed(ctx, env, vh, Keyed[Out]{Op: op, Key: o.IdempotencyKey, Input: in, Writes: true,
		Keep:     func(out *Out) bool { return PO(out).result().Applied },
		Replayed: func(out *Out) { PO(out).markReplayed() },
		StoreFailed: func(out *Out, err error) {
			r := PO(out).result()
			r.Warnings = append(r.Warnings, "the change is written but its idempotency record could not be stored: "+err.Error())
		},
	}, run)
}

// Keyed describes a call made at most once per idempotency key (RunKeyed).
type Keyed[Out any] struct {
	// Op names the operation: a key used by another operation is
	// idempotency_key_reused.
	Op  string
	Key string
	// Input identifies the call (hashed): the same key with another input
	// is idempotency_key_reused.
	Input any
	// Writes says whether the call writes to the vault: the vault's write
	// settings are then checked before it runs, and before a stored result
	// is handed back.
	Writes bool
	// Keep says whether a result is stored (nil: every result).
	Keep func(*Out) bool
	// Replayed marks a stored result as it is handed back.
	Replayed func(*Out)
	// StoreFailed records on the result that it could not be stored (the
	// call has happened; failing it would lose what it did).
	StoreFailed func(*Out, error)
}

// RunKeyed runs run at most once per idempotency key in the vault's
// idempotency store (<vault>/.loci/idempotency/, 24 h): the first result
// is stored, and a later call with the same key, operation and input gets
// it back without running. Calls sharing a key are serialized under the
// writer's lock of the key (in this process and across processes), so of
// two concurrent calls one runs and the other replays its result. A store
// that cannot be read fails the call (typed) before it runs.
func RunKeyed[Out any](ctx context.Context, env *Env, vh *VaultHandle, k Keyed[Out], run func() (*Out, error)) (*Out, error) {
	if err := CheckIdempotencyKey(k.Key); err != nil {
		return nil, err
	}
	// Checked before a stored result is replayed, too.
	if k.Writes {
		if err := env.CheckWrites(vh, k.Op); err != nil {
			return nil, err
		}
	}
	w, err := env.Writer(vh)
	if err != nil {
		return nil, err
	}
	unlock, err := w.Lock(ctx, vault.IdempotencyLockKey(k.Key))
	if err != nil {
		return nil, err
	}
	defer unlock()
	raw, _ := json.Marshal(k.Input)
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])
	rec, err := w.IdempotencyLookup(k.Key)
	if err != nil {
		if errs.Code(err) == errs.CodePathDenied {
			return nil, err // a link planted at .loci/idempotency, named
		}
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot read the idempotency store")
	}
	if rec != nil {
		if rec.Operation != k.Op || rec.InputHash != hash {
			return nil, errs.New(errs.CodeIdempotencyReuse, "idempotency_key %q was used at %s for a different call (%s); use a new key for a new call", k.Key, rec.Time.Format(time.RFC3339), rec.Operation).
				With("idempotency_key", k.Key).With("operation", rec.Operation)
		}
		out := new(Out)
		if err := json.Unmarshal(rec.Result, out); err != nil {
			return nil, errs.Wrap(err, errs.CodeInternal, "the stored result of this idempotency_key is damaged")
		}
		if k.Replayed != nil {
			k.Replayed(out)
		}
		return out, nil
	}
	out, err := run()
	if err != nil {
		return nil, err
	}
	if k.Keep == nil || k.Keep(out) {
		b, _ := json.Marshal(out)
		if err := w.IdempotencyStore(&vault.IdempotencyRecord{Key: k.Key, Operation: k.Op, InputHash: hash, Result: b}); err != nil && k.StoreFailed != nil {
			k.StoreFailed(out, err)
		}
	}
	return out, nil
}

// TextWrite renders a write's result for the CLI: the diffs, then one line
// saying what happened (or would happen) and what to do next.
func TextWrite(o any) string { return TextWriteWith(o, "") }

// TextWriteWith is TextWrite with lines of the operation's own (a block's
// uuid, the fixes made) between the diffs and the warnings.
func TextWriteWith(o any, detail string) string {
	ro, ok := o.(resultOf)
	if !ok {
		return ""
	}
	r := ro.result()
	var b strings.Builder
	for _, c := range r.Changes {
		switch {
		case c.Diff != "":
			b.WriteString(c.Diff)
		case c.Action == "delete":
			fmt.Fprintf(&b, "delete %s → %s\n", c.Path, orText(c.TrashPath, ".trash/"))
		default:
			fmt.Fprintf(&b, "%s %s\n", c.Action, c.Path)
		}
	}
	b.WriteString(detail)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	what := fmt.Sprintf("%s %s", r.Action, r.Path)
	for _, c := range r.Changes {
		if c.Action == "move" && c.To == r.Path {
			what = fmt.Sprintf("move %s → %s", c.Path, c.To)
		}
	}
	switch {
	case r.Replayed:
		fmt.Fprintf(&b, "already applied (same idempotency key): %s, etag %s, undo id %s\n", what, ShortEtag(r.Etag), r.UndoID)
	case r.Action == "none":
		fmt.Fprintf(&b, "nothing to change in %s\n", r.Path)
	case r.Applied:
		fmt.Fprintf(&b, "applied: %s", what)
		if r.Etag != "" {
			fmt.Fprintf(&b, " (etag %s)", ShortEtag(r.Etag))
		}
		if r.UndoID != "" {
			fmt.Fprintf(&b, "; undo with: loci undo %s --apply", r.UndoID)
		}
		b.WriteString("\n")
	default:
		fmt.Fprintf(&b, "preview: would %s; nothing was written. Add --apply to write it", what)
		if r.OldEtag != "" {
			fmt.Fprintf(&b, " (and --if-match %s to be safe)", r.OldEtag)
		}
		b.WriteString(".\n")
	}
	return b.String()
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ShortEtag cuts an etag to its first 12 characters, for messages.
func ShortEtag(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
