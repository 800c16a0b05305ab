package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loci-dev/loci/internal/chat"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/mcpserver"
)

func init() { commandFactories = append(commandFactories, newChatCmd) }

// chatStdin is where loci chat reads the user's lines (tests replace it).
var chatStdin io.Reader = os.Stdin

// vaultAlias is the alias of the vault served in-process by --vault.
const vaultAlias = "loci"

type chatOptions struct {
	config    string
	model     string
	baseURL   string
	provider  string
	resume    string
	sessions  bool
	noHistory bool
	// serversFiles are mcpServers JSON files to read servers from;
	// noDiscover turns off finding them in the usual places.
	serversFiles []string
	noDiscover   bool
}

func newChatCmd(g *globals) *cobra.Command {
	var o chatOptions
	cmd := &cobra.Command{
		Use:   "chat [message...]",
		Short: "Chat with a model that uses your vault and other MCP servers as tools",
		Long: "A terminal chat that connects a model (any OpenAI-compatible chat-completions endpoint, streamed) to the tools of MCP servers: " +
			"the vault given with --vault (served in-process), and the servers of the chat config (Streamable HTTP with an HTTP+SSE fallback, or stdio commands). " +
			"Every tool call is shown and needs y unless the config auto-approves it; destructive tools always ask, and without a terminal nothing that writes runs.\n\n" +
			"The model comes from the chat: section of your config (" + chat.DefaultConfigPath() + ": chat.provider naming a providers: entry, " +
			"or chat.base_url, and chat.model), LOCI_CHAT_PROVIDER / LOCI_CHAT_BASE_URL / LOCI_CHAT_MODEL / LOCI_CHAT_API_KEY, or the flags; " +
			"the older chat.yaml beside it (or --config, LOCI_CHAT_CONFIG) still works. Without a model, loci chat says so and makes no request. " +
			"Servers other clients already know are read too: --servers-file PATH (an mcpServers JSON), your Claude Desktop config, and, listed but not started (a project may come from someone else), " +
			"./.mcp.json, ./.cursor/mcp.json and ./.vscode/mcp.json (:mcp connect <alias> starts one). Their tools ask before running like any other. " +
			"Words after `chat` are sent as the first message; with input from a pipe, each line is a message. Sessions are logged as JSONL; --resume continues one. " +
			"Type :help inside the chat for the meta-commands (:mcp list, :mcp tools, :mcp connect, ...). See docs/chat.md.",
		Example: "  LOCI_CHAT_BASE_URL=http://127.0.0.1:11434/v1 LOCI_CHAT_MODEL=qwen2.5:7b loci chat --vault ~/Notes\n" +
			"  loci chat --vault ~/Notes \"what did we decide about Atlas?\"\n" +
			"  echo \"summarize my notes on spaced repetition\" | loci chat --vault ~/Notes\n" +
			"  loci chat --resume",
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.runChat(cmd, args, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "a chat.yaml for this run: the chat: section on its own, above your config.yaml (env "+chat.EnvConfig+")")
	f.StringVar(&o.model, "model", "", "model name (overrides "+chat.EnvModel+" and the config)")
	f.StringVar(&o.baseURL, "base-url", "", "OpenAI-compatible API base, e.g. http://127.0.0.1:11434/v1 (overrides "+chat.EnvBaseURL+")")
	f.StringVar(&o.provider, "provider", "", "a providers: entry (or type) of your config for the model (overrides "+chat.EnvProvider+")")
	f.StringVar(&o.resume, "resume", "", "continue a logged session: its id or file (--resume alone: the latest)")
	f.Lookup("resume").NoOptDefVal = "latest"
	f.BoolVar(&o.sessions, "sessions", false, "list the logged sessions and exit")
	f.BoolVar(&o.noHistory, "no-history", false, "do not log this session")
	f.StringArrayVar(&o.serversFiles, "servers-file", nil, "read MCP servers from this JSON file (the mcpServers of Claude Desktop, Cursor, .mcp.json, or VS Code's servers) and start them (repeatable)")
	f.BoolVar(&o.noDiscover, "no-discover", false, "do not read the servers of Claude Desktop's config and of ./.mcp.json, ./.cursor/mcp.json, ./.vscode/mcp.json")
	return cmd
}

func (g *globals) runChat(cmd *cobra.Command, args []string, o chatOptions) error {
	// The chat settings are the user's alone: flags > environment > the
	// chat file named for this run > the user's config > the default
	// chat.yaml > defaults. No vault's file is read for them.
	var flags []config.Flag
	if o.model != "" {
		flags = append(flags, config.Flag{Key: "chat.model", Name: "model", Value: o.model})
	}
	if o.baseURL != "" {
		flags = append(flags, config.Flag{Key: "chat.base_url", Name: "base-url", Value: o.baseURL})
	}
	if o.provider != "" {
		flags = append(flags, config.Flag{Key: "chat.provider", Name: "provider", Value: o.provider})
	}
	rc, err := config.Resolve("", config.Options{ChatFile: o.config, Flags: flags})
	if err != nil {
		return err
	}
	cfg, err := chat.FromConfig(rc)
	if err != nil {
		return err
	}
	cfg.Resolve(rc.Getenv)
	// --resume takes an optional value, so `--resume ID` parses as
	// --resume=latest plus a first word ID: take that word back when it is a
	// session id or a session file.
	if o.resume == "latest" && len(args) > 0 && chat.IsSessionRef(cfg.History.Dir, args[0]) {
		o.resume, args = args[0], args[1:]
	}
	if o.sessions {
		list, err := chat.ListSessions(cfg.History.Dir, 30)
		if err != nil {
			return errs.Wrap(err, errs.CodeInternal, "cannot list sessions")
		}
		if len(list) == 0 {
			fmt.Fprintf(g.stdout, "no chat sessions in %s\n", cfg.History.Dir)
		}
		for _, s := range list {
			fmt.Fprintln(g.stdout, s.String())
		}
		return nil
	}
	// Nothing is opened, spawned or requested without a model.
	if err := cfg.CheckModel(); err != nil {
		return err
	}

	stdinFile, _ := chatStdin.(*os.File)
	tty := stdinFile != nil && term.IsTerminal(int(stdinFile.Fd()))
	outFile, _ := g.stdout.(*os.File)
	color := outFile != nil && term.IsTerminal(int(outFile.Fd())) && os.Getenv("NO_COLOR") == ""
	r := &chat.Renderer{Out: g.stdout, Err: g.stderr, Color: color}
	if outFile == nil || !term.IsTerminal(int(outFile.Fd())) {
		// Through a pipe or into a file, stdout gets the answers only.
		r.Info = g.stderr
	}

	// Ctrl-C stops the current answer, not the chat, so the chat keeps its
	// own context and handles the signals itself.
	ctx, cancel := context.WithCancel(context.WithoutCancel(cmd.Context()))
	defer cancel()

	mgr := chat.NewManager(Version)
	mgr.ConnectTimeout = cfg.ConnectTimeout
	closeVault := func() {}
	defer func() {
		mgr.Close() // the client sessions first, then the vault they talk to
		closeVault()
	}()

	var specs []chat.ServerSpec
	useVault := cmd.Flag("vault") != nil && cmd.Flag("vault").Changed || os.Getenv("LOCI_VAULT") != ""
	if useVault {
		spec, closeFn, err := g.inProcessVault(ctx, r)
		if err != nil {
			return err
		}
		closeVault = closeFn
		specs = append(specs, spec)
	}
	if err := mergeServerFiles(cfg, o, r); err != nil {
		return err
	}
	for _, sp := range cfg.ServerSpecs(os.Getenv) {
		if useVault && sp.Alias == vaultAlias {
			r.Error("MCP server %s from the config skipped: the alias %s is taken by --vault", sp.Alias, vaultAlias)
			continue
		}
		specs = append(specs, sp)
	}

	var in chat.LineReader
	var tr *chat.TermReader
	if tty {
		echo := io.Writer(os.Stdout)
		if outFile == nil || !term.IsTerminal(int(outFile.Fd())) {
			echo = os.Stderr
		}
		tr = chat.NewTermReader(int(stdinFile.Fd()), stdinFile, echo)
		defer tr.Restore()
		in = tr
	} else {
		in = chat.NewPipeReader(chatStdin)
	}
	app := chat.NewApp(cfg, chat.NewModel(cfg.Model), mgr, r, in, tty)

	if o.resume != "" && (o.noHistory || !cfg.HistoryEnabled()) {
		msgs, err := readChatSession(cfg.History.Dir, o.resume)
		if err != nil {
			return err
		}
		app.SetMessages(msgs)
		r.Notice("resumed %s (not logged: history is off)", chatPlural(len(msgs), "message"))
	} else if o.resume != "" {
		h, msgs, err := chat.ResumeHistory(cfg.History.Dir, o.resume)
		if err != nil {
			return err
		}
		defer h.Close()
		app.History = h
		app.SetMessages(msgs)
		r.Notice("resumed session %s: %s", h.ID, chatPlural(len(msgs), "message"))
		chatRecap(r, msgs)
	} else if !o.noHistory && cfg.HistoryEnabled() {
		h, err := chat.NewHistory(cfg.History.Dir, cfg.Model.Name)
		if err != nil {
			r.Error("this session will not be logged: %v", err)
		} else {
			defer h.Close()
			app.History = h
		}
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sigs:
				if s == os.Interrupt && app.Interrupt() {
					continue
				}
				cancel()
				return
			}
		}
	}()

	app.ConnectAll(ctx, specs)
	err = app.Run(ctx, strings.Join(args, " "))
	if tr != nil {
		tr.Restore()
	}
	if app.History != nil {
		if herr := app.History.Err(); herr != nil {
			r.Error("the session log %s is incomplete: %v", app.History.Path, herr)
		} else if tty && len(app.Messages()) > 0 {
			r.Notice("session saved; continue it with: loci chat --resume %s", app.History.ID)
		}
	}
	if err != nil {
		return errs.Wrap(err, errs.CodeInternal, "loci chat stopped")
	}
	return nil
}

// inProcessVault opens the --vault folder, brings its index up to date and
// serves it to the chat over in-memory transports (the same MCP server as
// `loci mcp`, without a process or a socket). The index keeps syncing in
// the background while the chat runs.
func (g *globals) inProcessVault(ctx context.Context, r *chat.Renderer) (chat.ServerSpec, func(), error) {
	env, err := g.openServeEnv(ctx, nil)
	if err != nil {
		return chat.ServerSpec{}, nil, err
	}
	for _, vh := range env.Vaults {
		if vh.Index.Meta(ctx, "last_full_index_at") == "" {
			r.Notice("indexing %s for the first time…", vh.Vault.Root)
		}
		if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
			if errs.Code(err) != errs.CodeIndexBusy {
				env.Close()
				return chat.ServerSpec{}, nil, err
			}
			r.Notice("another loci process is indexing %s; answering from the index as it is", vh.Vault.Root)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := mcpserver.New(registry(), env, mcpserver.Options{Name: "loci", Version: Version, Logger: quiet})
	syncCtx, stopSync := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { backgroundSync(syncCtx, env, time.Minute, quiet) })
	spec := chat.ServerSpec{
		Alias: vaultAlias,
		Label: "vault " + env.Vaults[0].Vault.Root,
		InProcess: func(ctx context.Context) (mcp.Transport, func(), error) {
			clientT, serverT := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, serverT)
			if err != nil {
				return nil, nil, err
			}
			return clientT, func() { ss.Close() }, nil
		},
	}
	closeAll := func() {
		stopSync()
		wg.Wait()
		srv.Close()
		env.Close()
	}
	return spec, closeAll, nil
}

func readChatSession(dir, ref string) ([]chat.Message, error) {
	h, msgs, err := chat.ResumeHistory(dir, ref)
	if err != nil {
		return nil, err
	}
	h.Close()
	return msgs, nil
}

// chatRecap prints the last exchange of a resumed session.
func chatRecap(r *chat.Renderer, msgs []chat.Message) {
	var lastUser, lastAnswer string
	for _, m := range msgs {
		switch {
		case m.Role == "user":
			lastUser = m.Content
		case m.Role == "assistant" && m.Content != "":
			lastAnswer = m.Content
		}
	}
	if lastUser != "" {
		r.Notice("last message: %s", chatOneLine(lastUser, 100))
	}
	if lastAnswer != "" {
		r.Notice("last answer: %s", chatOneLine(lastAnswer, 100))
	}
}

func chatOneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if rs := []rune(s); len(rs) > n {
		return string(rs[:n]) + "…"
	}
	return s
}

func chatPlural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// mergeServerFiles adds the servers of the --servers-file files and of the
// files other clients keep (chat.ServerSources) to cfg.Servers. The chat
// config's own servers win an alias; then the files in order. A named file
// that cannot be read is an error; a discovered one is reported and
// skipped. Servers of the working directory's files are added disabled:
// listed, started only by :mcp connect. None is auto-approved: their tools
// go through the same approval policy as every other server's.
func mergeServerFiles(cfg *chat.Config, o chatOptions, r *chat.Renderer) error {
	cwd, _ := os.Getwd()
	sources := chat.ServerSources(o.serversFiles, cwd, !o.noDiscover)
	if len(sources) == 0 {
		return nil
	}
	if cfg.Servers == nil {
		cfg.Servers = map[string]chat.ServerConfig{}
	}
	from := map[string]string{}
	for alias := range cfg.Servers {
		from[alias] = "your chat config"
	}
	for _, src := range sources {
		servers, notes, err := chat.ReadServersFile(src.Path)
		if err != nil {
			if src.Kind == chat.SourceFlag {
				return err
			}
			r.Error("MCP servers of %s skipped: %v", src.Path, err)
			continue
		}
		for _, n := range notes {
			r.Error("%s: %s", src.Path, n)
		}
		var listed []string
		aliases := make([]string, 0, len(servers))
		for alias := range servers {
			aliases = append(aliases, alias)
		}
		slices.Sort(aliases)
		for _, alias := range aliases {
			if by, taken := from[alias]; taken {
				r.Notice("MCP server %s of %s skipped: %s already has that alias", alias, src.Path, by)
				continue
			}
			sc := servers[alias]
			if !src.Start() {
				if !sc.Disabled {
					listed = append(listed, alias)
				}
				sc.Disabled = true
			}
			cfg.Servers[alias] = sc
			from[alias] = src.Path
		}
		if len(listed) > 0 {
			r.Notice("%s declares %s, not started (a project's file may come from someone else): :mcp connect <alias> starts one, --servers-file %s starts them all",
				src.Path, strings.Join(listed, ", "), src.Path)
		}
	}
	return nil
}
