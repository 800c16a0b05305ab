package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/llm"
)

// fake is an OpenAI-compatible server on 127.0.0.1 answering the n-th
// request (0-based) with handlers[n] (the last one repeats), recording
// every request.
type fake struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

func newFake(t *testing.T, handlers ...http.HandlerFunc) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(b, &body)
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, recorded{r.URL.Path, r.Header.Clone(), body})
		f.mu.Unlock()
		handlers[min(n, len(handlers)-1)](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// sse answers with the events, each flushed.
func sse(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

// raw answers with a status, a content type and a body.
func raw(status int, ctype, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func data(v string) string { return "data: " + v + "\n\n" }

func delta(d string) string {
	return data(`{"choices":[{"index":0,"delta":` + d + `}]}`)
}

var (
	finish = data(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	done   = data("[DONE]")
)

// client returns a client of f that never sleeps between retries and
// records the waits.
func client(f *fake, waits *[]time.Duration) *llm.Client {
	return &llm.Client{BaseURL: f.URL + "/v1", Retry: llm.Retry{Sleep: func(ctx context.Context, d time.Duration) error {
		if waits != nil {
			*waits = append(*waits, d)
		}
		return ctx.Err()
	}}}
}

func chat(t *testing.T, c *llm.Client, d llm.Deltas) (*llm.ChatResponse, error) {
	t.Helper()
	return c.Chat(context.Background(), llm.ChatRequest{Model: "m", Messages: []llm.Message{{Role: "user", Content: "hi"}}, Stream: true}, d)
}

func TestToolCallAssembly(t *testing.T) {
	call := func(id, name, args string) llm.ToolCall {
		return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}
	}
	cases := []struct {
		name   string
		events []string
		want   []llm.ToolCall
	}{
		{
			name: "OpenAI: id and name first, then arguments by index, interleaved",
			events: []string{
				delta(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"x__one","arguments":""}}]}`),
				delta(`{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"x__two","arguments":""}}]}`),
				delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}`),
				delta(`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}`),
				delta(`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`),
			},
			want: []llm.ToolCall{call("a", "x__one", `{"q":1}`), call("b", "x__two", `{}`)},
		},
		{
			name: "Ollama: parallel calls whole, all index 0, distinct ids",
			events: []string{
				delta(`{"tool_calls":[{"id":"call_1","index":0,"type":"function","function":{"name":"loci__search_notes","arguments":"{\"query\":\"a\"}"}}]}`),
				delta(`{"tool_calls":[{"id":"call_2","index":0,"type":"function","function":{"name":"loci__search_notes","arguments":"{\"query\":\"b\"}"}}]}`),
			},
			want: []llm.ToolCall{call("call_1", "loci__search_notes", `{"query":"a"}`), call("call_2", "loci__search_notes", `{"query":"b"}`)},
		},
		{
			name: "Ollama: several calls in one delta, all index 0",
			events: []string{
				delta(`{"tool_calls":[{"id":"c1","index":0,"function":{"name":"f","arguments":"{}"}},{"id":"c2","index":0,"function":{"name":"f","arguments":"{\"n\":2}"}}]}`),
			},
			want: []llm.ToolCall{call("c1", "f", `{}`), call("c2", "f", `{"n":2}`)},
		},
		{
			name: "name and id repeated in every delta",
			events: []string{
				delta(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"loci__search_notes","arguments":"{\"q\""}}]}`),
				delta(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"loci__search_notes","arguments":":1}"}}]}`),
			},
			want: []llm.ToolCall{call("a", "loci__search_notes", `{"q":1}`)},
		},
		{
			name: "no index: a delta without id continues the last call",
			events: []string{
				delta(`{"tool_calls":[{"id":"x1","function":{"name":"a__b","arguments":"{\"q\":"}}]}`),
				delta(`{"tool_calls":[{"function":{"arguments":"1}"}}]}`),
				delta(`{"tool_calls":[{"id":"x2","function":{"name":"a__c","arguments":"{}"}}]}`),
			},
			want: []llm.ToolCall{call("x1", "a__b", `{"q":1}`), call("x2", "a__c", `{}`)},
		},
		{
			name: "the id arrives after the first delta; missing ids are made up",
			events: []string{
				delta(`{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{"}}]}`),
				delta(`{"tool_calls":[{"index":0,"id":"late","function":{"arguments":"}"}}]}`),
				delta(`{"tool_calls":[{"index":1,"function":{"name":"g","arguments":"{}"}}]}`),
			},
			want: []llm.ToolCall{call("late", "f", `{}`), call("call_2", "g", `{}`)},
		},
		{
			name: "arguments sent as an object",
			events: []string{
				delta(`{"tool_calls":[{"index":0,"id":"o","function":{"name":"f","arguments":{"q":"x"}}}]}`),
			},
			want: []llm.ToolCall{call("o", "f", `{"q":"x"}`)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, sse(append(c.events, data(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`), done)...))
			resp, err := chat(t, client(f, nil), llm.Deltas{})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(resp.ToolCalls) != fmt.Sprint(c.want) {
				t.Errorf("calls\n got %+v\nwant %+v", resp.ToolCalls, c.want)
			}
			if resp.FinishReason != "tool_calls" {
				t.Errorf("finish %q", resp.FinishReason)
			}
		})
	}
	// A whole (non-streamed) message: each entry is its own call, ids or not.
	f := newFake(t, raw(200, "application/json", `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
		`{"type":"function","function":{"name":"f","arguments":"{}"}},{"type":"function","function":{"name":"f","arguments":"{\"n\":2}"}}]},"finish_reason":"tool_calls"}]}`))
	resp, err := client(f, nil).Chat(context.Background(), llm.ChatRequest{Model: "m"}, llm.Deltas{})
	if err != nil || fmt.Sprint(resp.ToolCalls) != fmt.Sprint([]llm.ToolCall{call("call_1", "f", `{}`), call("call_2", "f", `{"n":2}`)}) {
		t.Errorf("whole message: %+v %v", resp, err)
	}
}

func TestStreamErrorEvents(t *testing.T) {
	const msg = "the request exceeds the available context size"
	for name, ev := range map[string]string{
		"llama.cpp error line":      `error: {"code":500,"message":"` + msg + `","type":"exceed_context_size_error"}` + "\n\n",
		"data with an error object": data(`{"error":{"code":500,"message":"` + msg + `","type":"exceed_context_size_error"}}`),
		"data with an error string": data(`{"error":"` + msg + `"}`),
		"event: error":              "event: error\ndata: {\"message\":\"" + msg + "\"}\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, sse(delta(`{"content":"par"}`), ev))
			resp, err := chat(t, client(f, nil), llm.Deltas{})
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.Message != msg || ae.Status != 0 {
				t.Fatalf("err = %#v", err)
			}
			if resp == nil || resp.Content != "par" {
				t.Errorf("partial answer %+v", resp)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("%d requests", n)
			}
		})
	}
	// An error event before any answer is final too: the server said no.
	f := newFake(t, sse("error: {\"code\":400,\"message\":\"bad grammar\"}\n\n"))
	if _, err := chat(t, client(f, nil), llm.Deltas{}); err == nil || !strings.Contains(err.Error(), "bad grammar") || len(f.requests()) != 1 {
		t.Errorf("err %v after %d requests", err, len(f.requests()))
	}
	// So is an error object in a 200 JSON answer.
	f = newFake(t, raw(200, "application/json", `{"error":{"message":"model not loaded","type":"invalid_request_error"}}`))
	var ae *llm.APIError
	if _, err := chat(t, client(f, nil), llm.Deltas{}); !errors.As(err, &ae) || ae.Message != "model not loaded" || ae.Type != "invalid_request_error" {
		t.Errorf("err %v", err)
	}
}

func TestHTTPErrors(t *testing.T) {
	for _, c := range []struct {
		body, ctype, want string
	}{
		{`{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}`, "application/json", "Incorrect API key"},
		{`{"error":"model \"x\" not found, try pulling it first"}`, "application/json", `model "x" not found`},
		{`{"detail":"Not Found"}`, "application/json", "Not Found"},
		{"upstream connect error", "text/plain", "upstream connect error"},
		{"", "text/plain", "Unauthorized"},
	} {
		f := newFake(t, raw(401, c.ctype, c.body))
		_, err := chat(t, client(f, nil), llm.Deltas{})
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.Status != 401 || !strings.Contains(ae.Message, c.want) || !strings.Contains(err.Error(), "HTTP 401") {
			t.Errorf("%s: %v", c.body, err)
		}
		if len(f.requests()) != 1 {
			t.Errorf("%s: a 4xx was retried", c.body)
		}
	}
}

func TestThinkingIsReasoning(t *testing.T) {
	const answer = `{"answer":"ok"}`
	cases := map[string]struct{ content, reasoning string }{
		"<think>\nDraft {\"answer\": \"?\"}\n</think>\n\n" + answer: {answer, "\nDraft {\"answer\": \"?\"}\n"},
		"  <think>a</think>" + answer:                               {answer, "a"},
		"<think>cut off while thinking":                             {"", "cut off while thinking"},
		"plain " + answer:                                           {"plain " + answer, ""},
		"<thinking> is not the tag":                                 {"<thinking> is not the tag", ""},
		"opened in the prompt</think>\n" + answer:                   {answer, "opened in the prompt"},
		"x < y": {"x < y", ""},
	}
	for content, want := range cases {
		// Streamed one byte a delta (tags split every way), and whole.
		var events []string
		for _, b := range []byte(content) {
			s, _ := json.Marshal(string([]byte{b}))
			events = append(events, delta(`{"content":`+string(s)+`}`))
		}
		body, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": content}, "finish_reason": "stop"}}})
		f := newFake(t, sse(append(events, finish, done)...), raw(200, "application/json", string(body)))
		for _, stream := range []bool{true, false} {
			var text, reasoning strings.Builder
			resp, err := client(f, nil).Chat(context.Background(), llm.ChatRequest{Model: "m", Stream: stream},
				llm.Deltas{Text: func(s string) { text.WriteString(s) }, Reasoning: func(s string) { reasoning.WriteString(s) }})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != want.content || resp.Reasoning != want.reasoning {
				t.Errorf("%q (stream %v): content %q reasoning %q", content, stream, resp.Content, resp.Reasoning)
			}
			if !strings.Contains(content, "</think>") || strings.Contains(content, "<think>") {
				if text.String() != resp.Content || reasoning.String() != resp.Reasoning {
					t.Errorf("%q (stream %v): streamed text %q reasoning %q", content, stream, text.String(), reasoning.String())
				}
			}
		}
	}
	// reasoning_content and reasoning are reasoning, never content.
	f := newFake(t, sse(delta(`{"reasoning_content":"think {"}`), delta(`{"reasoning":"more}"}`), delta(`{"content":"{}"}`), finish, done))
	resp, err := chat(t, client(f, nil), llm.Deltas{})
	if err != nil || resp.Content != "{}" || resp.Reasoning != "think {more}" {
		t.Errorf("%+v %v", resp, err)
	}
}

func TestStripThinking(t *testing.T) {
	for in, want := range map[string]string{
		"<think>a {b}</think>\n{\"x\":1}":           `{"x":1}`,
		"<think>a</think> one <think>b</think> two": "one  two",
		"prompt-opened</think>{}":                   "{}",
		"<think>never closed {}":                    "",
		" untouched ":                               " untouched ",
	} {
		if got := llm.StripThinking(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

// TestJSONAnswerToStream: a server that ignores "stream": true answers one
// JSON completion, whatever it calls it; the answer reaches the deltas.
func TestJSONAnswerToStream(t *testing.T) {
	body := `{"choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	for _, ctype := range []string{"application/json", "text/event-stream", ""} {
		f := newFake(t, raw(200, ctype, "\n"+body))
		var text strings.Builder
		resp, err := chat(t, client(f, nil), llm.Deltas{Text: func(s string) { text.WriteString(s) }})
		if err != nil || resp.Content != "whole" || text.String() != "whole" || resp.Streamed || resp.Usage == nil || resp.Usage.CompletionTokens != 1 || resp.FinishReason != "stop" {
			t.Errorf("%q: %+v %v", ctype, resp, err)
		}
	}
}

func TestSSEVariants(t *testing.T) {
	for name, body := range map[string]string{
		"CRLF, comments, no blank lines": ": keep-alive\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n" +
			"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\r\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\r\ndata: [DONE]\r\n",
		"data without a space, id and retry fields": "id: 1\nretry: 10\ndata:{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata:{\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata:[DONE]\n\n",
		"one event over two data lines":             "data: {\"choices\":[{\"delta\":\ndata: {\"content\":\"ab\"}}]}\n\ndata: [DONE]\n\n",
		"finish_reason without [DONE]":              delta(`{"content":"ab"}`) + finish,
		"usage chunk without choices":               delta(`{"content":"ab"}`) + finish + data(`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`) + done,
	} {
		f := newFake(t, raw(200, "text/event-stream", body))
		resp, err := chat(t, client(f, nil), llm.Deltas{})
		if err != nil || resp.Content != "ab" || !resp.Streamed {
			t.Errorf("%s: %+v %v", name, resp, err)
		}
	}
	// Cut short: the partial answer and ErrIncomplete, not retried once started.
	f := newFake(t, raw(200, "text/event-stream", delta(`{"content":"par"}`)))
	resp, err := chat(t, client(f, nil), llm.Deltas{})
	if !errors.Is(err, llm.ErrIncomplete) || resp == nil || resp.Content != "par" || len(f.requests()) != 1 {
		t.Errorf("cut short: %+v %v", resp, err)
	}
	// An unreadable event is an error, not silently skipped.
	f = newFake(t, raw(200, "text/event-stream", data(`{"choices":`)+"\n"+done))
	if _, err := chat(t, client(f, nil), llm.Deltas{}); !errors.Is(err, llm.ErrBadAnswer) {
		t.Errorf("bad event: %v", err)
	}
}

func TestRetry(t *testing.T) {
	ok := sse(delta(`{"content":"ok"}`), finish, done)
	t.Run("429 and 503 honour Retry-After", func(t *testing.T) {
		now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		f := newFake(t,
			raw(429, "application/json", `{"error":{"message":"slow down"}}`, "Retry-After", "7"),
			raw(503, "application/json", `{"error":{"message":"loading"}}`, "Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)),
			raw(429, "application/json", `{}`, "Retry-After-Ms", "1500"),
			ok)
		var waits []time.Duration
		c := client(f, &waits)
		c.Retry.Max = 3
		c.Retry.Now = func() time.Time { return now }
		var retries []int
		c.OnRetry = func(n int, err error, d time.Duration) { retries = append(retries, n) }
		requests := 0
		c.OnRequest = func() { requests++ }
		resp, err := chat(t, c, llm.Deltas{})
		if err != nil || resp.Content != "ok" {
			t.Fatal(resp, err)
		}
		// 7s as told, 90s capped at a minute, 1.5s from Retry-After-Ms.
		if fmt.Sprint(waits) != "[7s 1m0s 1.5s]" || fmt.Sprint(retries) != "[1 2 3]" || requests != 4 {
			t.Errorf("waits %v retries %v requests %d", waits, retries, requests)
		}
	})
	t.Run("exponential backoff with jitter", func(t *testing.T) {
		f := newFake(t, raw(500, "text/plain", "boom"))
		var waits []time.Duration
		c := client(f, &waits)
		c.Retry = llm.Retry{Max: 4, Base: time.Second, Cap: 3 * time.Second, Sleep: c.Retry.Sleep}
		_, err := chat(t, c, llm.Deltas{})
		var ex *llm.RetriesExhausted
		var ae *llm.APIError
		if !errors.As(err, &ex) || ex.Attempts != 5 || !errors.As(err, &ae) || ae.Status != 500 || len(f.requests()) != 5 {
			t.Fatalf("err %v after %d requests", err, len(f.requests()))
		}
		for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
			if waits[i] < want/2 || waits[i] > want {
				t.Errorf("wait %d = %v, want within [%v, %v]", i, waits[i], want/2, want)
			}
		}
	})
	t.Run("default: two retries; negative: none", func(t *testing.T) {
		f := newFake(t, raw(502, "text/plain", "bad gateway"))
		c := client(f, nil)
		chat(t, c, llm.Deltas{})
		if n := len(f.requests()); n != 3 {
			t.Errorf("%d requests", n)
		}
		f = newFake(t, raw(502, "text/plain", "bad gateway"))
		c = client(f, nil)
		c.Retry.Max = -1
		_, err := chat(t, c, llm.Deltas{})
		var ex *llm.RetriesExhausted
		if n := len(f.requests()); n != 1 || !errors.As(err, &ex) || ex.Attempts != 1 {
			t.Errorf("%d requests: %v", n, err)
		}
	})
	t.Run("a broken connection before the answer is retried, after it is not", func(t *testing.T) {
		abort := func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }
		f := newFake(t, abort, ok)
		if resp, err := chat(t, client(f, nil), llm.Deltas{}); err != nil || resp.Content != "ok" {
			t.Errorf("%+v %v", resp, err)
		}
		midway := func(w http.ResponseWriter, r *http.Request) {
			sse(delta(`{"content":"par"}`))(w, r)
			panic(http.ErrAbortHandler)
		}
		f = newFake(t, midway, ok)
		resp, err := chat(t, client(f, nil), llm.Deltas{})
		if err == nil || resp == nil || resp.Content != "par" || len(f.requests()) != 1 {
			t.Errorf("%+v %v after %d requests", resp, err, len(f.requests()))
		}
	})
	t.Run("a role-only first chunk has not started the answer", func(t *testing.T) {
		f := newFake(t, sse(delta(`{"role":"assistant","content":""}`)), ok)
		if resp, err := chat(t, client(f, nil), llm.Deltas{}); err != nil || resp.Content != "ok" || len(f.requests()) != 2 {
			t.Errorf("%+v %v", resp, err)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		f := newFake(t, raw(503, "text/plain", "busy"))
		ctx, cancel := context.WithCancel(context.Background())
		c := client(f, nil)
		c.Retry.Sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
		_, err := c.Chat(ctx, llm.ChatRequest{Model: "m", Stream: true}, llm.Deltas{})
		if !errors.Is(err, context.Canceled) || len(f.requests()) != 1 {
			t.Errorf("%v", err)
		}
	})
}

// hang answers headers (when first is set, also one delta) and then
// nothing until the client goes away.
func hang(first bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		if first {
			io.WriteString(w, delta(`{"content":"par"}`))
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

func TestTimeouts(t *testing.T) {
	t.Run("first byte", func(t *testing.T) {
		f := newFake(t, hang(false))
		c := client(f, nil)
		c.Timeouts = llm.Timeouts{FirstByte: 20 * time.Millisecond, Idle: time.Hour}
		c.Retry.Max = 1
		_, err := chat(t, c, llm.Deltas{})
		var te *llm.TimeoutError
		if !errors.As(err, &te) || te.Phase != llm.PhaseFirstByte || !llm.IsTimeout(err) || len(f.requests()) != 2 {
			t.Errorf("%v after %d requests", err, len(f.requests()))
		}
	})
	t.Run("idle between chunks", func(t *testing.T) {
		f := newFake(t, hang(true))
		c := client(f, nil)
		c.Timeouts = llm.Timeouts{FirstByte: time.Hour, Idle: 20 * time.Millisecond}
		resp, err := chat(t, c, llm.Deltas{})
		var te *llm.TimeoutError
		if !errors.As(err, &te) || te.Phase != llm.PhaseIdle || resp == nil || resp.Content != "par" || len(f.requests()) != 1 {
			t.Errorf("%+v %v", resp, err)
		}
		if !strings.Contains(err.Error(), "stalled") {
			t.Errorf("message %q", err)
		}
	})
	t.Run("cancellation mid-stream", func(t *testing.T) {
		f := newFake(t, hang(true))
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := client(f, nil).Chat(ctx, llm.ChatRequest{Model: "m", Stream: true}, llm.Deltas{Text: func(string) { cancel() }})
		if !errors.Is(err, context.Canceled) || resp == nil || resp.Content != "par" {
			t.Errorf("%+v %v", resp, err)
		}
	})
}

func TestRequest(t *testing.T) {
	f := newFake(t, sse(delta(`{"content":"ok"}`), finish, done))
	temp, seed := 0.0, 7
	c := &llm.Client{BaseURL: f.URL + "/v1/", APIKey: "sk-test", Headers: map[string]string{"X-Title": "loci"}}
	_, err := c.Chat(context.Background(), llm.ChatRequest{Model: "m", Messages: []llm.Message{{Role: "user", Content: "hi"}},
		Temperature: &temp, Seed: &seed, MaxTokens: 9, Stream: true, IncludeUsage: true,
		ResponseFormat: map[string]any{"type": "json_object"}, Tools: []map[string]any{{"type": "function"}}}, llm.Deltas{})
	if err != nil {
		t.Fatal(err)
	}
	r := f.requests()[0]
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" || r.Header.Get("X-Title") != "loci" ||
		r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %v", r.Path, r.Header)
	}
	b, _ := json.Marshal(r.Body)
	want := `{"max_tokens":9,"messages":[{"content":"hi","role":"user"}],"model":"m","response_format":{"type":"json_object"},"seed":7,"stream":true,"stream_options":{"include_usage":true},"temperature":0,"tools":[{"type":"function"}]}`
	if string(b) != want {
		t.Errorf("body\n got %s\nwant %s", b, want)
	}
	// Optional fields stay out; no key, no header.
	f = newFake(t, raw(200, "application/json", `{"choices":[{"message":{"content":"x"}}]}`))
	if _, err := client(f, nil).Chat(context.Background(), llm.ChatRequest{Model: "m"}, llm.Deltas{}); err != nil {
		t.Fatal(err)
	}
	r = f.requests()[0]
	if b, _ := json.Marshal(r.Body); string(b) != `{"messages":null,"model":"m"}` || r.Header.Get("Authorization") != "" {
		t.Errorf("minimal body %s, auth %q", b, r.Header.Get("Authorization"))
	}
}

func TestJoinURL(t *testing.T) {
	for _, c := range []struct{ base, endpoint, want string }{
		{"http://h/v1", "chat/completions", "http://h/v1/chat/completions"},
		{"http://h/v1/", "chat/completions", "http://h/v1/chat/completions"},
		{"http://h/api/chat/completions", "chat/completions", "http://h/api/chat/completions"},
		{"http://h:8080", "embeddings", "http://h:8080/embeddings"},
		{"https://h/openai/v1?api-version=2024-06-01", "embeddings", "https://h/openai/v1/embeddings?api-version=2024-06-01"},
		{" http://h/v1/embeddings/ ", "embeddings", "http://h/v1/embeddings"},
	} {
		if got, err := llm.JoinURL(c.base, c.endpoint); err != nil || got != c.want {
			t.Errorf("%q + %q = %q %v, want %q", c.base, c.endpoint, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "localhost:11434/v1", "ftp://h/v1", "http://", "http://h/%zz"} {
		if _, err := llm.JoinURL(bad, "embeddings"); !errors.Is(err, llm.ErrBadURL) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	_, err := (&llm.Client{BaseURL: "localhost:11434"}).Chat(context.Background(), llm.ChatRequest{}, llm.Deltas{})
	if !errors.Is(err, llm.ErrBadURL) {
		t.Errorf("client with a bad URL: %v", err)
	}
}

func TestEmbed(t *testing.T) {
	f := newFake(t, raw(200, "application/json", `{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}],"usage":{"prompt_tokens":4,"total_tokens":4}}`),
		raw(200, "application/json", `{"error":{"message":"input too long"}}`),
		raw(200, "application/json", `not json`))
	c := &llm.Client{BaseURL: f.URL + "/v1", APIKey: "k"}
	resp, err := c.Embed(context.Background(), llm.EmbedRequest{Model: "e", Input: []string{"a", "b"}, Dimensions: 2})
	if err != nil || len(resp.Data) != 2 || resp.Data[0].Index != 1 || resp.Usage.TotalTokens != 4 {
		t.Fatalf("%+v %v", resp, err)
	}
	r := f.requests()[0]
	if b, _ := json.Marshal(r.Body); r.Path != "/v1/embeddings" || string(b) != `{"dimensions":2,"input":["a","b"],"model":"e"}` || r.Header.Get("Authorization") != "Bearer k" {
		t.Errorf("request %s %s %v", r.Path, b, r.Header)
	}
	var ae *llm.APIError
	if _, err := c.Embed(context.Background(), llm.EmbedRequest{Model: "e", Input: []string{"a"}}); !errors.As(err, &ae) || ae.Message != "input too long" {
		t.Errorf("error object: %v", err)
	}
	if _, err := c.Embed(context.Background(), llm.EmbedRequest{Model: "e", Input: []string{"a"}}); !errors.Is(err, llm.ErrBadAnswer) {
		t.Errorf("not JSON: %v", err)
	}
}

func TestEstimateTokens(t *testing.T) {
	for s, want := range map[string]int{
		"":                  0,
		"abcd":              1,
		"abcde":             2,
		"spaced repetition": 5,
		"知识管理":              4,
		"間隔反復は、記憶を助ける。": 13,
		"간격 반복":                     5, // 4 syllables + a space
		"Привет":                    3,
		"naïve café":                3, // 8 ASCII + 2 accented: ceil(2 + 1)
		"Zettelkasten 知识 notes 123": 8, // 22 ASCII + 2 Han: ceil(5.5 + 2)
	} {
		if got := llm.EstimateTokens(s); got != want {
			t.Errorf("%q: %d, want %d", s, got, want)
		}
	}
}
