package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestEventsFromSyncAndWrites: the bus carries typed events for syncs and
// applied writes, in order, with increasing ids.
func TestEventsFromSyncAndWrites(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{"a.md": "# A\n"})
	env.Writes = ops.WriteSettings{Enabled: true}
	events := recordEvents(t, env)
	res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, "capture_note",
		json.RawMessage(`{"title":"Milk","content":"remember the milk","apply":true}`))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	evs := events()
	var kinds []string
	for i, ev := range evs {
		kinds = append(kinds, ev.Kind)
		if i > 0 && ev.ID != evs[i-1].ID+1 {
			t.Errorf("ids not consecutive: %d after %d", ev.ID, evs[i-1].ID)
		}
	}
	// Progress: 0 of 1 file when the sync starts, 1 of 1 when it committed.
	want := []string{ops.EventSyncStarted, ops.EventSyncProgress, ops.EventSyncProgress, ops.EventNoteCreated, ops.EventSyncFinished, ops.EventWriteApplied}
	if len(kinds) != len(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events %v, want %v", kinds, want)
		}
	}
	if evs[3].Path != "Inbox/Milk.md" || evs[5].Data["operation"] != "capture_note" || evs[5].Data["undo_id"] == "" {
		t.Errorf("events: %+v", evs)
	}
	if evs[4].Data["full"] != false || evs[1].Data["full"] != false {
		t.Errorf("a write's re-index is incremental: %+v", evs[4])
	}
	if evs[1].Data["done"] != 0 || evs[1].Data["total"] != 1 || evs[2].Data["done"] != 1 || evs[2].Data["total"] != 1 {
		t.Errorf("progress: %+v then %+v", evs[1].Data, evs[2].Data)
	}
}

// TestSyncProgressEvents: a full sync publishes index.sync_progress with
// done rising to total (every file looked at), the last one done == total,
// between index.sync_started and index.sync_finished; nothing is published
// without a subscriber.
func TestSyncProgressEvents(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("n%02d.md", i)] = fmt.Sprintf("# N%d\n\nbody %d\n", i, i)
	}
	env := opstest.FixtureEnv(t, files) // indexed once with no subscriber
	events := recordEvents(t, env)
	if _, err := env.Sync(context.Background(), env.Vaults[0], index.SyncOptions{Reset: true}); err != nil {
		t.Fatal(err)
	}
	evs := events()
	if len(evs) < 4 || evs[0].Kind != ops.EventSyncStarted || evs[len(evs)-1].Kind != ops.EventSyncFinished {
		t.Fatalf("events: %+v", evs)
	}
	var prog []ops.Event
	for _, ev := range evs {
		if ev.Kind == ops.EventSyncProgress {
			prog = append(prog, ev)
		}
	}
	if len(prog) < 2 {
		t.Fatalf("progress events: %+v", prog)
	}
	last := -1
	for _, ev := range prog {
		done, total := ev.Data["done"].(int), ev.Data["total"].(int)
		if total != 30 || done < last || ev.Data["full"] != true || ev.Vault != env.Vaults[0].Name {
			t.Errorf("progress event %+v after done %d", ev, last)
		}
		last = done
	}
	if prog[0].Data["done"] != 0 || last != 30 {
		t.Errorf("progress from %v to %d, want 0 to 30", prog[0].Data["done"], last)
	}
	if _, ok := prog[len(prog)-1].Data["elapsed_ms"].(int64); !ok {
		t.Errorf("no elapsed_ms: %+v", prog[len(prog)-1].Data)
	}
}

// recordEvents subscribes to env's bus until the test ends; the function it
// returns gives a copy of the events published so far, in order.
func recordEvents(t *testing.T, env *ops.Env) func() []ops.Event {
	t.Helper()
	var mu sync.Mutex
	var evs []ops.Event
	t.Cleanup(env.SubscribeEvents(func(ev ops.Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	}))
	return func() []ops.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(evs)
	}
}

// TestEmbedProgressEvents: a background embedder's run publishes
// index.embed_progress with done rising to total (the last done == total)
// before its index.embed_finished.
func TestEmbedProgressEvents(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{"a.md": "# A\n\nalpha\n"})
	vh := env.Vaults[0]
	env.BackgroundEmbed(vh)
	finished := make(chan struct{}, 1)
	var mu sync.Mutex
	var evs []ops.Event
	t.Cleanup(env.SubscribeEvents(func(ev ops.Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
		if ev.Kind == ops.EventEmbedFinished || ev.Kind == ops.EventEmbedFailed {
			select {
			case finished <- struct{}{}:
			default:
			}
		}
	}))
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("n%02d.md", i)] = fmt.Sprintf("# N%d\n\n## Part\n\nbody %d\n", i, i)
	}
	testutil.WriteFiles(t, opstest.Root(env), files)
	if _, err := env.Sync(context.Background(), vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard, not a timing check
	defer cancel()
	select {
	case <-finished:
	case <-ctx.Done():
		t.Fatal("no index.embed_finished or index.embed_failed within a minute")
	}
	mu.Lock()
	defer mu.Unlock()
	var progress []ops.Event
	for _, ev := range evs {
		switch ev.Kind {
		case ops.EventEmbedFailed:
			t.Fatalf("embed failed: %+v", ev.Data)
		case ops.EventEmbedProgress:
			progress = append(progress, ev)
		case ops.EventEmbedFinished:
			if len(progress) == 0 {
				t.Fatalf("embed_finished with no embed_progress before it: %+v", evs)
			}
			last := progress[len(progress)-1].Data
			if last["done"] != last["total"] || last["total"].(int) <= 0 {
				t.Errorf("last progress %+v: want done == total > 0", last)
			}
			prev := -1
			for _, p := range progress {
				if d := p.Data["done"].(int); d < prev {
					t.Errorf("done fell from %d to %d", prev, d)
				} else {
					prev = d
				}
			}
			return
		}
	}
}
