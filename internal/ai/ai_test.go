package ai

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
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
	rt := New(Settings{Provider: "openai", BaseURL: fake.BaseURL(), Model: "m", DailyCostUSD: 0.01, MaxOutputTokens: 500,
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

// TestListPrices: hosted models are priced without a prices: table; your
// table wins; a server on this machine is free; an unknown remote model is
// unknown (and says so).
func TestListPrices(t *testing.T) {
	remote := Settings{BaseURL: "https://api.openai.com/v1"}
	for model, want := range map[string]float64{
		"gpt-4o-mini": 0.75, "gpt-4o": 12.5, "gpt-4.1-2025-04-14": 10, "gpt-4.1-mini": 2, "o4-mini": 5.5, "openai/gpt-4o-mini": 0.75,
	} {
		if c := remote.Cost(model, 1_000_000, 1_000_000); c != want {
			t.Errorf("%s: %v, want %v", model, c, want)
		}
		if _, src := remote.PriceOf(model); src != PriceList {
			t.Errorf("%s: source %q", model, src)
		}
	}
	if _, src := remote.PriceOf("llama3.1:8b"); src != PriceUnknown {
		t.Errorf("unknown remote model: %q", src)
	}
	mine := Settings{BaseURL: "https://api.openai.com/v1", Prices: map[string]Price{"gpt-4o-mini": {InputPerMTok: 1, OutputPerMTok: 1}}}
	if c := mine.Cost("gpt-4o-mini", 1_000_000, 0); c != 1 {
		t.Errorf("your table: %v", c)
	}
	for _, base := range []string{"http://localhost:11434/v1", "http://127.0.0.1:8080/v1", "http://[::1]:8000/v1"} {
		local := Settings{BaseURL: base}
		if p, src := local.PriceOf("gpt-4o"); src != PriceLocal || p != (Price{}) {
			t.Errorf("%s: %v %q", base, p, src)
		}
	}
}

// pricedRuntime is a runtime on the fake server where every call costs
// about $1.01: 1,000 input tokens and 10 output tokens at $1,000 per
// million each; the server reports what loci estimates.
func pricedRuntime(t *testing.T, ceiling float64, h func(aitest.Request) aitest.Reply) (*Runtime, *aitest.Server) {
	t.Helper()
	fake := aitest.New()
	t.Cleanup(fake.Close)
	fake.Handler = func(r aitest.Request) aitest.Reply {
		if h != nil {
			return h(r)
		}
		return aitest.Reply{Content: "{}", PromptTokens: 1000, CompletionTokens: 10}
	}
	rt := New(Settings{Provider: "openai-compatible", BaseURL: fake.BaseURL(), Model: "m", DailyCostUSD: ceiling, MaxOutputTokens: 10,
		Prices: map[string]Price{"m": {InputPerMTok: 1000, OutputPerMTok: 1000}}}, filepath.Join(t.TempDir(), ".loci"))
	t.Cleanup(rt.Close)
	return rt, fake
}

var kiloPrompt = Request{Messages: []Message{{Role: "user", Content: strings.Repeat("abcd", 1000)}}} // 1,000 tokens

// TestCeilingReservesBeforeTheCall: a call is refused when what it may
// cost would pass the ceiling, not only once the ceiling is passed (a
// $1.50 ceiling let two $1 calls through).
func TestCeilingReservesBeforeTheCall(t *testing.T) {
	rt, fake := pricedRuntime(t, 1.5, nil)
	now := time.Date(2026, 5, 1, 23, 0, 0, 0, time.UTC)
	rt.Now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := rt.Complete(ctx, kiloPrompt); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Complete(ctx, kiloPrompt)
	e := errs.As(err)
	if e == nil || e.Code != errs.CodeAIQuota || fake.Calls() != 1 {
		t.Fatalf("second call: %v (calls %d)", err, fake.Calls())
	}
	if e.Details["retry_after_seconds"] != 3600 || e.Details["reset_at"] != "2026-05-02T00:00:00Z" || e.Details["needed_usd"] != 1.01 {
		t.Errorf("details %v", e.Details)
	}
	if sp := rt.Today(ctx); sp.CostUSD != 1.01 || sp.ReservedUSD != 0 || sp.Calls != 1 {
		t.Errorf("ledger %+v", sp)
	}
	// A call that may cost more than the whole ceiling is refused without a
	// Retry-After: waiting for the reset would not let it through.
	big, _ := pricedRuntime(t, 0.5, nil)
	_, err = big.Complete(ctx, kiloPrompt)
	if e := errs.As(err); e == nil || e.Code != errs.CodeAIQuota || e.Details["retry_after_seconds"] != nil || !strings.Contains(e.Message, "more than the whole daily") {
		t.Errorf("over the whole ceiling: %v", err)
	}
}

// TestCeilingHoldsUnderParallelCalls: eight calls at once against a $2.50
// ceiling: two run, six are refused, and the day's spend stays under it.
// The fake answers no call until every caller has either reached it or
// been refused, so the calls really are in flight together.
func TestCeilingHoldsUnderParallelCalls(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	decided := 0
	release := make(chan struct{})
	decide := func() {
		mu.Lock()
		defer mu.Unlock()
		if decided++; decided == n {
			close(release)
		}
	}
	rt, fake := pricedRuntime(t, 2.5, func(aitest.Request) aitest.Reply {
		decide()
		<-release
		return aitest.Reply{Content: "{}", PromptTokens: 1000, CompletionTokens: 10}
	})
	ctx := context.Background()
	var wg sync.WaitGroup
	codes := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := rt.Complete(ctx, kiloPrompt)
			if codes[i] = errs.Code(err); err != nil {
				decide()
			}
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, c := range codes {
		switch c {
		case "":
			ok++
		case errs.CodeAIQuota:
			refused++
		default:
			t.Errorf("code %s", c)
		}
	}
	sp := rt.Today(ctx)
	if ok != 2 || refused != 6 || fake.Calls() != 2 || sp.CostUSD > 2.5 || sp.ReservedUSD != 0 {
		t.Errorf("ok %d refused %d calls %d ledger %+v", ok, refused, fake.Calls(), sp)
	}
}

// TestFailedCallsAreBooked: a call the provider may have billed is booked
// even when it fails: one cancelled (or cut) after its answer started at
// its input and the output received so far, and an attempt that timed out
// before the first byte (the server may have generated the whole answer)
// at what it reserved — also when a retry then succeeds.
func TestFailedCallsAreBooked(t *testing.T) {
	ctx := context.Background()
	// Cancelled mid-answer (an agent cancelling near the end).
	rt, _ := pricedRuntime(t, 100, func(aitest.Request) aitest.Reply {
		return aitest.Reply{Content: strings.Repeat("abcd", 10), Stall: true}
	})
	cctx, cancel := context.WithCancel(ctx)
	req := kiloPrompt
	req.OnDelta = func(string) { cancel() }
	if _, err := rt.Complete(cctx, req); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if sp := rt.Today(ctx); sp.Calls != 1 || sp.InputTokens != 1000 || sp.OutputTokens < 4 || sp.OutputTokens > 10 || sp.CostUSD < 1.004 || sp.ReservedUSD != 0 {
		t.Errorf("cancelled mid-answer: ledger %+v", sp)
	}
	// A stream cut short after it started.
	rt, _ = pricedRuntime(t, 100, func(aitest.Request) aitest.Reply {
		return aitest.Reply{Content: strings.Repeat("abcd", 4), Tail: "\n"}
	})
	req.OnDelta = func(string) {}
	if _, err := rt.Complete(ctx, req); errs.Code(err) != errs.CodeAIProvider {
		t.Fatalf("cut stream: %v", err)
	}
	if sp := rt.Today(ctx); sp.Calls != 1 || sp.InputTokens != 1000 || sp.OutputTokens != 4 || sp.CostUSD != 1.004 {
		t.Errorf("cut stream: ledger %+v", sp)
	}
	// Every attempt times out before the first byte: each is booked at
	// the reservation (1,000 input and the 10-token output limit).
	rt, fake := pricedRuntime(t, 100, func(aitest.Request) aitest.Reply { return aitest.Reply{Delay: time.Hour} })
	rt.Settings.Timeout, rt.Settings.MaxRetries = 20*time.Millisecond, 1
	rt.Chat.(*OpenAI).Retry.Sleep = func(context.Context, time.Duration) error { return nil }
	if _, err := rt.Complete(ctx, kiloPrompt); errs.Code(err) != errs.CodeAIProvider || fake.Calls() != 2 {
		t.Fatalf("timeouts: %v after %d calls", err, fake.Calls())
	}
	if sp := rt.Today(ctx); sp.Calls != 2 || sp.InputTokens != 2000 || sp.OutputTokens != 20 || sp.CostUSD != 2.02 || sp.ReservedUSD != 0 {
		t.Errorf("timeouts: ledger %+v", sp)
	}
	// A timed-out attempt, then an answer: both are booked.
	n := 0
	rt, _ = pricedRuntime(t, 100, func(aitest.Request) aitest.Reply {
		if n++; n == 1 {
			return aitest.Reply{Delay: time.Hour}
		}
		return aitest.Reply{Content: "{}", PromptTokens: 1000, CompletionTokens: 10}
	})
	rt.Settings.Timeout = 20 * time.Millisecond
	rt.Chat.(*OpenAI).Retry.Sleep = func(context.Context, time.Duration) error { return nil }
	resp, err := rt.Complete(ctx, kiloPrompt)
	if err != nil || resp.Usage.Calls != 2 || resp.Usage.CostUSD != 2.02 {
		t.Fatalf("retry after a timeout: %+v %v", resp, err)
	}
	if sp := rt.Today(ctx); sp.Calls != 2 || sp.CostUSD != 2.02 {
		t.Errorf("retry after a timeout: ledger %+v", sp)
	}
	// A refusal (4xx) was not generated: nothing is booked.
	rt, _ = pricedRuntime(t, 100, func(aitest.Request) aitest.Reply { return aitest.Reply{Status: 401, Content: "bad key"} })
	if _, err := rt.Complete(ctx, kiloPrompt); err == nil {
		t.Fatal("401 succeeded")
	}
	if sp := rt.Today(ctx); sp.Calls != 0 || sp.CostUSD != 0 {
		t.Errorf("refused call: ledger %+v", sp)
	}
}
