package read_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/testutil"
)

// BenchmarkListTasks measures in-process list_tasks calls through the
// dispatch pipeline, reporting p50 and p99 per call (and those of the way
// it worked before, with its filters in Go): on a copy of the
// obsidian-hub corpus (skipped when absent) and on a synthetic vault of
// 2,000 notes with 20,000 tasks, where the cost of reading every task
// shows.
//
//	go test ./internal/ops/read -run XXX -bench ListTasks -benchtime 200x
func BenchmarkListTasks(b *testing.B) {
	open := func(b *testing.B, root string) *ops.Env {
		return opstest.IndexedEnv(b, root, index.SyncOptions{NoEmbed: true})
	}
	// Each iteration runs the call twice, alternately: through the
	// operation (filters in SQL, one page read) and the way list_tasks
	// did before (every task of the tag and due range read, then status,
	// glob, page and paging in Go: listTasksRef), so that both see the
	// same load on a shared machine.
	run := func(b *testing.B, env *ops.Env, calls []string) {
		vh := env.Vaults[0]
		for _, js := range calls {
			b.Run(js, func(b *testing.B) {
				var in read.ListTasksIn
				if err := json.Unmarshal([]byte(js), &in); err != nil {
					b.Fatal(err)
				}
				var now, before []time.Duration
				for b.Loop() {
					t0 := time.Now()
					res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "bench"}, "list_tasks", json.RawMessage(js))
					now = append(now, time.Since(t0))
					if res.Err != nil {
						b.Fatal(res.Err)
					}
					t0 = time.Now()
					f := index.TaskFilter{Tag: in.Tag}
					f.DueFrom, _ = read.TaskDay(in.DueFrom, time.Now())
					f.DueTo, _ = read.TaskDay(in.DueTo, time.Now())
					all, err := vh.Index.Tasks(context.Background(), f)
					if err != nil {
						b.Fatal(err)
					}
					rows, total, _ := listTasksRef(all, in.Status, in.PathGlob, in.Page, 0, ops.OrDefault(in.Limit, 100))
					before = append(before, time.Since(t0))
					if got := res.Output.(*read.ListTasksOut); got.Total != total || len(got.Tasks) != len(rows) {
						b.Fatalf("%s: %d/%d tasks, before %d/%d", js, len(got.Tasks), got.Total, len(rows), total)
					}
				}
				pct := func(ds []time.Duration, p int) float64 {
					slices.Sort(ds)
					return float64(ds[min(len(ds)-1, len(ds)*p/100)].Microseconds()) / 1000
				}
				b.ReportMetric(pct(before, 50), "before-p50-ms")
				b.ReportMetric(pct(before, 99), "before-p99-ms")
				b.ReportMetric(pct(now, 50), "p50-ms")
				b.ReportMetric(pct(now, 99), "p99-ms")
			})
		}
	}
	b.Run("synthetic", func(b *testing.B) {
		files := map[string]string{}
		for i := 0; i < 2000; i++ {
			dir := []string{"Projects", "Areas", "Archive", "Inbox"}[i%4]
			text := fmt.Sprintf("---\ntags: [%s]\n---\n# n%04d\n\n", []string{"proj", "home", "work", "misc", "read"}[i%5], i)
			for j := 0; j < 10; j++ {
				box := []string{" ", "x", " ", "/", " "}[(i+j)%5]
				text += fmt.Sprintf("- [%s] task %d of note %d 📅 2026-%02d-%02d\n", box, j, i, 1+(i+j)%12, 1+(i*7+j)%28)
			}
			files[fmt.Sprintf("%s/n%04d.md", dir, i)] = text
		}
		root := filepath.Join(b.TempDir(), "vault")
		testutil.WriteFiles(b, root, files)
		env := open(b, root)
		run(b, env, []string{`{}`, `{"status": "done"}`, `{"path_glob": "Projects/**"}`, `{"tag": "proj"}`, `{"page": "n0042"}`, `{"status": "x", "due_to": "2026-03-01"}`})
	})
	b.Run("obsidian-hub", func(b *testing.B) {
		src := testutil.Corpus(b, "obsidian-hub")
		root := filepath.Join(b.TempDir(), "hub")
		testutil.CopyTree(b, src, root)
		env := open(b, root)
		run(b, env, []string{`{}`, `{"status": "done"}`, `{"path_glob": "00 - Contribute to the Obsidian Hub/**"}`, `{"tag": "hub"}`, `{"page": "T - TODO"}`, `{"status": "all", "due_to": "+30d"}`})
	})
}
