// Package benchstat holds the small statistics every bench program prints.
package benchstat

import (
	"slices"
	"time"
)

// Pct is the p-th percentile of ds by nearest rank (0 when ds is empty);
// ds is not reordered.
func Pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max((len(s)*p+99)/100-1, 0)]
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / 1e6 }
