package chat_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/chat"
	"github.com/loci-dev/loci/internal/chat/chattest"
)

func TestModelStreamsTextAndToolCalls(t *testing.T) {
	fm := chattest.Script(t,
		chattest.Text("Hello, wörld — 知识 is knowledge.", 3),
		chattest.ToolCalls("Let me look.",
			chattest.Call{ID: "call_a", Name: "loci__search_notes", Args: `{"query":"spaced repetition","limit":3}`},
			chattest.Call{ID: "call_b", Name: "test__echo", Args: `{"text":"a longer argument string split over many chunks"}`}),
	)
	m := &chat.Model{BaseURL: fm.BaseURL, Name: "fake-1", APIKey: "sk-test"}
	var streamed strings.Builder
	resp, err := m.Stream(context.Background(), chat.ModelRequest{Messages: []chat.Message{{Role: "user", Content: "hi"}}},
		chat.Deltas{Text: func(s string) { streamed.WriteString(s) }})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Hello, wörld — 知识 is knowledge." || streamed.String() != resp.Content || len(resp.ToolCalls) != 0 || resp.FinishReason != "stop" {
		t.Fatalf("text answer: %+v (streamed %q)", resp, streamed.String())
	}
	req := fm.Requests()[0]
	if req.Model != "fake-1" || !req.Stream || req.Header.Get("Authorization") != "Bearer sk-test" || len(req.Tools) != 0 {
		t.Errorf("request: %+v %v", req, req.Header)
	}

	resp, err = m.Stream(context.Background(), chat.ModelRequest{
		Messages: []chat.Message{{Role: "user", Content: "hi"}},
		Tools:    []chat.FunctionTool{{Type: "function", Function: chat.FunctionSpec{Name: "loci__search_notes", Parameters: map[string]any{"type": "object"}}}},
	}, chat.Deltas{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Let me look." || resp.FinishReason != "tool_calls" || len(resp.ToolCalls) != 2 {
		t.Fatalf("tool answer: %+v", resp)
	}
	a, b := resp.ToolCalls[0], resp.ToolCalls[1]
	if a.ID != "call_a" || a.Function.Name != "loci__search_notes" || a.Function.Arguments != `{"query":"spaced repetition","limit":3}` {
		t.Errorf("call a: %+v", a)
	}
	if b.ID != "call_b" || b.Function.Name != "test__echo" || b.Function.Arguments != `{"text":"a longer argument string split over many chunks"}` {
		t.Errorf("call b: %+v", b)
	}
	if got := fm.Requests()[1].ToolNames(); len(got) != 1 || got[0] != "loci__search_notes" {
		t.Errorf("tools sent: %v", got)
	}
}

func TestModelStreamEdgeCases(t *testing.T) {
	cases := []struct {
		name, body, ctype string
		status            int
		check             func(*testing.T, *chat.ModelResponse, error)
	}{
		{
			name: "no index, ids only, no blank lines, CRLF",
			body: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"x1\",\"function\":{\"name\":\"a__b\",\"arguments\":\"{\\\"q\\\":\"}}]}}]}\r\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"1}\"}}]}}]}\r\n" +
				": keep-alive comment\r\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"x2\",\"function\":{\"name\":\"a__c\",\"arguments\":\"{}\"}}]}}]}\r\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n",
			ctype: "text/event-stream",
			check: func(t *testing.T, r *chat.ModelResponse, err error) {
				if err != nil || len(r.ToolCalls) != 2 || r.ToolCalls[0].Function.Arguments != `{"q":1}` || r.ToolCalls[1].ID != "x2" {
					t.Errorf("%+v %v", r, err)
				}
			},
		},
		{
			name:  "missing ids are generated",
			body:  "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"a__b\",\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n",
			ctype: "text/event-stream",
			check: func(t *testing.T, r *chat.ModelResponse, err error) {
				if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].ID == "" {
					t.Errorf("%+v %v", r, err)
				}
			},
		},
		{
			name:  "non-streamed JSON answer",
			body:  `{"choices":[{"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`,
			ctype: "application/json",
			check: func(t *testing.T, r *chat.ModelResponse, err error) {
				if err != nil || r.Content != "whole" {
					t.Errorf("%+v %v", r, err)
				}
			},
		},
		{
			name: "error event", body: "data: {\"error\":{\"message\":\"context too long\"}}\n\n", ctype: "text/event-stream",
			check: func(t *testing.T, r *chat.ModelResponse, err error) {
				if err == nil || !strings.Contains(err.Error(), "context too long") {
					t.Errorf("%v", err)
				}
			},
		},
		{
			name: "HTTP 401 with an error object", status: 401, body: `{"error":{"message":"Incorrect API key"}}`, ctype: "application/json",
			check: func(t *testing.T, r *chat.ModelResponse, err error) {
				var ae *chat.APIError
				if !errors.As(err, &ae) || ae.Status != 401 || !strings.Contains(err.Error(), "Incorrect API key") || !strings.Contains(err.Error(), chat.EnvAPIKey) {
					t.Errorf("%v", err)
				}
			},
		},
		{
			name: "stream cut short", body: "data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\n", ctype: "text/event-stream",
			check: func(t *testing.T, r *chat.ModelResponse, err error) {
				if err == nil || r.Content != "par" {
					t.Errorf("%+v %v", r, err)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.ctype)
				if c.status != 0 {
					w.WriteHeader(c.status)
				}
				w.Write([]byte(c.body))
			}))
			defer srv.Close()
			m := &chat.Model{BaseURL: srv.URL + "/v1/chat/completions", Name: "m"}
			r, err := m.Stream(context.Background(), chat.ModelRequest{Messages: []chat.Message{{Role: "user", Content: "x"}}}, chat.Deltas{})
			c.check(t, r, err)
		})
	}
}

func TestModelEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://h/v1":                   "http://h/v1/chat/completions",
		"http://h/v1/":                  "http://h/v1/chat/completions",
		"http://h/api/chat/completions": "http://h/api/chat/completions",
	} {
		if got := (&chat.Model{BaseURL: in}).Endpoint(); got != want {
			t.Errorf("%s → %s, want %s", in, got, want)
		}
	}
}

// TestNewModelKeepsHeadersAsResolved: the headers of a ModelConfig are
// already expanded (config.Endpoint): a value that holds "${...}" after
// expansion (a token that happens to contain it) is sent as it is, not
// expanded a second time.
func TestNewModelKeepsHeadersAsResolved(t *testing.T) {
	t.Setenv("B", "second-expansion")
	cfg := chat.ModelConfig{BaseURL: "http://127.0.0.1:1/v1", Name: "m", Headers: map[string]string{"X-Token": "a${B}c"}}
	m := chat.NewModel(cfg)
	if m.Headers["X-Token"] != "a${B}c" {
		t.Errorf("header expanded twice: %q", m.Headers["X-Token"])
	}
	cfg.Headers["X-Token"] = "changed"
	if m.Headers["X-Token"] != "a${B}c" {
		t.Error("the model shares the config's map")
	}
}
