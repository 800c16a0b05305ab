// Package cli is the command-line surface: `loci index` plus one command per
// registry operation, generated from the operation definitions.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// Version is set by the build (-ldflags "-X github.com/loci-dev/loci/internal/cli.Version=...").
var Version = "dev"

// commandFactories lets each file register its hand-written commands
// (serve, mcp, token, ...) from an init function.
var commandFactories []func(*globals) *cobra.Command

// globals are the persistent flags.
type globals struct {
	vault    string
	indexDir string
	format   string
	color    string // --color: auto, always or never (colour.go)
	exclude  []string
	// enableWrites and readOnly gate the write operations (docs/writes.md).
	enableWrites bool
	readOnly     bool
	stdout       io.Writer
	stderr       io.Writer
	// flags are the persistent flags, to tell a flag given from its default
	// (nil in tests that build globals by hand: non-zero values count).
	flags *pflag.FlagSet
	// notices are the settings of each served vault that were not honoured
	// (config.Config.Notices), for the serve banner and the mcp log.
	notices map[*ops.VaultHandle][]config.Problem
	// serverCfg is the server section of the user's config (the same for
	// every served vault), set by openServeEnv.
	serverCfg config.Server
}

// Main runs the CLI and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr}
	root := newRoot(g, args)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if errors.Is(err, errWholeTree) {
		// A command built as a stub was reached (see newRoot): run again
		// with every command built.
		g = &globals{stdout: stdout, stderr: stderr}
		root = newRoot(g, nil)
		root.SetArgs(args)
		root.SetOut(stdout)
		root.SetErr(stderr)
		err = root.ExecuteContext(ctx)
	}
	if err == nil {
		return 0
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		// Errors that are not typed come from argument parsing (cobra).
		e = errs.New(errs.CodeInvalidInput, "%s", err.Error())
	}
	printError(g, e)
	return errs.ExitCode(e)
}

func printError(g *globals, e *errs.Error) {
	if g.format == "json" {
		b, _ := json.MarshalIndent(map[string]any{"ok": false, "error": e}, "", "  ")
		fmt.Fprintln(g.stderr, string(b))
		return
	}
	fmt.Fprintf(g.stderr, "loci: %s [%s]\n", e.Error(), e.Code)
}

// errWholeTree is returned by a stub command: the command line reached a
// command that newRoot did not build in full.
var errWholeTree = errors.New("cli: the whole command tree is needed")

// newRoot builds the command tree for the command line args: the command
// args invoke is built in full (flags, argument checks, its operation's
// schemas), every other operation's command only as a stub that shows in
// the command list, so a process that runs one command derives one
// operation's schemas. With args nil (or a help or completion command)
// every command is built in full. A stub that is reached anyway (a
// command line newRoot read otherwise than cobra) makes Main run again
// with the whole tree, so the outcome never depends on the shortcut.
func newRoot(g *globals, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:           "loci",
		Short:         "A local-first memory engine for Markdown vaults (Obsidian, Logseq)",
		Long:          "loci indexes a folder of Markdown notes into a local SQLite index and lets people and agents search, navigate and safely edit it (previewed, etag-guarded, undoable writes: docs/writes.md).",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetVersionTemplate("{{lociVersion}}") // the same text as `loci version` (version.go)
	// No default folder: with neither --vault nor LOCI_VAULT the working
	// directory is used only if it is a vault (vaultDir, vaultarg.go).
	root.PersistentFlags().StringVar(&g.vault, "vault", os.Getenv("LOCI_VAULT"), "the vault `folder` (env LOCI_VAULT; default: the working directory, if it is a vault)")
	root.PersistentFlags().StringVar(&g.indexDir, "index-dir", os.Getenv("LOCI_INDEX_DIR"), "index `folder` (env LOCI_INDEX_DIR; default <vault>/.loci)")
	root.PersistentFlags().StringVar(&g.format, "format", "text", "output `format`: text or json")
	root.PersistentFlags().StringVar(&g.color, "color", "auto", "`when` to colour search matches and diffs: auto (on a terminal, unless NO_COLOR is set), always or never")
	root.PersistentFlags().StringSliceVar(&g.exclude, "exclude", nil, "extra `glob`(s) of vault-relative paths to skip, added to LOCI_EXCLUDE and the config files' (repeatable)")
	root.PersistentFlags().BoolVar(&g.enableWrites, "enable-writes", false, "let MCP and REST clients (agents) call the write operations (env LOCI_ENABLE_WRITES=1; docs/writes.md)")
	root.PersistentFlags().BoolVar(&g.readOnly, "read-only", false, "refuse every write operation, from any surface (env LOCI_READ_ONLY=1)")
	g.flags = root.PersistentFlags()
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if g.format != "text" && g.format != "json" {
			return errs.New(errs.CodeInvalidInput, "--format must be text or json, not %q", g.format)
		}
		_, err := useColour(g.color, io.Discard)
		return err
	}
	for _, hg := range helpGroups {
		root.AddGroup(&cobra.Group{ID: hg.id, Title: hg.title})
	}
	root.SetHelpCommandGroupID("admin")
	root.SetCompletionCommandGroupID("admin")
	root.AddCommand(newIndexCmd(g))
	for _, f := range commandFactories {
		root.AddCommand(f(g))
	}
	for _, c := range root.Commands() {
		c.GroupID = commandGroup[c.Name()]
	}
	reg := registry()
	wanted, whole := invokedCommand(root, args)
	groups := map[string]*cobra.Command{}
	for _, op := range reg.ListShallow() {
		if op.CLI.Use == "" {
			continue
		}
		build := opCommand
		if !whole {
			name, _, _ := strings.Cut(op.CLI.Use, " ")
			if name != wanted {
				build = opStub
			}
		}
		// A two-word use ("ai ask") makes a subcommand of a group command.
		if group, _, ok := strings.Cut(op.CLI.Use, " "); ok {
			parent := groups[group]
			if parent == nil {
				parent = &cobra.Command{Use: group, Short: groupShort[group], GroupID: op.Group()}
				groups[group] = parent
				root.AddCommand(parent)
			}
			parent.AddCommand(build(g, reg, op))
			continue
		}
		cmd := build(g, reg, op)
		cmd.GroupID = op.Group()
		root.AddCommand(cmd)
	}
	return root
}

// helpGroups are the headings of `loci help`. An operation's command is
// listed under its toolset (ops.Op.Group: read, write, logseq, ai,
// admin), so a new operation lands in a group without a change here; the
// hand-written commands are placed by commandGroup.
var helpGroups = []struct{ id, title string }{
	{"read", "Search & read:"},
	{"write", "Write (previewed; --apply writes):"},
	{"logseq", "Logseq:"},
	{"ai", "AI:"},
	{"serve", "Serve & clients:"},
	{"admin", "Admin:"},
}

// commandGroup places the hand-written commands (TestHelpGroups fails
// for one that has no group).
var commandGroup = map[string]string{
	"index":      "admin",
	"config":     "admin",
	"eval":       "admin",
	"version":    "admin",
	"serve":      "serve",
	"mcp":        "serve",
	"mcp-config": "serve",
	"token":      "serve",
	"confirm":    "serve",
	"chat":       "ai",
}

// invokedCommand reads the name of the command args invoke (its first
// word: "ai" for `loci ai ask`), skipping the root's flags and their
// values; whole is set when every command must be built: args nil, or a
// help or completion command (which describe other commands).
func invokedCommand(root *cobra.Command, args []string) (name string, whole bool) {
	if args == nil {
		return "", true
	}
	fs := root.PersistentFlags()
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				name = args[i+1]
			}
		case strings.HasPrefix(a, "--"):
			f := fs.Lookup(strings.TrimPrefix(a, "--"))
			if !strings.Contains(a, "=") && f != nil && f.NoOptDefVal == "" {
				i++ // the flag's value
			}
			continue
		case strings.HasPrefix(a, "-") && len(a) > 1:
			f := fs.ShorthandLookup(a[1:2])
			if len(a) == 2 && f != nil && f.NoOptDefVal == "" {
				i++
			}
			continue
		default:
			name = a
		}
		break
	}
	switch name {
	case "help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
		return name, true
	}
	return name, false
}

// groupShort describes the command groups made from two-word op uses.
var groupShort = map[string]string{
	"ai": "AI operations grounded in the vault: ask, summarize, toc, relate, tag, metadata, extract (off until a provider is configured; docs/ai.md)",
}

// vaultConfig is one vault's resolved configuration (internal/config:
// flags > environment > the user's config file > the vault's own file >
// defaults). It is loaded once per vault and everything about the vault
// (index folder, excludes, write policy, AI) comes from it, so each served
// vault follows its own file.
type vaultConfig struct {
	dir string // the vault folder as given
	cfg *config.Config
	// indexDir is where the index goes ("" = <vault>/.loci).
	indexDir string
	exclude  []string
}

// configFlags are the global flags the user gave, as config values.
func (g *globals) configFlags() []config.Flag {
	given := func(name string, nonZero bool) bool {
		if g.flags == nil {
			return nonZero
		}
		f := g.flags.Lookup(name)
		return f != nil && f.Changed
	}
	var out []config.Flag
	if given("index-dir", g.indexDir != "") {
		out = append(out, config.Flag{Key: "index_dir", Name: "index-dir", Value: g.indexDir})
	}
	if given("exclude", len(g.exclude) > 0) {
		out = append(out, config.Flag{Key: "exclude", Name: "exclude", Value: g.exclude})
	}
	if given("enable-writes", g.enableWrites) && g.enableWrites {
		out = append(out, config.Flag{Key: "writes.enabled", Name: "enable-writes", Value: true})
	}
	if given("read-only", g.readOnly) && g.readOnly {
		out = append(out, config.Flag{Key: "writes.read_only", Name: "read-only", Value: true})
	}
	return out
}

// loadConfig resolves a vault's configuration, failing closed with
// config_invalid. --index-dir, LOCI_INDEX_DIR and the user's file are the
// user's own and may name any folder; an index_dir from the vault's own
// file must stay inside the vault (config.Config.ResolveIndexDir).
func (g *globals) loadConfig(vaultDir string) (*vaultConfig, error) {
	abs, err := filepath.Abs(vaultDir)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeVaultNotFound, "cannot resolve vault path").With("vault", vaultDir)
	}
	cfg, err := config.Resolve(abs, config.Options{Flags: g.configFlags()})
	if err != nil {
		return nil, err
	}
	vc := &vaultConfig{dir: vaultDir, cfg: cfg}
	if vc.indexDir, err = cfg.ResolveIndexDir(); err != nil {
		return nil, err
	}
	vc.exclude = append([]string{}, cfg.Exclude...)
	return vc, nil
}

// settings resolves the vault's index folder and excludes.
func (g *globals) settings(vaultDir string) (indexDir string, exclude []string, err error) {
	vc, err := g.loadConfig(vaultDir)
	if err != nil {
		return "", nil, err
	}
	return vc.indexDir, vc.exclude, nil
}
