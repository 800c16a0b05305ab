package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// checkRoles applies the rules a role's settings must meet to be usable,
// so that `loci config validate` and every command agree: a model server
// needs a model (ai, embed), and loci chat's MCP servers and approval
// patterns must make sense. Every problem is located at its key.
func (c *Config) checkRoles() []Problem {
	var probs []Problem
	if ep := c.endpoints[RoleEmbed]; ep != nil && strings.TrimSpace(c.Embed.Model) == "" {
		probs = append(probs, c.problem("embed.provider", quote(c.Embed.Provider)+" is a model server and needs a model: set embed.model (or LOCI_EMBED_MODEL)", ""))
	}
	if ep := c.endpoints[RoleAI]; ep != nil && strings.TrimSpace(c.AI.Model) == "" {
		probs = append(probs, c.problem("ai.provider", quote(c.AI.Provider)+" is a model server and needs a model: set ai.model (or LOCI_AI_MODEL)", ""))
	}
	for i, p := range c.Chat.AutoApprove {
		if !ValidApprovePattern(p) {
			probs = append(probs, c.problem(fmt.Sprintf("chat.auto_approve[%d]", i), quote(p)+": use alias.tool, alias.* or *", ""))
		}
	}
	for _, alias := range slices.Sorted(maps.Keys(c.Chat.Servers)) {
		s, k := c.Chat.Servers[alias], "chat.servers."+alias
		if err := ValidAlias(alias); err != nil {
			probs = append(probs, c.problem(k, err.Error(), ""))
			continue
		}
		switch {
		case s.URL == "" && len(s.Command) == 0:
			probs = append(probs, c.problem(k, "needs url (an MCP server over HTTP) or command (one over stdio)", ""))
		case s.URL != "" && len(s.Command) > 0:
			probs = append(probs, c.problem(k, "has both url and command: give one", ""))
		case len(s.Command) == 0 && len(s.Args) > 0:
			probs = append(probs, c.problem(k+".args", "args without a command", ""))
		}
		if s.URL != "" {
			if u := expandVars(s.URL, c.getenv); !httpURL(u) {
				probs = append(probs, c.problem(k+".url", quote(redactURL(u))+" is not an http(s) URL (after ${VAR} expansion)", ""))
			}
		}
		if s.Token != "" && s.TokenEnv != "" {
			probs = append(probs, c.problem(k+".token_env", "token and token_env are exclusive: give one", ""))
		}
	}
	return probs
}

var aliasRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`) })

// ValidAlias checks an MCP server alias of loci chat: letters, digits, _
// and -, at most 32, starting with a letter or digit (it prefixes every
// tool name the model sees).
func ValidAlias(a string) error {
	if !aliasRE().MatchString(a) {
		return fmt.Errorf("alias %q: use 1-32 letters, digits, _ or - (starting with a letter or digit)", a)
	}
	return nil
}

// ValidApprovePattern checks an entry of chat.auto_approve: alias.tool,
// alias.* or *.
func ValidApprovePattern(p string) bool {
	if p == "*" {
		return true
	}
	i := strings.Index(p, ".")
	return i > 0 && i < len(p)-1 && ValidAlias(p[:i]) == nil
}
