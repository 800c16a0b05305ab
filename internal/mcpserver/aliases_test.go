package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSeedAliasesOverMCP: a Logseq-skill call (page_name, include_blocks)
// answers over MCP although tools/list advertises loci's names only, and an
// alias disagreeing with its field is a tool error naming both.
func TestSeedAliasesOverMCP(t *testing.T) {
	_, url := smallServer(t, map[string]string{
		"graph/logseq/config.edn": "{:meta/version 1}\n",
		"graph/pages/Loci.md":     "- Top\n\t- Child\n",
	})
	cs := httpClient(t, url)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "get_page" {
			b, _ := json.Marshal(tool.InputSchema)
			if strings.Contains(string(b), "page_name") {
				t.Errorf("get_page advertises page_name: %s", b)
			}
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_page", Arguments: map[string]any{"page_name": "loci", "include_blocks": false}})
	if err != nil || res.IsError {
		t.Fatalf("get_page by page_name: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"path":"graph/pages/Loci.md"`) || strings.Contains(string(b), "Child") {
		t.Errorf("get_page by page_name with include_blocks false: %s", b)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_page", Arguments: map[string]any{"page_name": "loci", "name": "other"}})
	if err != nil || !res.IsError {
		t.Fatalf("conflicting alias: %v %+v", err, res)
	}
	b, _ = json.Marshal(res.Content)
	if !strings.Contains(string(b), "validation_failed") || !strings.Contains(string(b), "page_name (an alias of name) and name disagree") {
		t.Errorf("conflicting alias over MCP: %s", b)
	}
}
