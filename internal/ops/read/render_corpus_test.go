package read_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestRenderQueriesCorpora reads every note of the shared corpora that
// embeds a query with render_queries: the read never fails, each query has
// a result or an error with a known code, and what was found and answered
// is logged. Skipped when the corpora are absent. Seen on 2026-11-25:
// logseq-docs, 10 notes, 17 simple queries answered, 4 unsupported
// ((sample), (all-page-tags), <% %>), 1 empty, 13 advanced (no evaluator
// yet); obsidian-hub, 4 notes, 20 dataview answered, 8 unsupported
// (GROUP BY, FLATTEN, +), 5 malformed (Templater <% %>, a bare folder),
// 3 dataviewjs.
func TestRenderQueriesCorpora(t *testing.T) {
	known := map[string]bool{errs.CodeInvalidInput: true, errs.CodeUnsupportedQuery: true, errs.CodeQueryTimeout: true, ops.CodeQuerySkipped: true}
	for _, name := range []string{"logseq-docs", "obsidian-hub"} {
		t.Run(name, func(t *testing.T) {
			src := testutil.Corpus(t, name)
			if testing.Short() && name == "obsidian-hub" {
				t.Skip("indexing obsidian-hub takes a while; not in -short")
			}
			root := filepath.Join(t.TempDir(), name)
			testutil.CopyTree(t, src, root)
			env := opstest.IndexedEnv(t, root, index.SyncOptions{NoEmbed: true})
			var notes []string
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") && !strings.Contains(p, "/.") {
					if b, err := os.ReadFile(p); err == nil && len(ops.ScanQueries(string(b))) > 0 {
						rel, _ := filepath.Rel(root, p)
						notes = append(notes, filepath.ToSlash(rel))
					}
				}
				return nil
			})
			sort.Strings(notes)
			stats := map[string]int{}
			for _, p := range notes {
				out := opstest.Call[read.ReadNoteOut](t, env, "read_note", opstest.JS(map[string]any{"path": p, "render_queries": true, "max_chars": 10000000}))
				for _, q := range out.Queries {
					switch {
					case (q.Result == nil) == (q.Error == nil):
						t.Errorf("%s:%d: result %v and error %v", p, q.Line, q.Result, q.Error)
					case q.Error != nil && !known[q.Error.Code]:
						t.Errorf("%s:%d: %s: %s", p, q.Line, q.Error.Code, q.Error.Message)
					case q.Error != nil:
						stats[q.Language+" "+q.Error.Code]++
					default:
						stats[q.Language+" answered"]++
					}
				}
			}
			if len(notes) == 0 {
				t.Fatal("no note with an embedded query")
			}
			t.Logf("%d notes with queries: %v", len(notes), stats)
		})
	}
}

// BenchmarkRenderQueries measures read_note of a corpus note that embeds
// many queries, with and without render_queries (in-process, through the
// dispatch pipeline).
//
//	go test ./internal/ops/read -run XXX -bench RenderQueries -benchtime 50x
func BenchmarkRenderQueries(b *testing.B) {
	for _, c := range []struct{ corpus, note string }{
		{"logseq-docs", "pages/Queries.md"},
		{"obsidian-hub", "04 - Guides, Workflows, & Courses/Guides/An Introduction to Dataview.md"},
	} {
		b.Run(c.corpus, func(b *testing.B) {
			env := opstest.CorpusEnv(b, c.corpus)
			for _, render := range []bool{false, true} {
				in := opstest.JS(map[string]any{"path": c.note, "render_queries": render})
				b.Run(map[bool]string{false: "plain", true: "render"}[render], func(b *testing.B) {
					var ds []time.Duration
					for b.Loop() {
						t0 := time.Now()
						res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "bench"}, "read_note", json.RawMessage(in))
						ds = append(ds, time.Since(t0))
						if res.Err != nil {
							b.Fatal(res.Err)
						}
					}
					slices.Sort(ds)
					b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(ds[min(len(ds)-1, len(ds)*99/100)].Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
}
