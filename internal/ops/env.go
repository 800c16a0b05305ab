package ops

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/vault"
)

// VaultHandle is one opened vault with its index.
type VaultHandle struct {
	Name   string
	Vault  *vault.Vault
	Index  *index.Index
	Search *search.Searcher

	// Writes, when set, gates and tunes the write operations on this
	// vault: with several vaults served, each follows its own config
	// (flags and environment apply to all). Nil falls back to Env.Writes.
	Writes *WriteSettings
	// AI, when set, is this vault's AI runtime (its provider, allow/deny
	// globs, cache and cost ledger). Nil falls back to Env.AI.
	AI *ai.Runtime
	// Read is this vault's read fence from its config (read_paths,
	// deny_read_paths); the zero value shows every note. A call's fence
	// narrows it by the principal: Env.ReadFence.
	Read ReadRules

	// fenceMu guards fenceSets: the notes each read fence hides, by the
	// fence's rules, reused while the index's notes stay the same.
	fenceMu   sync.Mutex
	fenceSets map[string]*hiddenSet
	// syncGen counts the syncs of this process that ended (Env.Sync);
	// syncing counts those under way. A hidden set computed at a
	// generation while no sync runs stays right until the next one ends,
	// except for another process's sync, which the fingerprint check
	// catches within fenceRecheck.
	syncGen atomic.Uint64
	syncing atomic.Int32

	mu    sync.Mutex
	state SyncState
	watch *WatchState

	writerOnce sync.Once
	writer     *vault.Writer
	writerErr  error

	// searchOnce, searchLRU and searchCacheOff: the result cache of
	// Search (search.go); off in tests that measure without it.
	searchOnce     sync.Once
	searchLRU      *search.ResultCache
	searchCacheOff bool
	// sharedOnce and shared: what the vault's searches share (searchShared).
	sharedOnce sync.Once
	shared     *search.Shared

	// idMu and givenIDs make the timestamp ids given to notes unique
	// within the process (UniqueTimestampID).
	idMu     sync.Mutex
	givenIDs map[int64]bool
}

// Env is what handlers run against: the opened vaults (the first is the
// default) and process-wide settings.
type Env struct {
	Vaults []*VaultHandle
	// MaxResultBytes caps a serialized result (the response-size governor).
	MaxResultBytes int

	// Audit, when set, receives one record per dispatched call.
	Audit func(AuditRecord)
	// Obs, when set, observes every dispatched call: the calls log,
	// metrics and traces (observe.go: NewObserver). Close flushes it.
	Obs *Observer

	// Writes gates and tunes the write operations of the vaults whose
	// handle sets none (VaultHandle.Writes); the zero value leaves them off
	// (docs/writes.md). Use WritesFor to read a vault's settings.
	Writes WriteSettings
	// Now is the clock of the write operations (default time.Now).
	Now func() time.Time

	// AI is the AI runtime of the vaults whose handle sets none
	// (VaultHandle.AI; docs/ai.md); nil or unconfigured leaves the AI
	// operations off (ai_unavailable) and unadvertised. Use AIFor.
	AI *ai.Runtime

	// Toolsets, when set, are the only toolsets (Groups) the server offers
	// and runs, for every principal including the owner (server.toolsets,
	// --toolsets; see Served).
	Toolsets []string
	// Limits, when set, rate-limits and caps the calls of every principal
	// that came over HTTP (limits.go); nil: no limits.
	Limits *Limiter
	// Confirmations holds the destructive calls waiting for a human
	// (confirm.go); nil: one is made on first use, on the system clock.
	Confirmations *Confirmations
	// Principals, when set, looks a principal up by name (inspect_acl):
	// the owner and the principals file of `loci serve`. Nil knows only
	// the owner.
	Principals func(name string) (*auth.Principal, error)

	bus bus
}

// OpenVault opens a vault and its index (creating the index directory).
func OpenVault(ctx context.Context, root, indexDir string, exclude []string, readOnly bool) (*VaultHandle, error) {
	v, err := vault.Open(root, exclude)
	if err != nil {
		return nil, err
	}
	ix, err := index.Open(ctx, v, index.Options{Dir: indexDir, ReadOnly: readOnly})
	if err != nil {
		return nil, err
	}
	return &VaultHandle{Name: v.Name, Vault: v, Index: ix, Search: &search.Searcher{DB: ix.DB}}, nil
}

// Close closes every vault's index and AI runtime.
func (e *Env) Close() {
	e.Obs.Close()
	for _, v := range e.Vaults {
		v.Index.Close()
		if v.AI != e.AI {
			v.AI.Close()
		}
	}
	e.AI.Close()
}

// WritesFor returns the write settings that govern vh: its own, else the
// Env's.
func (e *Env) WritesFor(vh *VaultHandle) WriteSettings {
	if vh != nil && vh.Writes != nil {
		return *vh.Writes
	}
	return e.Writes
}

// AnyWritesAllowed reports whether some served vault allows writes: the
// write operations are then advertised and pass the dispatch pre-check,
// and each call is checked against its own vault's settings.
func (e *Env) AnyWritesAllowed() bool {
	if len(e.Vaults) == 0 {
		return e.Writes.Allowed()
	}
	for _, vh := range e.Vaults {
		if e.WritesFor(vh).Allowed() {
			return true
		}
	}
	return false
}

// AIFor returns the AI runtime of vh: its own, else the Env's.
func (e *Env) AIFor(vh *VaultHandle) *ai.Runtime {
	if vh != nil && vh.AI != nil {
		return vh.AI
	}
	return e.AI
}

// AnyAI reports whether f holds for the AI runtime of some served vault.
func (e *Env) AnyAI(f func(*ai.Runtime) bool) bool {
	if len(e.Vaults) == 0 {
		return f(e.AI)
	}
	for _, vh := range e.Vaults {
		if f(e.AIFor(vh)) {
			return true
		}
	}
	return false
}

// Vault picks a vault by name ("" = the default).
func (e *Env) Vault(name string) (*VaultHandle, error) {
	if len(e.Vaults) == 0 {
		return nil, errs.New(errs.CodeVaultNotFound, "no vault is open")
	}
	if name == "" {
		return e.Vaults[0], nil
	}
	for _, v := range e.Vaults {
		if v.Name == name {
			return v, nil
		}
	}
	names := make([]string, len(e.Vaults))
	for i, v := range e.Vaults {
		names[i] = v.Name
	}
	return nil, errs.New(errs.CodeVaultNotFound, "unknown vault %q", name).With("vaults", names)
}
