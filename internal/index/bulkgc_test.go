package index

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// gcPercent reads the GC percent (setting it back at once).
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestBulkBuildGCPercent: the end of a bulk build runs with the lower GC
// percent (not the parse) and restores the one it found; an incremental
// sync leaves it alone; builds that overlap restore it once the last ends.
func TestBulkBuildGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	root := filepath.Join(t.TempDir(), "vault")
	genLinkVault(t, root, 1100, 9)
	ix := openTest(t, root)
	seen := map[int]int{}
	progress := func(done, total int) { seen[gcPercent()]++ }
	atLinks := -2
	ix.atLinks = func() { atLinks = gcPercent() }
	mustSync(t, ix, SyncOptions{Progress: progress})
	if len(seen) != 1 || seen[77] < 1000 {
		t.Errorf("GC percents seen while the bulk build parsed (percent: calls): %v, want only 77", seen)
	}
	if atLinks != bulkGCPercent {
		t.Errorf("GC percent as the bulk build resolved its links: %d, want %d", atLinks, bulkGCPercent)
	}
	if p := gcPercent(); p != 77 {
		t.Errorf("after the bulk build the GC percent is %d, want 77 back", p)
	}
	if err := os.WriteFile(filepath.Join(root, "area0", "new.md"), []byte("# New\n[[common]]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := mustSync(t, ix, SyncOptions{}); res.Indexed != 1 {
		t.Fatalf("indexed %d notes, want 1", res.Indexed)
	}
	if atLinks != 77 {
		t.Errorf("GC percent as an incremental sync resolved its links: %d, want 77", atLinks)
	}

	endA := bulkGC()
	endB := bulkGC()
	endA()
	if p := gcPercent(); p != bulkGCPercent {
		t.Errorf("one of two builds ended: GC percent %d, want %d", p, bulkGCPercent)
	}
	endB()
	if p := gcPercent(); p != 77 {
		t.Errorf("both builds ended: GC percent %d, want 77", p)
	}
	for _, low := range []int{20, -1} { // lower already, or off: left alone
		debug.SetGCPercent(low)
		end := bulkGC()
		if p := gcPercent(); p != low {
			t.Errorf("a build under GC percent %d set it to %d", low, p)
		}
		end()
		if p := gcPercent(); p != low {
			t.Errorf("a build under GC percent %d left it at %d", low, p)
		}
	}
}
