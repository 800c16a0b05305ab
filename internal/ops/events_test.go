package ops_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// TestEventsFromSyncAndWrites: the bus carries typed events for syncs and
// applied writes, in order, with increasing ids.
func TestEventsFromSyncAndWrites(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{"a.md": "# A\n"})
	env.Writes = ops.WriteSettings{Enabled: true}
	var mu sync.Mutex
	var evs []ops.Event
	unsub := env.SubscribeEvents(func(ev ops.Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	})
	defer unsub()
	res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, "capture_note",
		json.RawMessage(`{"title":"Milk","content":"remember the milk","apply":true}`))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	var kinds []string
	for i, ev := range evs {
		kinds = append(kinds, ev.Kind)
		if i > 0 && ev.ID != evs[i-1].ID+1 {
			t.Errorf("ids not consecutive: %d after %d", ev.ID, evs[i-1].ID)
		}
	}
	want := []string{ops.EventSyncStarted, ops.EventNoteCreated, ops.EventSyncFinished, ops.EventWriteApplied}
	if len(kinds) != len(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events %v, want %v", kinds, want)
		}
	}
	if evs[1].Path != "Inbox/Milk.md" || evs[3].Data["operation"] != "capture_note" || evs[3].Data["undo_id"] == "" {
		t.Errorf("events: %+v", evs)
	}
	if evs[2].Data["full"] != false {
		t.Errorf("a write's re-index is incremental: %+v", evs[2])
	}
}
