// Package chat is `loci chat`: an MCP client that connects a model (any
// OpenAI-compatible chat-completions endpoint, streamed) to the tools of
// one or more MCP servers — the local vault in-process, others over
// Streamable HTTP (or the older HTTP+SSE) and stdio — with the user in
// control of every call.
//
// The pieces: Manager holds the MCP sessions and their cached tool lists;
// Toolset names their tools for the model (alias__tool) and maps calls
// back; Policy is the approval gate; Model streams completions and
// assembles tool-call deltas; App runs the conversation loop and the
// meta-commands; History logs sessions as JSONL.
package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// maxModelTools is the tools-per-request limit of OpenAI's API (others
// have similar ones); loci chat warns beyond it but still sends them all.
const maxModelTools = 128

// App is one chat: a model, the MCP sessions, the approval policy, the
// conversation so far and the terminal (or pipe) it runs on.
type App struct {
	Cfg     *Config
	Model   *Model
	Servers *Manager
	Policy  *Policy
	R       *Renderer
	In      LineReader
	// TTY says a person is at a terminal to confirm calls. Without one,
	// calls that need confirmation are refused (and the model told so).
	TTY bool
	// History logs the session (nil: not logged).
	History *History
	// RunCommand runs approved CMD: lines (default: ShellRunner).
	RunCommand CommandRunner
	// Getenv reads the environment (default os.Getenv): the variables a
	// server's token_env or `:mcp connect --token-env` name.
	Getenv func(string) string
	// Out-of-band notices (a server gone, tools changed) are queued here by
	// other goroutines and printed at the next safe point.
	mu          sync.Mutex
	notices     []string
	messages    []Message
	turn        context.CancelFunc
	pendingRead chan readResult
	warnedTools int
}

func (a *App) getenv(k string) string {
	if a.Getenv != nil {
		return a.Getenv(k)
	}
	return os.Getenv(k)
}

// NewApp assembles a chat. It hooks the manager's notifications (a server
// gone, a tool list changed) to notices printed at the next safe point.
func NewApp(cfg *Config, model *Model, servers *Manager, r *Renderer, in LineReader, tty bool) *App {
	a := &App{
		Cfg: cfg, Model: model, Servers: servers, R: r, In: in, TTY: tty,
		Policy: &Policy{AutoApprove: cfg.AutoApprove, ReadOnly: cfg.AutoApproveReadOnly},
	}
	servers.OnServerGone = func(alias string, err error) {
		a.Notify("MCP server %s is gone (%v); its tools are withdrawn. :mcp reconnect %s tries again.", alias, err, alias)
	}
	servers.OnToolsRefreshed = func(alias string, n int) {
		a.Notify("%s changed its tools: now %s", alias, plural(n, "tool"))
	}
	return a
}

// Messages returns the conversation so far (without the system prompt).
func (a *App) Messages() []Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Message(nil), a.messages...)
}

// SetMessages replaces the conversation (for --resume).
func (a *App) SetMessages(m []Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.messages = append([]Message(nil), m...)
}

// Notify queues a notice from another goroutine.
func (a *App) Notify(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notices = append(a.notices, fmt.Sprintf(format, args...))
}

func (a *App) flushNotices() {
	a.mu.Lock()
	n := a.notices
	a.notices = nil
	a.mu.Unlock()
	for _, s := range n {
		a.R.Warn("%s", s)
	}
}

// Interrupt cancels the turn in progress, if any, and reports whether
// there was one (the CLI's SIGINT handler: Ctrl-C stops an answer, not the
// chat).
func (a *App) Interrupt() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.turn == nil {
		return false
	}
	a.turn()
	return true
}

// interruptible derives the context of one turn (or meta-command) that
// Interrupt cancels.
func (a *App) interruptible(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	a.mu.Lock()
	a.turn = cancel
	a.mu.Unlock()
	return ctx, func() {
		a.mu.Lock()
		a.turn = nil
		a.mu.Unlock()
		cancel()
	}
}

func (a *App) commit(ms ...Message) {
	a.mu.Lock()
	a.messages = append(a.messages, ms...)
	a.mu.Unlock()
	a.History.Append(ms...)
}

// Turn sends one user message and runs the loop until the model answers
// in plain text: stream the answer; if it asks for tool calls, confirm and
// dispatch each in order, send the results back and ask again, at most
// MaxToolDepth rounds. It returns an error only when the model could not
// be reached (the REPL shows it and goes on; a pipe stops).
func (a *App) Turn(ctx context.Context, text string) error {
	ctx, done := a.interruptible(ctx)
	defer done()

	// The user's message is committed with the first answer, so a request
	// that fails outright leaves the conversation as it was.
	pending := []Message{{Role: "user", Content: text}}
	for round := 0; ; round++ {
		a.flushNotices()
		ts := a.Servers.Tools(ctx)
		a.flushNotices()
		if n := len(ts.Entries); n > maxModelTools && n != a.warnedTools {
			a.warnedTools = n
			a.R.Warn("%d tools are connected; many model APIs accept at most %d per request (:mcp disconnect trims them)", n, maxModelTools)
		}
		msgs := append([]Message{{Role: "system", Content: a.SystemPrompt(ts)}}, a.Messages()...)
		msgs = append(msgs, pending...)
		resp, err := a.Model.Stream(ctx, ModelRequest{Messages: msgs, Tools: ts.OpenAI()}, Deltas{Text: a.R.Text, Reasoning: a.R.Reasoning})
		a.R.EndText()
		if err != nil {
			if ctx.Err() != nil {
				if resp != nil && resp.Content != "" {
					a.commit(append(pending, Message{Role: "assistant", Content: resp.Content + " [interrupted]"})...)
				}
				a.R.Warn("interrupted")
				return nil
			}
			a.R.Error("%v", err)
			if round == 0 {
				a.R.Notice("your message was not sent; send it again when the model is reachable")
			}
			return err
		}
		if resp.Content == "" && len(resp.ToolCalls) == 0 {
			a.R.Notice("the model returned an empty answer")
		}
		a.commit(append(pending, Message{Role: "assistant", Content: resp.Content, ToolCalls: resp.ToolCalls})...)
		pending = nil
		if resp.FinishReason == "length" {
			a.R.Warn("the answer was cut: the model reached its output limit (model.max_tokens)")
		}
		if len(resp.ToolCalls) == 0 {
			feedback := a.runCommands(ctx, resp.Content, round)
			if feedback == "" {
				return nil
			}
			pending = []Message{{Role: "user", Content: feedback}}
			continue
		}
		if round >= a.Cfg.MaxToolDepth {
			for _, c := range resp.ToolCalls {
				a.R.ToolRefused(displayName(ts, c.Function.Name), "not run: depth limit")
				a.commit(Message{Role: "tool", ToolCallID: c.ID, Content: fmt.Sprintf(
					"error: not run: loci chat's tool-call depth limit (%d rounds per user message) was reached. Answer with what you have; the user can tell you to continue.", a.Cfg.MaxToolDepth)})
			}
			a.R.Warn("tool-call depth limit reached: the model asked for tools %d times in a row for this message; its last request (%s) was not run. "+
				"Send \"continue\" to let it go on, or raise max_tool_depth.", a.Cfg.MaxToolDepth+1, plural(len(resp.ToolCalls), "call"))
			return nil
		}
		for _, c := range resp.ToolCalls {
			var content string
			if ctx.Err() != nil {
				content = "error: not run: the user interrupted"
				a.R.ToolRefused(displayName(ts, c.Function.Name), "not run: interrupted")
			} else {
				content = a.dispatch(ctx, ts, c)
			}
			a.commit(Message{Role: "tool", ToolCallID: c.ID, Content: content})
		}
		if ctx.Err() != nil {
			a.R.Warn("interrupted")
			return nil
		}
	}
}

func displayName(ts *Toolset, wire string) string {
	if e := ts.Lookup(wire); e != nil {
		return e.Display
	}
	return wire
}

// dispatch confirms and runs one tool call and returns what the model
// reads as its result. Every failure becomes a tool error the model can
// act on; none ends the chat.
func (a *App) dispatch(ctx context.Context, ts *Toolset, c ToolCall) string {
	e := ts.Lookup(c.Function.Name)
	if e == nil {
		a.R.ToolCall(c.Function.Name, prettyJSON(c.Function.Arguments), false)
		a.R.ToolRefused(c.Function.Name, "no such tool")
		return fmt.Sprintf("error: there is no tool named %q; call one of the tools listed in this request", c.Function.Name)
	}
	args, err := normalizeArgs(c.Function.Arguments)
	if err != nil {
		a.R.ToolCall(e.Display, c.Function.Arguments, false)
		a.R.ToolRefused(e.Display, "arguments are not valid JSON")
		return fmt.Sprintf("error: the arguments for %s are not a valid JSON object (%v); fix them and call again", e.Wire, err)
	}
	dec, why := a.Policy.Decide(e, a.TTY)
	a.R.ToolCall(e.Display, prettyJSON(string(args)), dec == Ask)
	switch dec {
	case Deny:
		a.R.ToolRefused(e.Display, "not run: "+why)
		if e.ReadOnly() {
			return fmt.Sprintf("error: not run: %s needs the user's confirmation, and loci chat has no terminal to ask on (its input is a pipe). "+
				"Continue without it, or tell the user to allow it with auto_approve in the chat config.", e.Display)
		}
		return fmt.Sprintf("error: not run: %s may change data, and without a terminal loci chat never runs such tools "+
			"(there is no one to confirm). Continue without it, or tell the user to run loci chat in a terminal.", e.Display)
	case Ask:
		ok, err := a.confirm(ctx, e)
		if errors.Is(err, ErrInterrupted) || ctx.Err() != nil {
			a.Interrupt()
			a.R.ToolRefused(e.Display, "not run: interrupted")
			return "error: not run: the user interrupted"
		}
		if err != nil || !ok {
			a.R.ToolRefused(e.Display, "declined")
			return fmt.Sprintf("error: the user declined this call of %s. Do not call it again unless the user asks; continue without it or ask the user.", e.Display)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, a.Cfg.ToolTimeout)
	defer cancel()
	start := time.Now()
	res, err := e.session.call(tctx, e.Tool.Name, args)
	d := time.Since(start)
	if err != nil {
		var text string
		switch {
		case ctx.Err() != nil:
			text = "error: interrupted by the user"
		case errors.Is(tctx.Err(), context.DeadlineExceeded):
			text = fmt.Sprintf("error: %s did not answer within %s (tool_timeout)", e.Display, a.Cfg.ToolTimeout)
		default:
			text = toolErrorText(e.Display, err)
			if !e.session.Connected() {
				text += fmt.Sprintf(". Server %s is no longer reachable, so its tools are gone for now; the user can reconnect it with :mcp reconnect %s.", e.Alias, e.Alias)
			}
		}
		a.R.ToolResult(e.Display, false, text, d)
		a.flushNotices()
		return text
	}
	text := ResultText(res)
	if res.IsError {
		text = "error: " + text
	}
	a.R.ToolResult(e.Display, !res.IsError, text, d)
	if t, cut := Truncate(text, a.Cfg.MaxResultChars); cut {
		a.R.Notice("result cut to %d of %d characters for the model (max_result_chars)", a.Cfg.MaxResultChars, len([]rune(text)))
		text = t
	}
	return text
}

// confirm asks y/N (or a: always, for this session; not offered for
// destructive tools).
func (a *App) confirm(ctx context.Context, e *ToolEntry) (bool, error) {
	q := fmt.Sprintf("  allow %s? [y/N/a=always this session] ", e.Display)
	if e.Destructive() {
		q = fmt.Sprintf("  allow %s (destructive)? [y/N] ", e.Display)
	}
	for {
		ans, err := a.readLine(ctx, q, false)
		if err != nil {
			return false, err
		}
		switch strings.ToLower(strings.TrimSpace(ans)) {
		case "y", "yes":
			return true, nil
		case "", "n", "no":
			return false, nil
		case "a", "always":
			if !e.Destructive() {
				if a.Policy.Session == nil {
					a.Policy.Session = map[string]bool{}
				}
				a.Policy.Session[e.Display] = true
				return true, nil
			}
		}
	}
}

type readResult struct {
	s   string
	err error
}

// readLine reads from the LineReader without blocking cancellation. A read
// abandoned by a cancellation stays pending and its line goes to the next
// readLine, so that two reads never race for the same input.
func (a *App) readLine(ctx context.Context, prompt string, keep bool) (string, error) {
	a.mu.Lock()
	ch := a.pendingRead
	if ch == nil {
		ch = make(chan readResult, 1)
		a.pendingRead = ch
		go func() {
			s, err := a.In.ReadLine(prompt, keep)
			ch <- readResult{s, err}
		}()
	}
	a.mu.Unlock()
	select {
	case r := <-ch:
		a.mu.Lock()
		a.pendingRead = nil
		a.mu.Unlock()
		return r.s, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// runCommands handles the CMD: lines of a plain answer: shown, confirmed
// one by one, run, and their output returned for the model ("" when
// nothing ran).
func (a *App) runCommands(ctx context.Context, answer string, round int) string {
	cmds := ExtractCommands(answer)
	if len(cmds) == 0 {
		return ""
	}
	if !a.Cfg.Commands.Enabled {
		a.R.Notice("the answer proposes %s; CMD: lines are not run (commands.enabled is off)", plural(len(cmds), "command"))
		return ""
	}
	if round >= a.Cfg.MaxToolDepth {
		a.R.Warn("tool-call depth limit reached: the proposed commands were not run")
		return ""
	}
	run := a.RunCommand
	if run == nil {
		run = ShellRunner(a.Cfg.Commands.Shell, a.Cfg.Commands.Timeout)
	}
	var fb strings.Builder
	ran := false
	for _, c := range cmds {
		a.R.frame("  ", "$ "+c)
		if !a.TTY {
			a.R.ToolRefused("command", "not run: no terminal to confirm on")
			fmt.Fprintf(&fb, "$ %s\n[not run: no terminal to confirm on]\n\n", c)
			continue
		}
		ans, err := a.readLine(ctx, "  run it? [y/N] ", false)
		if errors.Is(err, ErrInterrupted) || ctx.Err() != nil {
			a.Interrupt()
			a.R.ToolRefused("command", "interrupted")
			return ""
		}
		if v := strings.ToLower(strings.TrimSpace(ans)); err != nil || (v != "y" && v != "yes") {
			a.R.ToolRefused("command", "declined")
			fmt.Fprintf(&fb, "$ %s\n[declined by the user]\n\n", c)
			continue
		}
		out, status, err := run(ctx, c)
		ran = true
		a.R.Output(out, 20)
		switch {
		case err != nil:
			a.R.ToolRefused("command", err.Error())
			fmt.Fprintf(&fb, "$ %s\n%s\n[failed: %v]\n\n", c, out, err)
		default:
			a.R.frame("  ", fmt.Sprintf("[exit status %d]", status))
			fmt.Fprintf(&fb, "$ %s\n%s\n[exit status %d]\n\n", c, out, status)
		}
	}
	if !ran {
		return ""
	}
	text, _ := Truncate(strings.TrimSpace(fb.String()), a.Cfg.MaxResultChars)
	return "Output of the commands you proposed (each ran after the user confirmed it):\n\n" + text
}

// normalizeArgs checks the model's argument string is a JSON object ("" is {}).
func normalizeArgs(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	if m == nil {
		return json.RawMessage("{}"), nil
	}
	return json.RawMessage(s), nil
}

func prettyJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}
