package logseq_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/logseq"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestLogseqCorpus runs the read tools over a real graph (a copy of it; set
// LOCI_LOGSEQ_CORPUS to its folder, e.g. the logseq-docs graph): every page
// reads, every block address reads back as the same block, and editing a
// block without id:: by its address changes that block only and adds no id::.
func TestLogseqCorpus(t *testing.T) {
	src := os.Getenv("LOCI_LOGSEQ_CORPUS")
	if src == "" {
		t.Skip("LOCI_LOGSEQ_CORPUS not set")
	}
	root := filepath.Join(t.TempDir(), "graph")
	testutil.CopyTree(t, src, root)
	env := opstest.OpenEnv(t, root)
	env.Writes = ops.WriteSettings{Enabled: true}
	pages := opstest.Call[logseq.ListPagesOut](t, env, "list_pages", `{"include_journals":true,"limit":1000}`)
	if len(pages.Pages) == 0 {
		t.Fatal("no pages")
	}
	blocks, edited := 0, false
	for _, p := range pages.Pages {
		page := opstest.Call[logseq.GetPageOut](t, env, "get_page", `{"path":`+opstest.JS(p.Path)+`}`)
		var walk func(ns []logseq.BlockNode)
		walk = func(ns []logseq.BlockNode) {
			for _, n := range ns {
				blocks++
				if n.Address == "" {
					t.Errorf("%s:%d: no address", p.Path, n.Line)
				}
				b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid":`+opstest.JS(n.Address)+`,"depth":1}`)
				if b.Line != n.Line || b.Content != n.Content {
					t.Errorf("%s: %s reads back as line %d, want %d", p.Path, n.Address, b.Line, n.Line)
				}
				walk(n.Children)
			}
		}
		walk(page.Blocks)
		// Edit one nested block without id:: by address.
		if !edited {
			for _, top := range page.Blocks {
				if len(top.Children) == 0 || top.Children[0].UUID != "" || strings.Contains(top.Children[0].Content, "\n") {
					continue
				}
				c := top.Children[0]
				before := opstest.ReadFile(t, env, p.Path)
				opstest.Call[logseq.BlockWriteOut](t, env, "update_block", `{"uuid":`+opstest.JS(c.Address)+`,"if_match":"`+page.Etag+`","properties":{"reviewed":true},"apply":true}`)
				after := opstest.ReadFile(t, env, p.Path)
				if strings.Count(after, "id::") != strings.Count(before, "id::") || !strings.Contains(after, "reviewed:: true") ||
					len(strings.Split(after, "\n")) != len(strings.Split(before, "\n"))+1 {
					t.Errorf("%s: update by address %s:\n%s", p.Path, c.Address, after)
				}
				if b := opstest.Call[logseq.GetBlockOut](t, env, "get_block", `{"uuid":`+opstest.JS(c.Address)+`}`); b.Content != c.Content || b.Properties["reviewed"] != "true" {
					t.Errorf("%s: the block at %s after the update: %+v", p.Path, c.Address, b)
				}
				edited = true
				break
			}
		}
	}
	t.Logf("%d pages, %d blocks; edited by address: %v", len(pages.Pages), blocks, edited)
}
