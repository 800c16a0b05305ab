//go:build startprof

package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// A build with -tags startprof writes a CPU profile of the whole run (from
// main on; package inits are seen with GODEBUG=inittrace=1) to the file
// LOCI_STARTPROF names, sampled at 4 kHz, so that the profiles of many short
// processes can be merged (go tool pprof -proto a b c > all.pb.gz); it also
// prints the time spent in main to stderr. bench/startbench and
// docs/performance.md say how it is used.
func init() {
	name := os.Getenv("LOCI_STARTPROF")
	if name == "" {
		return
	}
	f, err := os.Create(name)
	if err != nil {
		return
	}
	runtime.SetCPUProfileRate(4000)
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return
	}
	t0 := time.Now()
	atExit = func() {
		pprof.StopCPUProfile()
		f.Close()
		fmt.Fprintf(os.Stderr, "startprof: main took %.2f ms\n", float64(time.Since(t0))/1e6)
	}
}
