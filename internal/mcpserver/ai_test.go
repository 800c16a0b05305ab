package mcpserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/mcpserver"
	"github.com/loci-dev/loci/internal/ops/aiops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestAIToolsOverMCP: the ai toolset is advertised once a provider is
// configured, and ai_ask with a progress token streams progress
// notifications before the full structured result.
func TestAIToolsOverMCP(t *testing.T) {
	root := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, root, map[string]string{"A.md": "# A\n\nThe answer is 42.\n"})
	ctx := context.Background()
	env := indexedEnv(t, root)
	t.Cleanup(env.Close)
	fake := aitest.New()
	t.Cleanup(fake.Close)
	etag := regexp.MustCompile(`etag="([0-9a-f]+)"`)
	fake.Handler = func(req aitest.Request) aitest.Reply {
		e := etag.FindStringSubmatch(req.Last())[1]
		return aitest.Reply{ChunkDelay: time.Millisecond, Content: aitest.JSON(map[string]any{"supported": true, "answer": "42.",
			"citations": []any{map[string]any{"path": "A.md", "etag": e, "line": 3}}})}
	}
	env.AI = ai.New(ai.Settings{Provider: "openai-compatible", BaseURL: fake.BaseURL(), Model: "fake"}, filepath.Join(t.TempDir(), ".loci"))
	srv := mcpserver.New(catalog.All(), env, mcpserver.Options{})
	t.Cleanup(func() { srv.Close() })
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var progress []string
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Message)
			mu.Unlock()
		}})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
	}
	for _, n := range []string{"ai_ask", "ai_summarize", "ai_status", "ai_toc", "ai_relate", "ai_tag", "ai_metadata", "ai_extract"} {
		if !names[n] {
			t.Errorf("%s not advertised with AI configured", n)
		}
	}
	params := &mcp.CallToolParams{Name: "ai_ask", Arguments: map[string]any{"question": "What is the answer?", "paths": []string{"A.md"}}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	var out aiops.AIAskOut
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	if out.Answer != "42." || len(out.Citations) != 1 {
		t.Errorf("result %s", b)
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	kinds := map[string]int{}
	for _, p := range progress {
		kinds[p]++
	}
	if kinds["ai.partial"] == 0 || kinds["ai.citation"] != 1 {
		t.Errorf("progress %v", kinds)
	}
}
