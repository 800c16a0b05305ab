package benchstat

import (
	"testing"
	"time"
)

func TestPct(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for p, want := range map[int]time.Duration{0: 1, 50: 5, 90: 9, 99: 10, 100: 10} {
		if got := Pct(ds, p); got != want {
			t.Errorf("Pct(p%d) = %d, want %d", p, got, want)
		}
	}
	if ds[0] != 5 {
		t.Error("Pct reordered its input")
	}
	if Pct(nil, 50) != 0 {
		t.Error("Pct of nothing is not 0")
	}
}
