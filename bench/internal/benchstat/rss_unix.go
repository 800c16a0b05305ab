//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package benchstat

import (
	"os"
	"runtime"
	"syscall"
)

// PeakRSSKB is the peak resident set size of a finished child process in
// KiB (0 when the system does not report it).
func PeakRSSKB(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) / 1024 // bytes there
	}
	return int64(ru.Maxrss) // KiB on Linux and the BSDs
}
