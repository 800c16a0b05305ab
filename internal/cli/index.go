package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

func newIndexCmd(g *globals) *cobra.Command {
	var paths []string
	var reset, wait, quiet, showProgress bool
	cmd := &cobra.Command{
		Use:   "index [vault]",
		Short: "Index a vault (incremental; --reset rebuilds)",
		Long: "Index the Markdown notes of a vault into <vault>/.loci/index.db. The first run indexes everything; " +
			"later runs skip unchanged files (size and mtime, then content hash), re-parse changed ones and prune deleted ones.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if err := g.vaultArg(args[0]); err != nil {
					return err
				}
			}
			vh, err := g.openVault(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer vh.Index.Close()
			var prog, eprog *progress
			if !quiet && (g.format == "text" || showProgress) {
				prog = newProgress(g.stderr, "indexing", "notes")
				eprog = newProgress(g.stderr, "embedding", "sections and titles")
			}
			res, err := vh.Index.Sync(cmd.Context(), index.SyncOptions{Paths: paths, Reset: reset, Wait: wait,
				Progress: prog.update, EmbedProgress: eprog.update})
			prog.finish()
			eprog.finish()
			if err != nil {
				if res != nil && g.format == "text" {
					// The lexical index is committed; the vectors are not
					// complete (the embedder failed or cannot run).
					fmt.Fprintf(g.stdout, "indexed %d, unchanged %d, removed %d, failed %d in %s (%s); keyword search is up to date, the embedding failed:\n",
						res.Indexed, res.Unchanged, res.Removed, res.Failed, res.Duration.Round(time.Millisecond), vh.Vault.Root)
				}
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
	cmd.Flags().BoolVar(&showProgress, "progress", false, "report progress on stderr with --format json too")
	return cmd
}

func (g *globals) openVault(ctx context.Context, readOnly bool) (*ops.VaultHandle, error) {
	vc, err := g.currentVaultConfig()
	if err != nil {
		return nil, err
	}
	return vc.open(ctx, readOnly)
}

// vaultConfig checks that dir is a folder and loads its config.
func (g *globals) vaultConfig(dir string) (*vaultConfig, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, errs.New(errs.CodeVaultNotFound, "vault folder not found: %s", dir).With("vault", dir)
	}
	return g.loadConfig(dir)
}

func (vc *vaultConfig) open(ctx context.Context, readOnly bool) (*ops.VaultHandle, error) {
	return ops.OpenVault(ctx, vc.dir, vc.indexDir, vc.exclude, readOnly)
}

// openEnv opens the vault for a query command, with the vault's own write
// settings and AI runtime (surfaceDefault: whether writes are on unless
// configured otherwise; true for the CLI's own commands). A vault that has
// never been indexed is indexed first, so `loci search` works on a fresh
// folder.
func (g *globals) openEnv(ctx context.Context, surfaceDefault bool) (*ops.Env, error) {
	vc, err := g.currentVaultConfig()
	if err != nil {
		return nil, err
	}
	ws, err := g.writeSettings(vc.cfg, surfaceDefault)
	if err != nil {
		return nil, err
	}
	vh, err := vc.open(ctx, true)
	if code := errs.Code(err); code == errs.CodeIndexMissing || code == errs.CodeIndexSchema {
		vh, err = vc.open(ctx, false)
		if err != nil {
			return nil, err
		}
		if code == errs.CodeIndexSchema {
			// Opening read-write migrated it; the sync finishes the upgrade.
			fmt.Fprintf(g.stderr, "loci: upgraded the index of %s to schema v%d; syncing…\n", vh.Vault.Root, index.SchemaVersion)
		} else {
			fmt.Fprintf(g.stderr, "loci: indexing %s for the first time…\n", vh.Vault.Root)
		}
		if res, err := vh.Index.Sync(ctx, index.SyncOptions{Wait: true}); err != nil {
			if res == nil || errs.Code(err) != errs.CodeEmbedUnavailable {
				vh.Index.Close()
				return nil, err
			}
			// The keyword index is there; only the vectors are missing.
			fmt.Fprintf(g.stderr, "loci: no vectors (%v); keyword search only until `loci index` can embed\n", err)
		}
	}
	if err != nil {
		return nil, err
	}
	if vh.Index.Interrupted(ctx) {
		// The last index run was killed half-way: finish it first. When
		// another process is indexing right now, or the index cannot be
		// written, answer from what is there.
		if rw, err := vc.open(ctx, false); err == nil {
			fmt.Fprintf(g.stderr, "loci: finishing an interrupted index run of %s…\n", rw.Vault.Root)
			if _, err := rw.Index.Sync(ctx, index.SyncOptions{}); err != nil && errs.Code(err) != errs.CodeIndexBusy {
				fmt.Fprintf(g.stderr, "loci: could not finish it (%v); answering from the index as it is\n", err)
			}
			rw.Index.Close()
		}
	}
	vh.Writes, vh.AI = &ws, aiRuntime(vc.cfg, vh)
	vh.Read = readRules(vc.cfg)
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}, Principals: principalByName}
	// The person's own calls go to the calls log too (surface cli);
	// Env.Close writes the line before the command exits.
	env.Obs = ops.NewObserver(env, ops.ObserveOptions{CallsLog: true, CallsLogMaxBytes: vc.cfg.Server.CallsLogMaxBytes})
	return env, nil
}

// progress draws a bar on a terminal, or plain lines every 10% otherwise.
type progress struct {
	w        io.Writer
	verb     string // indexing, embedding
	unit     string // notes, sections and titles
	tty      bool
	mu       sync.Mutex
	last     time.Time
	lastPct  int
	start    time.Time
	drawn    bool
	total    int
	finished bool
}

func newProgress(w io.Writer, verb, unit string) *progress {
	p := &progress{w: w, verb: verb, unit: unit, start: time.Now(), lastPct: -1}
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
		fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %d/%d %s%s\033[K", p.verb, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, done, total, p.unit, p.rate(done))
		p.drawn = true
		return
	}
	step := pct / 10 * 10
	if step > p.lastPct && (step > 0 || done == 0) {
		p.lastPct = step
		fmt.Fprintf(p.w, "%s: %d/%d %s (%d%%)%s\n", p.verb, done, total, p.unit, step, p.rate(done))
	}
}

// rate is the embedding pace so far (", 3.7/s"), for a slow embedder's
// bar; empty for indexing and for the first second.
func (p *progress) rate(done int) string {
	el := time.Since(p.start).Seconds()
	if p.verb != "embedding" || el < 1 || done == 0 {
		return ""
	}
	return fmt.Sprintf(", %.1f/s", float64(done)/el)
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
// Each vault is governed by its own config file (write policy, excludes,
// index folder, AI); flags and environment apply to all. Every config is
// loaded and checked before any vault is opened, so one invalid file stops
// the server from starting.
func (g *globals) openServeEnv(ctx context.Context, dirs []string) (*ops.Env, error) {
	if len(dirs) == 1 {
		if err := g.vaultArg(dirs[0]); err != nil {
			return nil, err
		}
	} else if f := g.flagLookup("vault"); len(dirs) > 1 && f != nil && f.Changed {
		return nil, errs.New(errs.CodeInvalidInput, "vaults given both as arguments and with --vault; give them as arguments")
	}
	if len(dirs) == 0 {
		d, err := g.vaultDir()
		if err != nil {
			return nil, err
		}
		dirs = []string{d}
	}
	type served struct {
		vc *vaultConfig
		ws ops.WriteSettings
	}
	var vaults []served
	indexDirs, names := map[string]string{}, map[string]bool{}
	for _, d := range dirs {
		vc, err := g.vaultConfig(d)
		if err != nil {
			return nil, err
		}
		if real, err := filepath.EvalSymlinks(d); err == nil {
			name := filepath.Base(real)
			if names[name] {
				return nil, errs.New(errs.CodeInvalidInput, "two vaults are named %q; serve folders with distinct names", name)
			}
			names[name] = true
		}
		ws, err := g.writeSettings(vc.cfg, false)
		if err != nil {
			return nil, err
		}
		dir := vc.indexDir
		if dir == "" {
			dir = filepath.Join(d, ".loci")
		}
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		if other, ok := indexDirs[dir]; ok {
			return nil, errs.New(errs.CodeInvalidInput, "vaults %s and %s would share the index folder %s; serve them with their own index folders (not one --index-dir or LOCI_INDEX_DIR for several vaults)", other, d, dir).
				With("index_dir", dir)
		}
		indexDirs[dir] = d
		vaults = append(vaults, served{vc, ws})
	}
	if len(vaults) > 0 {
		g.serverCfg = vaults[0].vc.cfg.Server // the user's file only: the same for every vault
	}
	env := &ops.Env{}
	seen := map[string]bool{}
	for _, s := range vaults {
		vh, err := s.vc.open(ctx, false)
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
		ws := s.ws
		vh.Writes, vh.AI = &ws, aiRuntime(s.vc.cfg, vh)
		vh.Read = readRules(s.vc.cfg)
		notices := s.vc.cfg.Notices
		if msg := vh.AI.Settings.CeilingBlindMessage(); msg != "" {
			notices = append(slices.Clip(notices), config.Problem{Message: msg})
		}
		if len(notices) > 0 {
			if g.notices == nil {
				g.notices = map[*ops.VaultHandle][]config.Problem{}
			}
			g.notices[vh] = notices
		}
		vh.Index.AllowStaleMatrix() // a sync never stalls a long-running server's searches
		env.BackgroundEmbed(vh)     // nor does a slow embedder stall its syncs and writes
		env.Vaults = append(env.Vaults, vh)
	}
	return env, nil
}

// principalByName finds a principal of the principals file by name
// (inspect_acl); nil when there is none.
func principalByName(name string) (*auth.Principal, error) {
	store, err := principalStore()
	if err != nil {
		return nil, err
	}
	list, err := store.List()
	if err != nil {
		return nil, err
	}
	for _, e := range list {
		if e.Name == name {
			p := e.Principal
			p.Via = auth.ViaToken
			return &p, nil
		}
	}
	return nil, nil
}

// readRules is a vault's read fence from its merged config.
func readRules(cfg *config.Config) ops.ReadRules {
	return ops.ReadRules{ReadPaths: cfg.ReadPaths, DenyReadPaths: cfg.DenyReadPaths}
}

// writePolicy describes a vault's write settings for the serve banner and
// the mcp log: state is on, off or read-only.
func writePolicy(ws ops.WriteSettings) (state string, detail []string) {
	switch {
	case ws.ReadOnly:
		state = "read-only"
	case ws.Enabled:
		state = "on"
	default:
		state = "off"
	}
	if len(ws.WritePaths) > 0 {
		detail = append(detail, "write_paths "+strings.Join(ws.WritePaths, ", "))
	}
	if len(ws.DenyPaths) > 0 {
		detail = append(detail, "deny_paths "+strings.Join(ws.DenyPaths, ", "))
	}
	return state, detail
}
