package search_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

// hostileQueries are what a client could send to make a search expensive.
// Those past the limits (docs/search.md, "Limits") are refused with
// invalid_input; the rest must cost about as much as a normal query.
func hostileQueries() []struct{ name, q string } {
	common := strings.Fields("obsidian plugin note notes file community theme link graph daily template markdown vault folder page text search tag editor view settings mobile sync publish canvas code css image list table task date")
	var distinct, negs, phrases []string
	for i := 0; i < 2000; i++ {
		distinct = append(distinct, fmt.Sprintf("%s%d", common[i%len(common)], i))
	}
	for _, w := range common[:31] {
		negs = append(negs, "-"+w)
	}
	for i := 0; i+1 < len(common); i++ {
		phrases = append(phrases, `"`+common[i]+" "+common[i+1]+`"`)
	}
	return []struct{ name, q string }{
		{"a x1000", strings.Repeat("a ", 1000)},
		{"a x2000", strings.Repeat("a ", 2000)},
		{"plugin x500", strings.Repeat("plugin ", 500)},
		{"phrase x500", strings.Repeat(`"plugin theme" `, 250)},
		{"exclusion x500", "plugin " + strings.Repeat("-theme ", 500)},
		{"32 common words", strings.Join(common, " ")},
		{"31 phrases", strings.Join(phrases, " ")},
		{"31 exclusions", "plugin " + strings.Join(negs, " ")},
		{"64-word phrase", `"` + strings.Repeat("the ", 64) + `"`},
		{"4 one-letter prefixes", "s* c* p* t*"},
		{"2000 distinct words", strings.Join(distinct, " ")},
		{"CJK run of 100k", strings.Repeat("知识管理笔记方法", 12500)},
		{"long word", strings.Repeat("x", 100000)},
	}
}

// BenchmarkHostileQuery times, on obsidian-hub, each hostile query and a
// normal one ("plugin theme") in the same loop and reports both and their
// ratio (x-normal):
//
//	go test ./internal/search -run '^$' -bench HostileQuery -benchtime 10x
func BenchmarkHostileQuery(b *testing.B) {
	hub := testutil.Corpus(b, "obsidian-hub")
	v, err := vault.Open(hub, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ix, err := index.Open(ctx, v, index.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Sync(ctx, index.SyncOptions{}); err != nil {
		b.Fatal(err)
	}
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	for _, mode := range []string{search.ModeLexical, search.ModeHybrid} {
		for _, h := range hostileQueries() {
			b.Run(mode+"/"+h.name, func(b *testing.B) {
				var normal, hostile time.Duration
				refused := false
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if _, err := s.Search(ctx, search.Query{Text: "plugin theme", Mode: mode}); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					_, err := s.Search(ctx, search.Query{Text: h.q, Mode: mode})
					hostile += time.Since(t1)
					normal += t1.Sub(t0)
					if err != nil && errs.Code(err) != errs.CodeInvalidInput {
						b.Fatal(err)
					}
					refused = err != nil
				}
				n := float64(b.N)
				b.ReportMetric(float64(normal.Microseconds())/1000/n, "normal-ms")
				b.ReportMetric(float64(hostile.Microseconds())/1000/n, "hostile-ms")
				b.ReportMetric(float64(hostile)/float64(normal), "x-normal")
				if refused {
					b.ReportMetric(1, "refused")
				}
			})
		}
	}
}
