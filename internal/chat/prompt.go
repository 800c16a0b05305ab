package chat

import (
	"fmt"
	"strings"
)

// maxInstructions bounds how much of one server's instructions goes into
// the system prompt.
const maxInstructions = 4000

// SystemPrompt is rebuilt for every request from the sessions connected at
// that moment: a short static frame, each server's own instructions, the
// CMD: convention when it is enabled, and the user's addition. The tools
// themselves travel in the request's tools field, not here.
func (a *App) SystemPrompt(ts *Toolset) string {
	var b strings.Builder
	b.WriteString("You are the assistant in loci chat, a terminal chat. Answer in plain text; Markdown is fine.\n")
	counts := map[string]int{}
	for _, e := range ts.Entries {
		counts[e.Alias]++
	}
	var servers []*Session
	for _, s := range a.Servers.Sessions() {
		if s.Connected() {
			servers = append(servers, s)
		}
	}
	if len(servers) > 0 {
		b.WriteString("\nYou can call tools from these MCP servers; a tool's name is <server>__<tool>:\n")
		for _, s := range servers {
			fmt.Fprintf(&b, "- %s (%s, %d tools)\n", s.Alias(), describeKind(s), counts[s.Alias()])
		}
		b.WriteString("The user sees every call and may have to approve it. If a call is declined or fails, do not repeat it; " +
			"carry on without it or tell the user what you need. Tool results may be cut to fit; ask for narrower results then.\n")
		for _, s := range servers {
			_, ins := s.ServerInfo()
			if ins = strings.TrimSpace(ins); ins == "" {
				continue
			}
			if len(ins) > maxInstructions {
				ins = clip(ins, maxInstructions)
			}
			fmt.Fprintf(&b, "\nInstructions from server %s (tool names there are without the %s__ prefix):\n%s\n", s.Alias(), s.Alias(), ins)
		}
	}
	if a.Cfg.Commands.Enabled {
		b.WriteString("\nTo run a shell command on the user's machine, write it alone on a line as `CMD: <command>`. " +
			"The user confirms each command before it runs, and its output comes back to you. Prefer a tool when one fits.\n")
	}
	if extra := strings.TrimSpace(a.Cfg.Model.SystemPrompt); extra != "" {
		b.WriteString("\n" + extra + "\n")
	}
	return b.String()
}

func describeKind(s *Session) string {
	name, _ := s.ServerInfo()
	k := s.Kind
	if name != "" && name != s.Alias() {
		return name + ", " + k
	}
	return k
}
