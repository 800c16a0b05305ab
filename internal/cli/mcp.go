package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
)

func init() { commandFactories = append(commandFactories, newMCPCmd) }

// registry is the process's one operation registry: building it derives and
// resolves every schema (a few ms), which a command should pay only once.
var registry = sync.OnceValue(catalog.All)

func newMCPCmd(g *globals) *cobra.Command {
	var logLevel string
	var resync time.Duration
	var noSync bool
	var fo freshOptions
	var offer offerOptions
	cmd := &cobra.Command{
		Use:   "mcp [vault...]",
		Short: "Serve vaults to an MCP client over stdio",
		Long: "Serve one or more vaults to an MCP client (Claude Desktop, Claude Code, Codex, Cursor, ...) over stdin/stdout. " +
			"Every loci operation is a tool, every note a resource (loci://<vault>/<path>), with prompts for answering from notes.\n\n" +
			"The server answers at once from the existing index while an incremental sync runs in the background " +
			"(index_status shows it), then watches the vault's files and re-indexes what changes (or, with --no-watch, re-syncs every --resync). Logs go to stderr; stdout carries only the protocol. " +
			"With no arguments the --vault folder is served (default: the working directory, if it is a vault: docs/cli.md#which-vault).",
		Example: "  loci mcp ~/Notes\n  loci mcp ~/Notes ~/Work --resync 30s",
		RunE: func(cmd *cobra.Command, args []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return errs.New(errs.CodeInvalidInput, "--log-level must be debug, info, warn or error, not %q", logLevel)
			}
			logger := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
			ctx := cmd.Context()
			env, err := g.openServeEnv(ctx, args)
			if err != nil {
				return err
			}
			defer env.Close()
			facade, err := offer.apply(g, env)
			if err != nil {
				return err
			}
			if _, err := observe(ctx, env, g.serverCfg, false, logger); err != nil {
				return err
			}
			closeLog, err := openEventsLog(env, fo.eventsLog)
			if err != nil {
				return err
			}
			defer closeLog()
			srv := mcpserver.New(registry(), env, mcpserver.Options{Name: "loci", Version: Version, Logger: logger, Facade: facade})
			defer srv.Close()

			syncCtx, stopSync := context.WithCancel(ctx)
			var wg sync.WaitGroup
			if !noSync {
				wg.Add(1)
				go func() {
					defer wg.Done()
					keepFresh(syncCtx, env, fo, resync, logger)
				}()
			}
			names := make([]string, len(env.Vaults))
			for i, v := range env.Vaults {
				names[i] = v.Vault.Root
			}
			logger.Info("loci mcp: serving over stdio", "vaults", strings.Join(names, ", "))
			if len(env.Toolsets) > 0 || facade {
				logger.Info("loci mcp: offering", "toolsets", strings.Join(env.Toolsets, ","), "facade", facade)
			}
			for _, vh := range env.Vaults {
				// Each vault follows its own config's write policy.
				state, _ := writePolicy(env.WritesFor(vh))
				ws := env.WritesFor(vh)
				attrs := []any{"vault", vh.Name, "writes", state}
				if len(ws.WritePaths) > 0 {
					attrs = append(attrs, "write_paths", strings.Join(ws.WritePaths, ","))
				}
				if len(ws.DenyPaths) > 0 {
					attrs = append(attrs, "deny_paths", strings.Join(ws.DenyPaths, ","))
				}
				logger.Info("loci mcp: vault", append(attrs, "root", vh.Vault.Root)...)
				for _, n := range g.notices[vh] {
					logger.Warn("loci mcp: setting not honoured", "vault", vh.Name, "note", noticeText(n))
				}
			}
			if term.IsTerminal(int(os.Stdin.Fd())) {
				fmt.Fprintln(g.stderr, "loci mcp talks MCP on stdin/stdout and is meant to be started by an MCP client; "+
					"`loci mcp-config <client>` prints a configuration (docs/clients.md). Ctrl-D or Ctrl-C ends it.")
			}
			err = srv.ServeStdio(ctx)
			stopSync()
			wg.Wait()
			logger.Info("loci mcp: stopped")
			return err
		},
	}
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "stderr log level: debug, info, warn or error")
	cmd.Flags().DurationVar(&resync, "resync", time.Minute, "with --no-watch: re-sync the index this often to pick up edits (0 = only at startup)")
	cmd.Flags().BoolVar(&noSync, "no-sync", false, "serve the index as it is, without syncing or watching")
	fo.flags(cmd)
	offer.flags(cmd)
	return cmd
}

// startupSyncDelay holds the first sync back a little when every vault has
// been indexed before, so that a client's first requests do not compete with
// a walk of the whole vault (on obsidian-hub, 6,571 notes, that walk is ~40 ms
// of CPU and would otherwise run right under the first search). A vault never
// indexed is synced at once: until then there is nothing to serve.
const startupSyncDelay = 500 * time.Millisecond

// backgroundSync brings every vault's index up to date, then again every
// interval, until ctx ends. Changes reach MCP clients through env's change
// bus (resource notifications).
func backgroundSync(ctx context.Context, env *ops.Env, interval time.Duration, log *slog.Logger) {
	syncVaults(ctx, env, env.Vaults, interval, log)
}

// syncVaults is backgroundSync over some of the vaults.
func syncVaults(ctx context.Context, env *ops.Env, vaults []*ops.VaultHandle, interval time.Duration, log *slog.Logger) {
	// Load the embedder and the vector matrix now, in parallel with the
	// client's handshake, so the first hybrid query does not pay for them.
	for _, vh := range vaults {
		go func() {
			if ok, err := vh.Index.HasVectors(ctx); ok && err == nil {
				vh.Index.VectorMatrix(ctx)
				vh.Index.EmbedQuery(ctx, "warm up")
			}
		}()
	}
	indexed := true
	for _, vh := range vaults {
		indexed = indexed && vh.Index.Meta(ctx, "last_full_index_at") != ""
	}
	if indexed {
		select {
		case <-ctx.Done():
			return
		case <-time.After(startupSyncDelay):
		}
	}
	for {
		for _, vh := range vaults {
			if ctx.Err() != nil {
				return
			}
			res, err := env.Sync(ctx, vh, index.SyncOptions{})
			switch {
			case ctx.Err() != nil:
				return
			case errs.Code(err) == errs.CodeIndexBusy:
				log.Info("index sync skipped: another loci process is writing the index", "vault", vh.Name)
			case err != nil:
				log.Warn("index sync failed", "vault", vh.Name, "error", err)
			case res.Indexed > 0 || res.Removed > 0 || res.Failed > 0:
				log.Info("index synced", "vault", vh.Name, "indexed", res.Indexed, "unchanged", res.Unchanged,
					"removed", res.Removed, "failed", res.Failed, "duration", res.Duration.Round(time.Millisecond))
			default:
				log.Debug("index up to date", "vault", vh.Name, "duration", res.Duration.Round(time.Millisecond))
			}
		}
		if interval <= 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
