package dataview

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/testutil"
)

func TestZZProbe(t *testing.T) {
	ix := indexOf(t, testutil.Corpus(t, "obsidian-hub"))
	ctx := context.Background()
	qs := []string{
		`SELECT id, path, title, kind, hash, mtime, size, COALESCE(created,''), COALESCE(frontmatter,'') FROM notes ORDER BY path`,
		`SELECT id, path, title, kind, hash, mtime, size, COALESCE(created,''), COALESCE(frontmatter,'') FROM notes`,
		`SELECT id, path, title, kind, hash, mtime, size, COALESCE(created,'') FROM notes`,
		`SELECT id, path, title, kind, hash, mtime, size, COALESCE(created,'') FROM notes ORDER BY path`,
		`SELECT id, hash FROM notes`,
	}
	best := make([]time.Duration, len(qs))
	for round := 0; round < 7; round++ {
		for i, q := range qs {
			start := time.Now()
			rows, err := ix.DB.QueryContext(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			dst := make([]any, len(cols))
			for i := range dst {
				dst[i] = new(sql.RawBytes)
			}
			for rows.Next() {
				rows.Scan(dst...)
			}
			rows.Close()
			if d := time.Since(start); best[i] == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	for i, q := range qs {
		t.Logf("%v %s", best[i], q)
	}
	var bl, bb time.Duration
	for round := 0; round < 7; round++ {
		start := time.Now()
		r, _ := loadRaw(ctx, ix, false, nil)
		t1 := time.Since(start)
		r.build(ctx, nil)
		t2 := time.Since(start) - t1
		if bl == 0 || t1 < bl {
			bl = t1
		}
		if bb == 0 || t2 < bb {
			bb = t2
		}
	}
	t.Logf("loadRaw %v build %v", bl, bb)
}
