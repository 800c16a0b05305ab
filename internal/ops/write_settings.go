package ops

import (
	"fmt"
	"time"

	"github.com/loci-dev/loci/internal/errs"
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

// CheckWrites refuses op on vh unless vh's own write settings allow writes
// (writes_disabled, with details.vault). vh nil checks Env.Writes.
func (e *Env) CheckWrites(vh *VaultHandle, op string) *errs.Error {
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

// Clock returns the time of the write operations: Env.Now, else time.Now.
func (e *Env) Clock() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Writer returns the vault's write pipeline, configured from the vault's
// own write settings (WritesFor: path policy, journal bounds, lock
// timeout). It does not check that writes are allowed: write_history reads
// the journal through it, and AI proposals preview through it; every write
// is checked in RunWrite.
func (e *Env) Writer(vh *VaultHandle) (*vault.Writer, error) {
	vh.writerOnce.Do(func() {
		ws := e.WritesFor(vh)
		vh.writer, vh.writerErr = vault.NewWriter(vh.Vault, vault.WriterOptions{
			WritePaths: ws.WritePaths, DenyPaths: ws.DenyPaths,
			JournalMaxBytes: ws.JournalMaxBytes, JournalMaxAge: ws.JournalMaxAge,
			LockTimeout: ws.LockTimeout, Now: e.Clock,
		})
	})
	return vh.writer, vh.writerErr
}
