// Command loci is a local-first memory engine for Markdown vaults.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/loci-dev/loci/internal/cli"
)

// atExit runs before the process exits (set by builds with -tags startprof).
var atExit = func() {}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	atExit()
	os.Exit(code)
}
