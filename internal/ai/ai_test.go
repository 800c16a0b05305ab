package ai

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/errs"
)

func TestPathAllowed(t *testing.T) {
	s := Settings{AllowGlobs: []string{"Projects/**", "Private/**"}, DenyGlobs: []string{"Private/**", "Secret"}}
	for p, want := range map[string]bool{"Projects/A.md": true, "Private/A.md": false, "Notes/A.md": false, "Projects/Secret/x.md": true, "Secret/x.md": false} {
		if got := s.PathAllowed(p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
	if !(&Settings{}).PathAllowed("any.md") {
		t.Error("no globs must allow everything")
	}
}

func TestCost(t *testing.T) {
	s := Settings{Prices: map[string]Price{"gpt-4o": {InputPerMTok: 2.5, OutputPerMTok: 10}, "gpt-4o-mini*": {InputPerMTok: 0.15, OutputPerMTok: 0.6}}}
	if c := s.Cost("gpt-4o", 1_000_000, 100_000); c != 3.5 {
		t.Errorf("exact: %v", c)
	}
	if c := s.Cost("gpt-4o-mini-2024", 1_000_000, 0); c != 0.15 {
		t.Errorf("prefix: %v", c)
	}
	if c := s.Cost("llama", 1000, 1000); c != 0 {
		t.Errorf("unknown: %v", c)
	}
}

func TestExtractJSON(t *testing.T) {
	for in, ok := range map[string]bool{`{"a":1}`: true, "```json\n{\"a\":1}\n```": true, `Here: {"a": {"b": 2}} done`: true, `{"a":`: false, `no json`: false} {
		if _, err := ExtractJSON(in); (err == nil) != ok {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestDefaultsAndOff(t *testing.T) {
	rt := New(Settings{}, t.TempDir())
	if rt.Enabled() || rt.HasChat() {
		t.Error("AI on without a provider")
	}
	if _, err := rt.Complete(context.Background(), Request{}); errs.Code(err) != errs.CodeAIUnavailable {
		t.Errorf("complete with AI off: %v", err)
	}
	s := rt.Settings
	if s.MaxInputTokens != 64000 || s.MaxOutputTokens != 2048 || s.Timeout != 30*time.Second || s.Temperature != 0 || s.CacheTTL != 24*time.Hour {
		t.Errorf("defaults %+v", s)
	}
}

func TestCacheTTLAndLedger(t *testing.T) {
	fake := aitest.New()
	defer fake.Close()
	fake.Handler = func(aitest.Request) aitest.Reply {
		return aitest.Reply{Content: "{}", PromptTokens: 1000, CompletionTokens: 500}
	}
	now := time.Date(2026, 5, 1, 23, 0, 0, 0, time.UTC)
	rt := New(Settings{Provider: "openai", BaseURL: fake.BaseURL(), Model: "m", DailyCostUSD: 0.01,
		Prices: map[string]Price{"m": {InputPerMTok: 10, OutputPerMTok: 10}}}, filepath.Join(t.TempDir(), ".loci"))
	rt.Now = func() time.Time { return now }
	defer rt.Close()
	ctx := context.Background()
	rt.CachePut(ctx, "k", "op", map[string]int{"x": 1})
	var v map[string]int
	if !rt.CacheGet(ctx, "k", &v) || v["x"] != 1 {
		t.Error("cache miss")
	}
	now = now.Add(25 * time.Hour)
	if rt.CacheGet(ctx, "k", &v) {
		t.Error("expired entry served")
	}
	resp, err := rt.Complete(ctx, Request{Messages: []Message{{Role: "user", Content: "hi"}}})
	if err != nil || resp.Usage.CostUSD != 0.015 {
		t.Fatalf("%+v %v", resp, err)
	}
	_, err = rt.Complete(ctx, Request{Messages: []Message{{Role: "user", Content: "hi"}}})
	e := errs.As(err)
	if e.Code != errs.CodeAIQuota || e.Details["reset_at"] != "2026-05-04T00:00:00Z" {
		t.Errorf("quota: %+v", e)
	}
	now = now.Add(24 * time.Hour) // a new UTC day
	if _, err := rt.Complete(ctx, Request{Messages: []Message{{Role: "user", Content: "hi"}}}); err != nil {
		t.Errorf("next day: %v", err)
	}
}

// TestNoServerNoCall: a runtime built in code (not through the config,
// which refuses it at load) with a provider type that has no default
// server and no base_url says so, instead of "unsupported protocol scheme".
func TestNoServerNoCall(t *testing.T) {
	for _, p := range []string{"llamacpp", "vllm", "openai-compatible"} {
		rt := New(Settings{Provider: p, Model: "m"}, t.TempDir())
		_, err := rt.Complete(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}})
		e := errs.As(err)
		if e.Code != errs.CodeAIUnavailable || !strings.Contains(e.Message, "no base_url") || strings.Contains(e.Error(), "protocol scheme") {
			t.Errorf("%s: %v", p, err)
		}
		rt.Close()
	}
}
