//go:build !unix

package dataview

import "time"

// cpuTime is not measured here (BenchmarkHubLoad then reports 0).
func cpuTime() time.Duration { return 0 }
