// Command initfloor links every package loci's CLI links and does nothing:
// its run time is the floor of any loci process (the Go runtime's start
// and every package's init), which bench/startbench reports as a second
// baseline.
package main

import _ "github.com/loci-dev/loci/internal/cli"

func main() {}
