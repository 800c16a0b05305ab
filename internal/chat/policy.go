package chat

import "strings"

// Decision is what the approval gate says about one tool call.
type Decision int

// Decisions.
const (
	Ask   Decision = iota // show it and wait for y
	Allow                 // run without asking
	Deny                  // refuse without asking (no terminal to ask on)
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return "ask"
}

// Policy is the approval gate's configuration.
type Policy struct {
	// AutoApprove holds "alias.tool", "alias.*" or "*".
	AutoApprove []string
	// ReadOnly auto-approves tools marked readOnlyHint.
	ReadOnly bool
	// Session holds the tools the user answered "a" (always) for, this
	// session only.
	Session map[string]bool
}

// Matches reports whether an auto_approve entry covers alias.tool.
func (p *Policy) Matches(display string) bool {
	if p.Session[display] {
		return true
	}
	for _, pat := range p.AutoApprove {
		switch {
		case pat == "*", pat == display:
			return true
		case strings.HasSuffix(pat, ".*") && strings.HasPrefix(display, pat[:len(pat)-1]):
			return true
		}
	}
	return false
}

// Decide applies the rules, in order:
//
//  1. a tool marked destructive always asks (and, without a terminal, is
//     refused);
//  2. without a terminal, a tool that is not read-only is refused: nothing
//     that writes is auto-approved when no one can see it happen;
//  3. an auto_approve entry (or an "a" answer this session) allows;
//  4. with auto_approve_read_only, a read-only tool is allowed;
//  5. otherwise ask (without a terminal: refuse).
//
// The reason says which rule decided, for the notice shown to the user and
// the model.
func (p *Policy) Decide(e *ToolEntry, tty bool) (Decision, string) {
	switch {
	case e.Destructive() && tty:
		return Ask, "destructive tool: always confirmed"
	case e.Destructive():
		return Deny, "destructive, and there is no terminal to confirm on"
	case !tty && !e.ReadOnly():
		return Deny, "may write, and there is no terminal to confirm on"
	case p.Matches(e.Display):
		return Allow, "auto_approve"
	case p.ReadOnly && e.ReadOnly():
		return Allow, "read-only (auto_approve_read_only)"
	case !tty:
		return Deny, "needs confirmation, and there is no terminal to ask on"
	}
	return Ask, "needs confirmation"
}
