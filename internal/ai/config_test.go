package ai

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/config"
)

// TestMaxRetriesFromConfig: ai.max_retries: 0 means no retries (it used
// to become the default 2), unset is the default, and a count is that
// many — through FromConfig and New, which both apply the defaults.
func TestMaxRetriesFromConfig(t *testing.T) {
	for _, c := range []struct {
		line  string
		calls int
	}{{"", 3}, {"  max_retries: 0\n", 1}, {"  max_retries: 1\n", 2}} {
		fake := aitest.New()
		t.Cleanup(fake.Close)
		fake.Handler = func(aitest.Request) aitest.Reply { return aitest.Reply{Status: 503, Content: "overloaded"} }
		dir := t.TempDir()
		text := "ai:\n  provider: openai-compatible\n  base_url: " + fake.BaseURL() + "\n  model: m\n" + c.line
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{config.EnvConfigDir: dir}
		cfg, err := config.Resolve("", config.Options{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		rt := New(FromConfig(cfg), filepath.Join(t.TempDir(), ".loci"))
		t.Cleanup(rt.Close)
		rt.Chat.(*OpenAI).Retry.Sleep = func(context.Context, time.Duration) error { return nil }
		if _, err := rt.Complete(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}}); err == nil || fake.Calls() != c.calls {
			t.Errorf("%q: %d calls (%v), want %d", c.line, fake.Calls(), err, c.calls)
		}
	}
}
