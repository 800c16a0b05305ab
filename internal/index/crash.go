package index

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// Test-only fault injection. The crash tests (crash_test.go) run a real
// `loci index` process that kills itself at a named point of a sync, so a
// crash lands in a chosen window deterministically instead of after a
// guessed delay:
//
//	LOCI_TEST_CRASH_AT=<point>[:n]   SIGKILL itself the n-th time (default 1)
//	                                 the sync reaches <point>
//	LOCI_TEST_TX_ROWS=<rows>         commit the writer's transaction every
//	                                 <rows> rows (default 20,000) and embed
//	                                 in groups of <rows> texts (default 8,192),
//	                                 so a small vault crosses several commits
//
// The points (see Sync): reset, notes (a note written into the open
// transaction), commit (an intermediate commit), relink (a note's links
// rewritten, unresolved, while finishing an interrupted run), before-links,
// mid-links (after a page of links, or half the notes' links, resolved),
// reresolve (every stored link resolved), before-indexes, before-commit,
// before-embed and
// embed (an embedding group committed). Neither variable is meant for
// users; unset, both cost one comparison per point.

type crashSpec struct {
	point string
	n     int
	mu    sync.Mutex
	seen  int
}

var crash = parseCrash(os.Getenv("LOCI_TEST_CRASH_AT"))

func parseCrash(s string) *crashSpec {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	c := &crashSpec{point: s, n: 1}
	if p, n, ok := strings.Cut(s, ":"); ok {
		c.point = p
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			c.n = v
		}
	}
	return c
}

// crashPoint kills the process when LOCI_TEST_CRASH_AT names this point
// and it is the n-th time it is reached. Nothing is flushed or rolled
// back: the process dies as it would from kill -9 or a power cut (the
// operating system keeps what was written to files).
func crashPoint(point string) {
	c := crash
	if c == nil || c.point != point {
		return
	}
	c.mu.Lock()
	c.seen++
	hit := c.seen == c.n
	c.mu.Unlock()
	if hit {
		killSelf()
	}
}

// txRows is the writer's commit threshold, in rows (see Sync).
var txRows = envInt("LOCI_TEST_TX_ROWS", 20000)

// embedGroupSize is how many texts are embedded and written per
// transaction: an interrupted run keeps what it has paid for.
var embedGroupSize = envInt("LOCI_TEST_TX_ROWS", 8192)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
