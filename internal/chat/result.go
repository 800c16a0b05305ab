package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResultText renders a tools/call result as the text a model reads: the
// text contents in order, a placeholder for binary ones, the text of
// embedded resources, and the structured content when there is no content.
func ResultText(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			s := "[resource " + c.URI
			if c.Name != "" {
				s += " (" + c.Name + ")"
			}
			parts = append(parts, s+"]")
		case *mcp.EmbeddedResource:
			switch {
			case c.Resource == nil:
			case c.Resource.Text != "":
				parts = append(parts, c.Resource.Text)
			default:
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes, not shown]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if len(parts) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// Truncate cuts s to max characters (runes) and says so, so that the
// model knows the result is partial and can ask for less.
func Truncate(s string, max int) (string, bool) {
	if max <= 0 {
		return s, false
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, false
	}
	cut := 0
	for i := range s {
		if cut == max {
			s2 := s[:i]
			return s2 + fmt.Sprintf("\n[… truncated by loci chat: %d of %d characters shown; ask for a narrower result (a filter, a limit, a heading or a line range)]", max, n), true
		}
		cut++
	}
	return s, false
}

// toolErrorText is what the model reads when a call fails at the protocol
// level: a JSON-RPC error, or a transport failure.
func toolErrorText(display string, err error) string {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return fmt.Sprintf("error: %s failed with MCP error %d: %s", display, rpc.Code, rpc.Message)
	}
	return fmt.Sprintf("error: %s failed: %v", display, err)
}
