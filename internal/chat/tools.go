package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool naming. People see "<alias>.<tool>"; model APIs only accept names
// matching ^[a-zA-Z0-9_-]{1,64}$, so the model sees "<alias>__<tool>" with
// every other character replaced by "_", cut to 64 characters with a hash
// suffix when too long, and a numeric suffix on the rare collision. The
// mapping back to the session and the tool's real name is a table, never a
// parse of the wire name.
const (
	wireSep     = "__"
	maxWireName = 64
)

var wireNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`) })

// ValidWireName reports whether a name is acceptable to model APIs.
func ValidWireName(s string) bool { return wireNameRE().MatchString(s) }

// WireName is the model-facing name of alias.tool (before collision
// suffixes).
func WireName(alias, tool string) string {
	var b strings.Builder
	for _, r := range alias + wireSep + tool {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > maxWireName {
		h := fnv.New32a()
		h.Write([]byte(alias + "." + tool))
		s = fmt.Sprintf("%s_%08x", s[:maxWireName-9], h.Sum32())
	}
	return s
}

// ToolEntry is one tool offered to the model.
type ToolEntry struct {
	Wire    string // name the model uses
	Display string // alias.tool, as people (and auto_approve) write it
	Alias   string
	Tool    *mcp.Tool
	session *Session
}

// ReadOnly is the server's readOnlyHint.
func (e *ToolEntry) ReadOnly() bool {
	return e.Tool.Annotations != nil && e.Tool.Annotations.ReadOnlyHint
}

// Destructive is true when the server explicitly marks the tool
// destructiveHint (and not read-only). Unannotated tools are treated as
// possibly writing, but only explicitly destructive ones always ask.
func (e *ToolEntry) Destructive() bool {
	a := e.Tool.Annotations
	return a != nil && !a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint
}

// Toolset is a snapshot of every connected session's tools: what one model
// request offers, and how its calls are dispatched.
type Toolset struct {
	Entries []*ToolEntry
	byWire  map[string]*ToolEntry
	byName  map[string]*ToolEntry
}

// Lookup finds a tool by wire name or by alias.tool.
func (t *Toolset) Lookup(name string) *ToolEntry {
	if e := t.byWire[name]; e != nil {
		return e
	}
	return t.byName[name]
}

// Tools refreshes stale tool lists and snapshots the tools of every
// connected session, in connection order. A session whose refresh fails
// keeps its previous list.
func (m *Manager) Tools(ctx context.Context) *Toolset {
	ts := &Toolset{byWire: map[string]*ToolEntry{}, byName: map[string]*ToolEntry{}}
	for _, s := range m.Sessions() {
		if !s.Connected() {
			continue
		}
		s.refresh(ctx, false)
		s.mu.Lock()
		tools := s.tools
		s.mu.Unlock()
		for _, tool := range tools {
			e := &ToolEntry{Display: s.Spec.Alias + "." + tool.Name, Alias: s.Spec.Alias, Tool: tool, session: s}
			wire := WireName(s.Spec.Alias, tool.Name)
			for i := 2; ts.byWire[wire] != nil; i++ {
				suf := fmt.Sprintf("_%d", i)
				w := WireName(s.Spec.Alias, tool.Name)
				if len(w)+len(suf) > maxWireName {
					w = w[:maxWireName-len(suf)]
				}
				wire = w + suf
			}
			e.Wire = wire
			ts.Entries = append(ts.Entries, e)
			ts.byWire[wire] = e
			ts.byName[e.Display] = e
		}
	}
	return ts
}

// FunctionTool is one entry of the OpenAI "tools" array.
type FunctionTool struct {
	Type     string       `json:"type"` // "function"
	Function FunctionSpec `json:"function"`
}

// FunctionSpec describes a function to the model.
type FunctionSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters"`
}

// OpenAI renders the toolset as the request's tools array.
func (t *Toolset) OpenAI() []FunctionTool {
	out := make([]FunctionTool, 0, len(t.Entries))
	for _, e := range t.Entries {
		desc := e.Tool.Description
		if desc == "" {
			desc = e.Tool.Title
		}
		out = append(out, FunctionTool{Type: "function", Function: FunctionSpec{
			Name: e.Wire, Description: desc, Parameters: parametersSchema(e.Tool.InputSchema),
		}})
	}
	return out
}

// parametersSchema adapts an MCP input schema for model APIs: an object
// schema with properties, without the $schema/$id keywords some providers
// reject. Everything else passes through.
func parametersSchema(in any) any {
	var m map[string]any
	switch v := in.(type) {
	case map[string]any:
		m = v
	case nil:
	default:
		b, err := json.Marshal(v)
		if err == nil {
			json.Unmarshal(b, &m)
		}
	}
	out := map[string]any{}
	for k, v := range m {
		if k == "$schema" || k == "$id" {
			continue
		}
		out[k] = v
	}
	if _, ok := out["type"]; !ok {
		out["type"] = "object"
	}
	if _, ok := out["properties"]; !ok {
		out["properties"] = map[string]any{}
	}
	return out
}

func jsonRaw(b []byte) json.RawMessage {
	if len(strings.TrimSpace(string(b))) == 0 {
		return json.RawMessage("{}")
	}
	return json.RawMessage(b)
}
