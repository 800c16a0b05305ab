package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/ai/aitest"
)

func TestAICommands(t *testing.T) {
	v := demoCopy(t)
	out, errOut, code := run(t, "ai", "status", "--vault", v)
	if code != 0 || !strings.Contains(out, "AI is off") {
		t.Fatalf("status: %d %q %q", code, out, errOut)
	}
	_, errOut, code = run(t, "ai", "ask", "What is Atlas?", "--vault", v)
	if code != 1 || !strings.Contains(errOut, "ai_unavailable") {
		t.Errorf("ask with AI off: %d %q", code, errOut)
	}
	fake := aitest.New()
	defer fake.Close()
	etag := regexp.MustCompile(`=== NOTE path="([^"]+)" etag="([0-9a-f]+)"`)
	fake.Handler = func(req aitest.Request) aitest.Reply {
		m := etag.FindStringSubmatch(req.Last())
		return aitest.Reply{Content: aitest.JSON(map[string]any{"supported": true, "answer": "From the vault.",
			"citations": []any{map[string]any{"path": m[1], "etag": m[2]}}})}
	}
	t.Setenv("LOCI_AI_PROVIDER", "openai-compatible")
	t.Setenv("LOCI_AI_BASE_URL", fake.BaseURL())
	t.Setenv("LOCI_AI_MODEL", "fake")
	out, errOut, code = run(t, "ai", "ask", "What is Project Atlas?", "--vault", v, "--stream")
	if code != 0 {
		t.Fatalf("ask --stream: %d %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last struct {
		Type string `json:"type"`
		Data struct {
			Answer    string `json:"answer"`
			Citations []any  `json:"citations"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "ai.complete" || last.Data.Answer != "From the vault." || len(last.Data.Citations) != 1 {
		t.Errorf("last line %q (%v)", lines[len(lines)-1], err)
	}
	if !strings.Contains(out, `"type":"ai.partial"`) {
		t.Errorf("no partial events: %q", out)
	}
	out, _, code = run(t, "ai", "toc", "Projects/Project Atlas.md", "--vault", v, "--format", "json")
	if code != 0 || !strings.Contains(out, `"mode": "note"`) {
		t.Errorf("toc: %d %q", code, out)
	}
}
