//go:build unix

package dataview

import (
	"syscall"
	"time"
)

// cpuTime is the process's CPU time so far (user and system): a cost
// other processes on the machine do not inflate, as they do wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
