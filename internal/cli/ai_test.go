package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/server"
	"github.com/loci-dev/loci/internal/testutil"
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

// TestAIProviderWithoutServer: `provider: llamacpp` or `vllm` names no
// server of its own (unlike openai and ollama). Without a base_url loci
// refuses to start — ai status, serve, mcp — with a config_invalid that
// says what to set, instead of reporting AI enabled and failing every call
// with `unsupported protocol scheme ""`.
func TestAIProviderWithoutServer(t *testing.T) {
	t.Setenv("LOCI_CONFIG", "")
	t.Setenv(server.EnvToken, "")
	for _, provider := range []string{"llamacpp", "vllm"} {
		fromVault := filepath.Join(t.TempDir(), "v")
		testutil.WriteFiles(t, fromVault, map[string]string{"n.md": "# N\n", ".loci/config.yaml": "ai:\n  provider: " + provider + "\n  model: m\n"})
		fromEnv := filepath.Join(t.TempDir(), "e")
		testutil.WriteFiles(t, fromEnv, map[string]string{"n.md": "# N\n"})
		for _, c := range []struct {
			vault string
			env   string
		}{{fromVault, ""}, {fromEnv, provider}} {
			t.Setenv("LOCI_AI_PROVIDER", c.env)
			t.Setenv("LOCI_AI_MODEL", "m")
			for _, args := range [][]string{
				{"ai", "status", "--vault", c.vault},
				{"ai", "ask", "q", "--vault", c.vault},
				{"serve", c.vault, "--addr", "127.0.0.1:0"},
				{"mcp", c.vault},
			} {
				// A cancelled context: were the config accepted, serve and
				// mcp would stop at once instead of serving.
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				var stdout, stderr bytes.Buffer
				code := Main(ctx, args, &stdout, &stderr)
				errOut := stderr.String()
				if code != 2 || !strings.Contains(errOut, "[config_invalid]") ||
					!strings.Contains(errOut, `provider "`+provider+`" (`+provider+`) has no base_url: set ai.base_url`) {
					t.Errorf("%s from %q: %v: exit %d, stderr %q", provider, c.env, args, code, errOut)
				}
			}
		}
	}
	// The real `loci mcp` process (what an MCP client starts) exits before
	// serving, so no client ever sees ai_status report AI enabled.
	v := filepath.Join(t.TempDir(), "p")
	testutil.WriteFiles(t, v, map[string]string{"n.md": "# N\n", ".loci/config.yaml": "ai: {provider: vllm, model: m}\n"})
	cmd := exec.Command(testutil.LociBinary(t), "mcp", v)
	cmd.Env = append(os.Environ(), "LOCI_CONFIG=", "LOCI_AI_PROVIDER=", "LOCI_AI_MODEL=")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "has no base_url") || strings.Contains(string(out), `"result"`) {
		t.Errorf("loci mcp: %v\n%s", err, out)
	}
}

// TestServeBannerWarnsUnpricedCeiling: loci serve says at start when a
// daily cost ceiling cannot hold because the model has no price (and does
// not for a model on loci's list).
func TestServeBannerWarnsUnpricedCeiling(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	t.Setenv("LOCI_CONFIG", "")
	v := filepath.Join(t.TempDir(), "P")
	testutil.WriteFiles(t, v, map[string]string{"n.md": "# N\n"})
	t.Setenv("LOCI_AI_PROVIDER", "openai-compatible")
	t.Setenv("LOCI_AI_BASE_URL", "https://llm.example.com/v1") // never called: nothing runs an AI operation
	t.Setenv("LOCI_AI_DAILY_COST_USD", "1")
	banner := func(model string) string {
		t.Setenv("LOCI_AI_MODEL", model)
		var stdout bytes.Buffer
		g := &globals{vault: ".", format: "text", stdout: &stdout, stderr: io.Discard}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := g.startServe(ctx, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 2, logLevel: "warn", noSync: true})
		if err != nil {
			t.Fatal(err)
		}
		s.printBanner(g, serveOptions{addr: "127.0.0.1:0"})
		done := make(chan error, 1)
		go func() { done <- s.run(ctx) }()
		cancel()
		<-done
		return stdout.String()
	}
	if b := banner("mystery-7b"); !strings.Contains(b, `note     P: ai.daily_cost_usd is $1.00, but loci has no price for model "mystery-7b"`) {
		t.Errorf("banner:\n%s", b)
	}
	if b := banner("gpt-4o-mini"); strings.Contains(b, "no price") {
		t.Errorf("banner for a listed model:\n%s", b)
	}
}
