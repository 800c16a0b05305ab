package ops

import (
	"context"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/index"
)

// Change says which notes of a vault were added, updated or removed by a sync.
type Change struct {
	Vault string
	Paths []string
	// ListChanged is true when notes were added or removed (not only edited).
	ListChanged bool
}

// bus fans out index changes to surfaces (MCP resource notifications today,
// SSE events later).
type bus struct {
	mu   sync.Mutex
	subs map[int]func(Change)
	next int
}

// Subscribe registers fn for every change; the returned func unsubscribes.
func (e *Env) Subscribe(fn func(Change)) func() {
	e.bus.mu.Lock()
	defer e.bus.mu.Unlock()
	if e.bus.subs == nil {
		e.bus.subs = map[int]func(Change){}
	}
	id := e.bus.next
	e.bus.next++
	e.bus.subs[id] = fn
	return func() {
		e.bus.mu.Lock()
		delete(e.bus.subs, id)
		e.bus.mu.Unlock()
	}
}

func (e *Env) publish(c Change) {
	e.bus.mu.Lock()
	subs := make([]func(Change), 0, len(e.bus.subs))
	for _, fn := range e.bus.subs {
		subs = append(subs, fn)
	}
	e.bus.mu.Unlock()
	for _, fn := range subs {
		fn(c)
	}
}

// SyncState is what index_status reports about background syncing.
type SyncState struct {
	Running    bool      `json:"running" jsonschema:"a sync is running now"`
	LastError  string    `json:"last_error,omitempty" jsonschema:"error of the last sync, if it failed"`
	LastSyncAt time.Time `json:"last_sync_at,omitzero" jsonschema:"when the last sync ended (UTC)"`
}

// Sync brings one vault's index up to date and publishes what changed.
func (e *Env) Sync(ctx context.Context, vh *VaultHandle, opt index.SyncOptions) (*index.SyncResult, error) {
	vh.mu.Lock()
	vh.state.Running = true
	vh.mu.Unlock()
	res, err := vh.Index.Sync(ctx, opt)
	vh.mu.Lock()
	vh.state.Running = false
	vh.state.LastSyncAt = time.Now().UTC()
	vh.state.LastError = ""
	if err != nil {
		vh.state.LastError = err.Error()
	}
	vh.mu.Unlock()
	if err == nil && len(res.Changed) > 0 {
		e.publish(Change{Vault: vh.Name, Paths: res.Changed, ListChanged: res.Removed > 0 || res.Added > 0})
	}
	return res, err
}

// State returns the vault's background sync state.
func (vh *VaultHandle) State() SyncState {
	vh.mu.Lock()
	defer vh.mu.Unlock()
	return vh.state
}
