package chat_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/chat"
	"github.com/loci-dev/loci/internal/chat/chattest"
	"github.com/loci-dev/loci/internal/llm"
)

// What real OpenAI-compatible servers send that OpenAI does not.

func stream(t *testing.T, fm *chattest.Server, d chat.Deltas) (*chat.ModelResponse, error) {
	t.Helper()
	m := &chat.Model{BaseURL: fm.BaseURL, Name: "fake"}
	return m.Stream(context.Background(), chat.ModelRequest{Messages: []chat.Message{{Role: "user", Content: "hi"}}}, d)
}

// TestModelOllamaParallelToolCalls: Ollama sends each of several parallel
// calls whole, every one with index 0 and its own id. They are separate
// calls (keyed by id), not one call named loci__search_notesloci__search_notes.
func TestModelOllamaParallelToolCalls(t *testing.T) {
	fm := chattest.Script(t, chattest.OllamaToolCalls(
		chattest.Call{ID: "call_1", Name: "loci__search_notes", Args: `{"query":"a"}`},
		chattest.Call{ID: "call_2", Name: "loci__search_notes", Args: `{"query":"b"}`},
		chattest.Call{ID: "call_3", Name: "loci__read_note", Args: `{"path":"x.md"}`},
	))
	resp, err := stream(t, fm, chat.Deltas{})
	if err != nil {
		t.Fatal(err)
	}
	want := []chat.ToolCall{
		{ID: "call_1", Type: "function", Function: chat.FunctionCall{Name: "loci__search_notes", Arguments: `{"query":"a"}`}},
		{ID: "call_2", Type: "function", Function: chat.FunctionCall{Name: "loci__search_notes", Arguments: `{"query":"b"}`}},
		{ID: "call_3", Type: "function", Function: chat.FunctionCall{Name: "loci__read_note", Arguments: `{"path":"x.md"}`}},
	}
	if len(resp.ToolCalls) != len(want) {
		t.Fatalf("%d calls, want %d: %+v", len(resp.ToolCalls), len(want), resp.ToolCalls)
	}
	for i := range want {
		if resp.ToolCalls[i] != want[i] {
			t.Errorf("call %d = %+v, want %+v", i, resp.ToolCalls[i], want[i])
		}
	}
}

// TestModelToolCallNameRepeatedInEveryDelta: a server that repeats the
// function name (and id) in every delta of one call gives one call whose
// name is not doubled.
func TestModelToolCallNameRepeatedInEveryDelta(t *testing.T) {
	fm := chattest.Script(t, chattest.RepeatedNameToolCall(
		chattest.Call{ID: "call_x", Name: "loci__search_notes", Args: `{"query":"spaced repetition","limit":3}`}, 5))
	resp, err := stream(t, fm, chat.Deltas{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 {
		t.Fatalf("%d calls: %+v", len(resp.ToolCalls), resp.ToolCalls)
	}
	c := resp.ToolCalls[0]
	if c.ID != "call_x" || c.Function.Name != "loci__search_notes" || c.Function.Arguments != `{"query":"spaced repetition","limit":3}` {
		t.Errorf("call = %+v", c)
	}
}

// TestModelLlamaCppErrorLine: llama.cpp's server reports a failure inside a
// stream as an "error:" line (not a "data:" one); the user sees its
// message, not "stream ended before the answer was complete".
func TestModelLlamaCppErrorLine(t *testing.T) {
	fm := chattest.Script(t, chattest.Reply{Raw: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n" +
		"error: {\"code\":500,\"message\":\"the request exceeds the available context size\",\"type\":\"exceed_context_size_error\"}\n\n"})
	resp, err := stream(t, fm, chat.Deltas{})
	if err == nil || !strings.Contains(err.Error(), "exceeds the available context size") {
		t.Fatalf("err = %v", err)
	}
	if resp == nil || resp.Content != "par" {
		t.Errorf("partial answer: %+v", resp)
	}
	if n := len(fm.Requests()); n != 1 {
		t.Errorf("%d requests: a stream that had started is never retried", n)
	}
}

// TestModelRetriesRateLimit: chat retries 429 and 5xx (honouring
// Retry-After) before the answer starts, as the AI operations do.
func TestModelRetriesRateLimit(t *testing.T) {
	fm := chattest.Script(t,
		chattest.Reply{Status: 429, Body: `{"error":{"message":"slow down"}}`, Header: http.Header{"Retry-After": {"7"}}},
		chattest.Reply{Status: 503, Body: `{"error":{"message":"loading model"}}`},
		chattest.Text("Hello.", 3),
	)
	var waits []time.Duration
	m := &chat.Model{BaseURL: fm.BaseURL, Name: "fake", Retry: llm.Retry{Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}}
	resp, err := m.Stream(context.Background(), chat.ModelRequest{Messages: []chat.Message{{Role: "user", Content: "hi"}}}, chat.Deltas{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Hello." || len(fm.Requests()) != 3 {
		t.Errorf("answer %+v after %d requests", resp, len(fm.Requests()))
	}
	// 7s as the server asked; then the backoff of a second retry (1s with jitter).
	if len(waits) != 2 || waits[0] != 7*time.Second || waits[1] < 500*time.Millisecond || waits[1] > time.Second {
		t.Errorf("waits %v", waits)
	}
	// Out of retries: the server's message, and how often it was tried.
	fm = chattest.Script(t)
	m.BaseURL = fm.BaseURL
	_, err = m.Stream(context.Background(), chat.ModelRequest{Messages: []chat.Message{{Role: "user", Content: "hi"}}}, chat.Deltas{})
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.Status != 500 || !strings.Contains(err.Error(), "script exhausted") || !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("%v", err)
	}
}

// TestModelJSONAnswerLabelledAsStream: a server (or proxy) that ignores
// "stream": true answers one JSON completion, whatever Content-Type it
// gives it.
func TestModelJSONAnswerLabelledAsStream(t *testing.T) {
	fm := chattest.Script(t, chattest.Reply{ContentType: "text/event-stream",
		Raw: `{"choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`})
	resp, err := stream(t, fm, chat.Deltas{})
	if err != nil || resp.Content != "whole" {
		t.Errorf("%+v %v", resp, err)
	}
}

// TestModelThinkBlockIsReasoning: a reasoning model that writes its
// thinking into the content as <think>…</think> has it shown (and kept) as
// reasoning, not as the answer.
func TestModelThinkBlockIsReasoning(t *testing.T) {
	fm := chattest.Script(t, chattest.Text("<think>The user greets me.</think>\n\nHello!", 4))
	var text, reasoning strings.Builder
	resp, err := stream(t, fm, chat.Deltas{Text: func(s string) { text.WriteString(s) }, Reasoning: func(s string) { reasoning.WriteString(s) }})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Hello!" || resp.Reasoning != "The user greets me." || text.String() != "Hello!" || reasoning.String() != "The user greets me." {
		t.Errorf("content %q reasoning %q; streamed text %q reasoning %q", resp.Content, resp.Reasoning, text.String(), reasoning.String())
	}
}
