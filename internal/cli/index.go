package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

func newIndexCmd(g *globals) *cobra.Command {
	var paths []string
	var reset, wait, quiet bool
	cmd := &cobra.Command{
		Use:   "index [vault]",
		Short: "Index a vault (incremental; --reset rebuilds)",
		Long: "Index the Markdown notes of a vault into <vault>/.loci/index.db. The first run indexes everything; " +
			"later runs skip unchanged files (size and mtime, then content hash), re-parse changed ones and prune deleted ones.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				g.vault = args[0]
			}
			vh, err := g.openVault(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer vh.Index.Close()
			var prog *progress
			if !quiet && g.format == "text" {
				prog = newProgress(g.stderr)
			}
			res, err := vh.Index.Sync(cmd.Context(), index.SyncOptions{Paths: paths, Reset: reset, Wait: wait, Progress: prog.update})
			prog.finish()
			if err != nil {
				return err
			}
			if g.format == "json" {
				return g.print(res, nil)
			}
			if res.Recovered {
				fmt.Fprintln(g.stdout, "finished an interrupted index run: every note's links were rebuilt")
			}
			fmt.Fprintf(g.stdout, "indexed %d, unchanged %d, removed %d, failed %d in %s (%s)\n",
				res.Indexed, res.Unchanged, res.Removed, res.Failed, res.Duration.Round(time.Millisecond), vh.Vault.Root)
			for _, f := range res.Failures {
				fmt.Fprintf(g.stdout, "  failed: %s: %s\n", f.Path, f.Error)
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&paths, "paths", nil, "re-index only these vault-relative paths (comma-separated)")
	cmd.Flags().BoolVar(&reset, "reset", false, "drop the index and rebuild it from scratch")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for another indexer to finish instead of failing")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	return cmd
}

func (g *globals) openVault(ctx context.Context, readOnly bool) (*ops.VaultHandle, error) {
	if st, err := os.Stat(g.vault); err != nil || !st.IsDir() {
		return nil, errs.New(errs.CodeVaultNotFound, "vault folder not found: %s", g.vault).With("vault", g.vault)
	}
	indexDir, exclude, err := g.settings(g.vault)
	if err != nil {
		return nil, err
	}
	return ops.OpenVault(ctx, g.vault, indexDir, exclude, readOnly)
}

// openEnv opens the vault for a query command. A vault that has never been
// indexed is indexed first, so `loci search` works on a fresh folder.
func (g *globals) openEnv(ctx context.Context, _ bool) (*ops.Env, error) {
	vh, err := g.openVault(ctx, true)
	if errs.Code(err) == errs.CodeIndexMissing || errs.Code(err) == errs.CodeIndexSchema {
		vh, err = g.openVault(ctx, false)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(g.stderr, "loci: indexing %s for the first time…\n", vh.Vault.Root)
		if _, err := vh.Index.Sync(ctx, index.SyncOptions{Wait: true}); err != nil {
			vh.Index.Close()
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	if vh.Index.Interrupted(ctx) {
		// The last index run was killed half-way: finish it first. When
		// another process is indexing right now, or the index cannot be
		// written, answer from what is there.
		if rw, err := g.openVault(ctx, false); err == nil {
			fmt.Fprintf(g.stderr, "loci: finishing an interrupted index run of %s…\n", rw.Vault.Root)
			if _, err := rw.Index.Sync(ctx, index.SyncOptions{}); err != nil && errs.Code(err) != errs.CodeIndexBusy {
				fmt.Fprintf(g.stderr, "loci: could not finish it (%v); answering from the index as it is\n", err)
			}
			rw.Index.Close()
		}
	}
	return &ops.Env{Vaults: []*ops.VaultHandle{vh}, AI: g.aiRuntime(vh)}, nil
}

// progress draws a bar on a terminal, or plain lines every 10% otherwise.
type progress struct {
	w        io.Writer
	tty      bool
	mu       sync.Mutex
	last     time.Time
	lastPct  int
	start    time.Time
	drawn    bool
	total    int
	finished bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, start: time.Now(), lastPct: -1}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

func (p *progress) update(done, total int) {
	if p == nil || total == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = total
	pct := done * 100 / total
	if p.tty {
		if time.Since(p.last) < 80*time.Millisecond && done != total {
			return
		}
		p.last = time.Now()
		const width = 30
		fill := pct * width / 100
		fmt.Fprintf(p.w, "\r[%s%s] %3d%% %d/%d notes", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, done, total)
		p.drawn = true
		return
	}
	step := pct / 10 * 10
	if step > p.lastPct && (step > 0 || done == 0) {
		p.lastPct = step
		fmt.Fprintf(p.w, "indexing: %d/%d notes (%d%%)\n", done, total, step)
	}
}

func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// openServeEnv opens every vault for a long-running server (read-write, so
// the index can be synced in the background). An empty list means --vault.
func (g *globals) openServeEnv(ctx context.Context, dirs []string) (*ops.Env, error) {
	if len(dirs) == 0 {
		dirs = []string{g.vault}
	}
	env := &ops.Env{}
	ws, err := g.writeSettings(dirs[0], false)
	if err != nil {
		return nil, err
	}
	env.Writes = ws
	seen := map[string]bool{}
	for _, d := range dirs {
		g.vault = d
		vh, err := g.openVault(ctx, false)
		if err != nil {
			env.Close()
			return nil, err
		}
		if seen[vh.Name] {
			vh.Index.Close()
			env.Close()
			return nil, errs.New(errs.CodeInvalidInput, "two vaults are named %q; serve folders with distinct names", vh.Name)
		}
		seen[vh.Name] = true
		vh.Index.AllowStaleMatrix() // a sync never stalls a long-running server's searches
		env.Vaults = append(env.Vaults, vh)
	}
	env.AI = g.aiRuntime(env.Vaults[0])
	return env, nil
}
