//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package benchstat

import "os"

// PeakRSSKB is 0 where the system reports no peak resident set size of a
// child (Windows, Plan 9, ...): the bench programs print 0 MB there.
func PeakRSSKB(ps *os.ProcessState) int64 { return 0 }
