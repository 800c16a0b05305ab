// Package chattest provides a fake OpenAI-compatible chat-completions
// server for tests: scripted, streaming (one flushed SSE event per chunk),
// recording every request it receives.
package chattest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/loci-dev/loci/internal/chat"
)

// Request is a request as the fake server received it.
type Request struct {
	Model    string         `json:"model"`
	Stream   bool           `json:"stream"`
	Messages []chat.Message `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Header http.Header `json:"-"`
}

// ToolNames lists the tool names offered in the request.
func (r *Request) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// Last returns the last message of the request.
func (r *Request) Last() chat.Message {
	if len(r.Messages) == 0 {
		return chat.Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// ToolResults returns the tool messages after the last assistant message
// with tool calls, by tool_call_id.
func (r *Request) ToolResults() map[string]string {
	out := map[string]string{}
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "tool"; i-- {
		out[r.Messages[i].ToolCallID] = r.Messages[i].Content
	}
	return out
}

// Reply is one scripted answer: SSE data payloads (each sent as one
// flushed event, then "[DONE]"), an HTTP error, or a raw body.
type Reply struct {
	Chunks []string
	Status int    // non-zero: answer with this status and Body
	Body   string // for Status
	// Header is added to the answer (e.g. Retry-After).
	Header http.Header
	// Raw, when set, is the whole body, written as it is with ContentType
	// (default text/event-stream): what a server does that the helpers
	// below do not (llama.cpp's "error:" lines, a JSON answer to a
	// streamed request).
	Raw         string
	ContentType string
}

// Server is the fake endpoint.
type Server struct {
	*httptest.Server
	// BaseURL is what LOCI_CHAT_BASE_URL should be (…/v1).
	BaseURL string

	mu       sync.Mutex
	requests []*Request
	next     func(n int, req *Request) Reply
}

// New starts a fake model answering with respond(n, req) for the n-th
// request (0-based). It is closed when the test ends.
func New(t testing.TB, respond func(n int, req *Request) Reply) *Server {
	s := &Server{next: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.BaseURL = s.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Script starts a fake model that gives the replies in order, then fails
// with HTTP 500.
func Script(t testing.TB, replies ...Reply) *Server {
	return New(t, func(n int, _ *Request) Reply {
		if n < len(replies) {
			return replies[n]
		}
		return Reply{Status: 500, Body: `{"error":{"message":"fake model: script exhausted"}}`}
	})
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	b, _ := io.ReadAll(r.Body)
	req := &Request{Header: r.Header.Clone()}
	if err := json.Unmarshal(b, req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	rep := s.next(n, req)
	for k, vs := range rep.Header {
		w.Header()[k] = vs
	}
	if rep.Raw != "" {
		ct := rep.ContentType
		if ct == "" {
			ct = "text/event-stream"
		}
		w.Header().Set("Content-Type", ct)
		io.WriteString(w, rep.Raw)
		return
	}
	if rep.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		io.WriteString(w, rep.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	for _, c := range append(rep.Chunks, "[DONE]") {
		fmt.Fprintf(w, "data: %s\n\n", c)
		if fl != nil {
			fl.Flush()
		}
	}
}

// chunk builds one chat.completion.chunk payload.
func chunk(delta map[string]any, finish string) string {
	choice := map[string]any{"index": 0, "delta": delta}
	if finish != "" {
		choice["finish_reason"] = finish
	} else {
		choice["finish_reason"] = nil
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake",
		"choices": []any{choice},
	})
	return string(b)
}

// Text is a plain answer streamed in pieces of about n bytes.
func Text(text string, n int) Reply {
	chunks := []string{chunk(map[string]any{"role": "assistant", "content": ""}, "")}
	for _, p := range split(text, n) {
		chunks = append(chunks, chunk(map[string]any{"content": p}, ""))
	}
	chunks = append(chunks, chunk(map[string]any{}, "stop"))
	return Reply{Chunks: chunks}
}

// Call is one tool call for ToolCalls.
type Call struct {
	ID, Name, Args string
}

// ToolCalls streams the calls as real servers do: the first delta of each
// call carries its index, id and name; the arguments follow in pieces of
// about 7 bytes, the calls' pieces interleaved; then finish_reason
// "tool_calls". Text, if any, comes first.
func ToolCalls(text string, calls ...Call) Reply {
	chunks := []string{chunk(map[string]any{"role": "assistant", "content": nil}, "")}
	for _, p := range split(text, 8) {
		chunks = append(chunks, chunk(map[string]any{"content": p}, ""))
	}
	pieces := make([][]string, len(calls))
	for i, c := range calls {
		chunks = append(chunks, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, ""))
		pieces[i] = split(c.Args, 7)
	}
	for more := true; more; {
		more = false
		for i := range calls {
			if len(pieces[i]) == 0 {
				continue
			}
			more = true
			chunks = append(chunks, chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": pieces[i][0]},
			}}}, ""))
			pieces[i] = pieces[i][1:]
		}
	}
	chunks = append(chunks, chunk(map[string]any{}, "tool_calls"))
	return Reply{Chunks: chunks}
}

// OllamaToolCalls streams the calls as Ollama's OpenAI-compatible
// endpoint does: each call whole in one delta, every one with index 0 and
// its own id; then finish_reason "tool_calls".
func OllamaToolCalls(calls ...Call) Reply {
	chunks := []string{}
	for _, c := range calls {
		chunks = append(chunks, chunk(map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
			"id": c.ID, "index": 0, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args},
		}}}, ""))
	}
	chunks = append(chunks, chunk(map[string]any{"role": "assistant", "content": ""}, "tool_calls"))
	return Reply{Chunks: chunks}
}

// RepeatedNameToolCall streams one call whose every delta repeats its id
// and function name (as some OpenAI-compatible servers do), the arguments
// in pieces of about n bytes.
func RepeatedNameToolCall(c Call, n int) Reply {
	chunks := []string{}
	for _, p := range split(c.Args, n) {
		chunks = append(chunks, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": p},
		}}}, ""))
	}
	chunks = append(chunks, chunk(map[string]any{}, "tool_calls"))
	return Reply{Chunks: chunks}
}

func split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		for k < len(s) && k > 0 && (s[k]&0xC0) == 0x80 {
			k++ // keep UTF-8 sequences whole
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}
