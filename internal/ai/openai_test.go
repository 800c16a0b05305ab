package ai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/errs"
)

func fakeProvider(t *testing.T, edit func(*Settings)) (*OpenAI, *aitest.Server) {
	t.Helper()
	fake := aitest.New()
	t.Cleanup(fake.Close)
	s := Settings{Provider: "llamacpp", BaseURL: fake.BaseURL(), Model: "m", Timeout: 5 * time.Second}
	if edit != nil {
		edit(&s)
	}
	s.Defaults()
	return NewOpenAI(&s), fake
}

func ask(stream bool) (Request, *strings.Builder) {
	var sb strings.Builder
	req := Request{Messages: []Message{{Role: "user", Content: "hi"}}, Schema: map[string]any{"type": "object"}}
	if stream {
		req.OnDelta = func(s string) { sb.WriteString(s) }
	}
	return req, &sb
}

// TestCompleteStreamIgnored: a server that ignores "stream": true and
// answers one JSON completion gives its answer (it used to give an empty
// text, which cost a repair call).
func TestCompleteStreamIgnored(t *testing.T) {
	p, fake := fakeProvider(t, nil)
	fake.Script(aitest.Reply{Content: `{"answer":"42"}`, IgnoreStream: true})
	req, streamed := ask(true)
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"answer":"42"}` || streamed.String() != resp.Text || fake.Calls() != 1 {
		t.Errorf("text %q streamed %q calls %d", resp.Text, streamed.String(), fake.Calls())
	}
	if resp.Usage.OutputTokens == 0 || resp.Usage.InputTokens == 0 {
		t.Errorf("usage %+v", resp.Usage)
	}
}

// TestCompleteStreamErrorEvents: llama.cpp reports a failure inside a
// stream as an "error:" line or as a data event holding an error object;
// both are ai_provider_error with the server's message (they used to be
// skipped, leaving a cut or empty answer).
func TestCompleteStreamErrorEvents(t *testing.T) {
	for name, tail := range map[string]string{
		"error line": "error: {\"code\":500,\"message\":\"the request exceeds the available context size\",\"type\":\"exceed_context_size_error\"}\n\n",
		"data error": "data: {\"error\":{\"code\":500,\"message\":\"the request exceeds the available context size\",\"type\":\"exceed_context_size_error\"}}\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			p, fake := fakeProvider(t, nil)
			fake.Script(aitest.Reply{Content: `{"ans`, Tail: tail})
			req, _ := ask(true)
			_, err := p.Complete(context.Background(), req)
			e := errs.As(err)
			if e == nil || e.Code != errs.CodeAIProvider || !strings.Contains(e.Message, "exceeds the available context size") {
				t.Fatalf("err = %v", err)
			}
			if fake.Calls() != 1 {
				t.Errorf("%d calls", fake.Calls())
			}
		})
	}
}

// TestCompleteStripsThinking: reasoning models (Qwen3, DeepSeek-R1) write
// <think>…</think> before the answer, often with braces in it; the text
// the operations parse is the answer alone, streamed or not, and
// reasoning_content never joins it.
func TestCompleteStripsThinking(t *testing.T) {
	const think = "<think>\nThe schema wants {\"answer\": string}. Draft: {\"answer\": \"?\"}\n</think>\n\n"
	for _, stream := range []bool{false, true} {
		p, fake := fakeProvider(t, nil)
		fake.Script(aitest.Reply{Content: think + `{"answer":"ok"}`}, aitest.Reply{Content: `{"answer":"ok"}`, Reasoning: "Let me think {about it}."})
		for i := range 2 {
			req, streamed := ask(stream)
			resp, err := p.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != `{"answer":"ok"}` || (stream && streamed.String() != resp.Text) {
				t.Errorf("stream=%v reply %d: text %q streamed %q", stream, i, resp.Text, streamed.String())
			}
			if raw, err := ExtractJSON(resp.Text); err != nil || string(raw) != `{"answer":"ok"}` {
				t.Errorf("stream=%v reply %d: %s %v", stream, i, raw, err)
			}
		}
	}
}

func TestExtractJSONAfterThinking(t *testing.T) {
	for in, want := range map[string]string{
		"<think>maybe {\"a\": 0}?</think>\n{\"a\": 1}":          `{"a": 1}`,
		"reasoning {x} without an opening tag</think>{\"a\":2}": `{"a":2}`,
		"<think>{\"a\": 0}</think>```json\n{\"a\": 3}\n```":     `{"a": 3}`,
	} {
		raw, err := ExtractJSON(in)
		if err != nil || string(raw) != want {
			t.Errorf("%q: %s %v", in, raw, err)
		}
	}
}

// TestEstimateTokensCJK: Chinese, Japanese and Korean text costs about a
// token a character, not one per four bytes.
func TestEstimateTokensCJK(t *testing.T) {
	for s, atLeast := range map[string]int{
		"知识管理是一种组织信息的方法":     14,
		"間隔反復は記憶を定着させる学習法です": 18,
		"간격 반복은 기억을 돕는다":     11,
	} {
		if n := EstimateTokens(s); n < atLeast || n > 2*atLeast {
			t.Errorf("%q: %d tokens, want about %d", s, n, atLeast)
		}
	}
	if n := EstimateTokens("spaced repetition helps memory"); n != 8 {
		t.Errorf("English: %d, want 8 (4 bytes a token)", n)
	}
}

// TestCompleteRetries: 429 and 5xx are retried S.MaxRetries times, after
// the Retry-After the server asks for, else with backoff.
func TestCompleteRetries(t *testing.T) {
	p, fake := fakeProvider(t, nil)
	var waits []time.Duration
	p.Retry.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	fake.Script(aitest.Reply{Status: 429, Content: "slow down", Header: map[string]string{"Retry-After": "3"}},
		aitest.Reply{Status: 503, Content: "loading"}, aitest.Reply{Content: `{}`})
	req, _ := ask(true)
	resp, err := p.Complete(context.Background(), req)
	if err != nil || resp.Text != "{}" || fake.Calls() != 3 {
		t.Fatalf("%+v %v after %d calls", resp, err, fake.Calls())
	}
	if len(waits) != 2 || waits[0] != 3*time.Second || waits[1] < 250*time.Millisecond || waits[1] > 500*time.Millisecond {
		t.Errorf("waits %v", waits)
	}
}

func TestCompleteErrors(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(*Settings)
		replies []aitest.Reply
		calls   int
		details map[string]any
		msg     string
	}{
		{name: "4xx is final", replies: []aitest.Reply{{Status: 401, Content: "bad key"}}, calls: 1,
			details: map[string]any{"upstream_status": 401, "upstream_message": "bad key"}, msg: "HTTP 401: bad key"},
		{name: "5xx until retries run out", replies: []aitest.Reply{{Status: 503, Content: "overloaded"}, {Status: 503, Content: "overloaded"}, {Status: 503, Content: "overloaded"}},
			calls: 3, details: map[string]any{"upstream_status": 503, "attempts": 3}, msg: "overloaded"},
		{name: "no retries", edit: func(s *Settings) { s.MaxRetries = -1 }, replies: []aitest.Reply{{Status: 500, Content: "boom"}}, calls: 1,
			details: map[string]any{"upstream_status": 500}, msg: "boom"},
		{name: "a stream cut short", replies: []aitest.Reply{{Content: `{"a":`, Tail: "\n"}}, calls: 1, msg: "ended before the answer was complete"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, fake := fakeProvider(t, c.edit)
			p.Retry.Sleep = func(context.Context, time.Duration) error { return nil }
			fake.Script(c.replies...)
			req, _ := ask(true)
			_, err := p.Complete(context.Background(), req)
			e := errs.As(err)
			if e.Code != errs.CodeAIProvider || !strings.Contains(e.Message, c.msg) || e.Details["provider"] != "llamacpp" || fake.Calls() != c.calls {
				t.Fatalf("%+v after %d calls", e, fake.Calls())
			}
			for k, v := range c.details {
				if e.Details[k] != v {
					t.Errorf("details[%s] = %v, want %v (%v)", k, e.Details[k], v, e.Details)
				}
			}
		})
	}
	p, _ := fakeProvider(t, func(s *Settings) { s.BaseURL = "localhost:11434/v1" })
	if _, err := p.Complete(context.Background(), Request{}); errs.Code(err) != errs.CodeAIProvider || !strings.Contains(err.Error(), "bad base URL") {
		t.Errorf("bad URL: %v", err)
	}
}

// TestProviderHeaders: a provider's headers (providers.<name>.headers)
// reach the model server with every request.
func TestProviderHeaders(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	s := Settings{Provider: "openai-compatible", BaseURL: srv.URL + "/v1", Model: "m", Timeout: 5 * time.Second,
		Headers: map[string]string{"X-Tenant": "t1", "Authorization": "Bearer from-header"}}
	s.Defaults()
	req, _ := ask(false)
	if _, err := NewOpenAI(&s).Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got.Get("X-Tenant") != "t1" || got.Get("Authorization") != "Bearer from-header" {
		t.Errorf("headers sent: %v", got)
	}
}
