package query

import (
	"testing"
	"time"
)

func TestRelativeDay(t *testing.T) {
	now := time.Date(2026, 11, 25, 22, 30, 0, 0, time.FixedZone("x", -5*3600))
	for in, want := range map[string]string{
		"today": "2026-11-25", " Now ": "2026-11-25", "yesterday": "2026-11-24", "tomorrow": "2026-11-26",
		"-7d": "2026-11-18", "+2w": "2026-12-09", "7d": "2026-12-02", "-1m": "2026-10-25", "1y": "2027-11-25",
		"2026-02-28": "2026-02-28", "20261101": "2026-11-01", "2026_11_01": "2026-11-01",
	} {
		got, ok := RelativeDay(in, now)
		if !ok || got.Format("2006-01-02") != want || got.Location() != time.UTC || got.Hour() != 0 {
			t.Errorf("%q: %v %v, want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "d", "7x", "--7d", "999999d", "2026-02-30", "soon", "+d"} {
		if got, ok := RelativeDay(in, now); ok {
			t.Errorf("%q: %v, want not a day", in, got)
		}
	}
}
