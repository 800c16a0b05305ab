package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
)

// Prompts.
const (
	PromptUser = "> "
	PromptMore = "… "
)

// ConnectAll connects servers in parallel and reports each (in the given
// order): a server that fails is reported and skipped, never fatal.
func (a *App) ConnectAll(ctx context.Context, specs []ServerSpec) {
	errs := make([]error, len(specs))
	sess := make([]*Session, len(specs))
	var wg sync.WaitGroup
	for i, sp := range specs {
		wg.Go(func() { sess[i], errs[i] = a.Servers.Connect(ctx, sp) })
	}
	wg.Wait()
	for i, sp := range specs {
		a.reportConnect(sp, sess[i], errs[i])
	}
}

func (a *App) reportConnect(sp ServerSpec, s *Session, err error) {
	if err != nil {
		a.R.Error("MCP server %s (%s) skipped: %v", sp.Alias, sp.Target(), err)
		return
	}
	name, _ := s.ServerInfo()
	if name != "" && name != sp.Alias {
		name = " — " + name
	} else {
		name = ""
	}
	a.R.Notice("connected %s (%s%s): %s", sp.Alias, s.Kind, name, plural(s.ToolCount(), "tool"))
}

// Run is the read-eval loop. first, if not empty, is sent as the first
// message. It returns at :quit or end of input; without a terminal it also
// stops at the first message the model could not answer (with that error).
func (a *App) Run(ctx context.Context, first string) error {
	if a.TTY {
		a.R.Notice("model %s at %s · %s · :help for commands, :quit to leave", a.Model.Name, a.Model.BaseURL, a.toolSummary())
	}
	if first != "" {
		if err := a.Turn(ctx, first); err != nil && !a.TTY {
			return err
		}
	}
	interrupted := false
	for {
		a.flushNotices()
		line, err := a.readUserLine(ctx)
		switch {
		case errors.Is(err, ErrInterrupted):
			if interrupted {
				return nil
			}
			interrupted = true
			a.R.Notice("press Ctrl-C again, Ctrl-D or type :quit to leave")
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		interrupted = false
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if isMeta(line) {
			if quit := a.Meta(ctx, line); quit {
				return nil
			}
			continue
		}
		line = strings.TrimPrefix(line, ":") // "::text" sends ":text"
		if err := a.Turn(ctx, line); err != nil && !a.TTY {
			return err
		}
	}
}

// readUserLine reads one message; a line ending in a backslash continues
// on the next.
func (a *App) readUserLine(ctx context.Context) (string, error) {
	var parts []string
	prompt := PromptUser
	for {
		l, err := a.readLine(ctx, prompt, true)
		if err != nil {
			if errors.Is(err, io.EOF) && len(parts) > 0 {
				return strings.Join(parts, "\n"), nil
			}
			return "", err
		}
		if strings.HasSuffix(l, "\\") {
			parts = append(parts, strings.TrimSuffix(l, "\\"))
			prompt = PromptMore
			continue
		}
		return strings.Join(append(parts, l), "\n"), nil
	}
}

func isMeta(line string) bool {
	return len(line) > 1 && line[0] == ':' && (line[1] >= 'a' && line[1] <= 'z' || line[1] >= 'A' && line[1] <= 'Z')
}

func (a *App) toolSummary() string {
	n, tools := 0, 0
	for _, s := range a.Servers.Sessions() {
		if s.Connected() {
			n++
			tools += s.ToolCount()
		}
	}
	if n == 0 {
		return "no MCP servers (:mcp connect adds one)"
	}
	return fmt.Sprintf("%s, %s", plural(n, "MCP server"), plural(tools, "tool"))
}

const helpText = `Type a message and press Enter (end a line with \ to continue it on the next).
Meta-commands:
  :mcp list                          servers: alias, transport, tools, status
  :mcp tools [alias]                 tools, as alias.tool, with their annotations
  :mcp tool <alias.tool>             one tool's description and full input schema
  :mcp connect <url|command> [alias] connect a server (quote a command with arguments:
                                     :mcp connect "loci mcp ~/Notes" notes); or a configured alias;
                                     --token-env NAME sends Authorization: Bearer $NAME to a URL
  :mcp disconnect <alias>            close a server
  :mcp reconnect <alias>             connect a failed or closed server again
  :help                              this text
  :quit                              leave (also :q, :exit, Ctrl-D)
Tool calls: y runs it, Enter or n declines, a allows that tool for the rest of the session.
Ctrl-C stops the current answer or tool call. Start a message with :: to send a leading colon.`

// Meta runs a meta-command and reports whether the chat should end.
func (a *App) Meta(ctx context.Context, line string) (quit bool) {
	words, err := SplitWords(line[1:])
	if err != nil {
		a.R.Error("%v", err)
		return false
	}
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "quit", "q", "exit":
		return true
	case "help", "h", "?":
		a.R.Print(helpText)
	case "mcp":
		ctx, done := a.interruptible(ctx) // Ctrl-C stops a slow connect, not the chat
		defer done()
		a.metaMCP(ctx, words[1:])
	default:
		a.R.Error("unknown command :%s (:help lists them)", words[0])
	}
	return false
}

func (a *App) metaMCP(ctx context.Context, args []string) {
	if len(args) == 0 {
		a.R.Error("usage: :mcp list | tools | tool <alias.tool> | connect <url|command> [alias] [--token-env NAME] | disconnect <alias> | reconnect <alias>")
		return
	}
	switch args[0] {
	case "list", "ls":
		a.mcpList()
	case "tools":
		a.mcpTools(ctx, args[1:])
	case "tool":
		if len(args) != 2 {
			a.R.Error("usage: :mcp tool <alias.tool>")
			return
		}
		a.mcpTool(ctx, args[1])
	case "connect":
		a.mcpConnect(ctx, args[1:])
	case "disconnect":
		if len(args) != 2 {
			a.R.Error("usage: :mcp disconnect <alias>")
			return
		}
		if err := a.Servers.Disconnect(args[1]); err != nil {
			a.R.Error("%v", err)
			return
		}
		a.R.Notice("disconnected %s", args[1])
	case "reconnect":
		if len(args) != 2 {
			a.R.Error("usage: :mcp reconnect <alias>")
			return
		}
		s, err := a.Servers.Reconnect(ctx, args[1])
		if s == nil {
			a.R.Error("%v", err)
			return
		}
		a.reportConnect(s.Spec, s, err)
	default:
		a.R.Error("unknown :mcp command %q (:help lists them)", args[0])
	}
}

func (a *App) mcpList() {
	ss := a.Servers.Sessions()
	if len(ss) == 0 {
		a.R.Print("no MCP servers; :mcp connect <url|command> [alias] adds one")
		return
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ALIAS\tTRANSPORT\tTOOLS\tSTATUS\tTARGET")
	for _, s := range ss {
		st, err := s.Status()
		tools := fmt.Sprint(s.ToolCount())
		if st != StatusConnected {
			tools = "-"
		}
		kind := s.Kind
		if kind == "" {
			kind = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Alias(), kind, tools, st, s.Spec.Target())
		if err != nil {
			fmt.Fprintf(tw, "\t\t\t\t↳ %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}
	tw.Flush()
	a.R.Print(b.String())
}

func (a *App) mcpTools(ctx context.Context, only []string) {
	ts := a.Servers.Tools(ctx)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	n := 0
	for _, e := range ts.Entries {
		if len(only) > 0 && !slices.Contains(only, e.Alias) {
			continue
		}
		n++
		var tags []string
		if e.ReadOnly() {
			tags = append(tags, "read-only")
		}
		if e.Destructive() {
			tags = append(tags, "destructive")
		}
		switch dec, _ := a.Policy.Decide(e, a.TTY); dec {
		case Allow:
			tags = append(tags, "auto")
		case Deny:
			tags = append(tags, "refused: no terminal")
		}
		tag := ""
		if len(tags) > 0 {
			tag = "[" + strings.Join(tags, ", ") + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Display, tag, clip(firstSentence(e.Tool.Description), 60))
	}
	tw.Flush()
	if n == 0 {
		a.R.Print("no tools (:mcp list shows the servers)")
		return
	}
	a.R.Print(b.String())
}

func (a *App) mcpTool(ctx context.Context, name string) {
	ts := a.Servers.Tools(ctx)
	e := ts.Lookup(name)
	if e == nil {
		a.R.Error("no tool %q (:mcp tools lists them)", name)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (the model calls it %s)\n", e.Display, e.Wire)
	if e.Tool.Title != "" {
		fmt.Fprintf(&b, "title: %s\n", e.Tool.Title)
	}
	if an := e.Tool.Annotations; an != nil {
		ab, _ := json.Marshal(an)
		fmt.Fprintf(&b, "annotations: %s\n", ab)
	}
	dec, why := a.Policy.Decide(e, a.TTY)
	fmt.Fprintf(&b, "approval: %s (%s)\n", dec, why)
	if e.Tool.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(e.Tool.Description))
	}
	sb, _ := json.MarshalIndent(e.Tool.InputSchema, "", "  ")
	fmt.Fprintf(&b, "\ninput schema:\n%s\n", sb)
	a.R.Print(b.String())
}

const connectUsage = `usage: :mcp connect <url|command> [alias] [--token-env NAME]; quote a command with arguments: :mcp connect "loci mcp ~/Notes" notes`

func (a *App) mcpConnect(ctx context.Context, args []string) {
	var pos []string
	tokenEnv, withToken := "", false
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "--token-env":
			withToken = true
			if i+1 < len(args) {
				i++
				tokenEnv = args[i]
			}
		case strings.HasPrefix(w, "--token-env="):
			withToken, tokenEnv = true, strings.TrimPrefix(w, "--token-env=")
		case strings.HasPrefix(w, "--"):
			a.R.Error("unknown option %s; %s", w, connectUsage)
			return
		default:
			pos = append(pos, w)
		}
	}
	if withToken && tokenEnv == "" {
		a.R.Error("--token-env needs the name of the environment variable that holds the token (:mcp connect URL --token-env LOCI_TOKEN)")
		return
	}
	if len(pos) == 0 || len(pos) > 2 {
		a.R.Error("%s", connectUsage)
		return
	}
	target := pos[0]
	var spec ServerSpec
	if sc, ok := a.Cfg.Servers[target]; ok && len(pos) == 1 {
		// A server declared in the config (perhaps disabled there).
		sc.Disabled = false
		tmp := &Config{Servers: map[string]ServerConfig{target: sc}}
		spec = tmp.ServerSpecs(a.getenv)[0]
	} else if isURL(target) {
		if err := checkHTTPURL(target); err != nil {
			a.R.Error("%v", err)
			return
		}
		spec = ServerSpec{URL: target}
	} else {
		argv, err := SplitWords(target)
		if err != nil || len(argv) == 0 {
			a.R.Error("cannot parse the command %q", target)
			return
		}
		for i := range argv {
			argv[i] = ExpandHome(argv[i])
		}
		spec = ServerSpec{Command: argv}
	}
	if withToken {
		if spec.URL == "" {
			a.R.Error("--token-env is for URL servers (a command's server gets its environment from env: in the chat config)")
			return
		}
		tok := a.getenv(tokenEnv)
		if tok == "" {
			a.R.Error("%s is not set (or is empty): export it before starting loci chat, or give the server token_env in the chat config", tokenEnv)
			return
		}
		h := map[string]string{}
		for k, v := range spec.Headers {
			h[k] = v
		}
		h["Authorization"] = "Bearer " + tok
		spec.Headers = h
	}
	if spec.Alias == "" {
		if len(pos) == 2 {
			spec.Alias = pos[1]
		} else {
			t := []string{target}
			if spec.URL == "" {
				t = spec.Command
			}
			spec.Alias = DeriveAlias(t, func(s string) bool { x := a.Servers.Session(s); return x != nil && x.Connected() })
		}
	}
	if err := ValidAlias(spec.Alias); err != nil {
		a.R.Error("%v", err)
		return
	}
	s, err := a.Servers.Connect(ctx, spec)
	if s == nil {
		a.R.Error("%v", err)
		return
	}
	a.reportConnect(spec, s, err)
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
