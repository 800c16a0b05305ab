// Package aitest is a fake OpenAI-compatible /v1/chat/completions server
// for tests and the AI demo: real HTTP (httptest), scripted replies,
// streaming, errors, delays, and a record of every request.
package aitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	// Content is the assistant message (typically JSON).
	Content string
	// Status, when not 0 or 200, is returned with an error body.
	Status int
	// Delay waits before answering (timeouts); ChunkDelay waits between
	// streamed chunks (slow streams).
	Delay, ChunkDelay time.Duration
	// PromptTokens and CompletionTokens are the usage reported (default:
	// estimated from the request and Content).
	PromptTokens, CompletionTokens int
	// RejectJSONSchema answers 400 when the request asks for json_schema.
	RejectJSONSchema bool
	// FinishReason defaults to "stop".
	FinishReason string
	// Header is added to the answer (e.g. Retry-After with a Status).
	Header map[string]string
	// IgnoreStream answers one plain JSON completion even when the request
	// asks for a stream (as some servers and proxies do).
	IgnoreStream bool
	// Reasoning is streamed first as reasoning_content deltas (or sent as
	// the message's reasoning_content), as reasoning models do.
	Reasoning string
	// Tail, when set, ends a stream instead of the finish, usage and
	// [DONE] events: raw SSE text such as llama.cpp's
	// "error: {...}\n\n".
	Tail string
	// Stall, after the content of a stream, keeps it open without another
	// byte until the client leaves (a stalled server, or one the client
	// cancels mid-answer).
	Stall bool
}

// Request is a request as received.
type Request struct {
	Model          string `json:"model"`
	Stream         bool   `json:"stream"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name string `json:"name"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// Last returns the last message's content.
func (r Request) Last() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// Schema returns the name of the json_schema the request asks for ("" when
// it asks for none).
func (r Request) Schema() string {
	if r.ResponseFormat == nil {
		return ""
	}
	return r.ResponseFormat.JSONSchema.Name
}

// PromptNote is a note as loci's prompt renders it.
type PromptNote struct {
	Path, Etag, Title string
	// Lines maps 1-based line numbers to text.
	Lines map[int]string
	// First is the first line with prose (not frontmatter, heading or blank).
	First int
}

var noteHeader = regexp.MustCompile(`^=== NOTE path="([^"]*)" etag="([^"]*)" title="([^"]*)"$`)
var numbered = regexp.MustCompile(`^(\d+)\| (.*)$`)

// Notes parses the notes a request's prompt carries.
func (r Request) Notes() []PromptNote {
	var out []PromptNote
	for _, m := range r.Messages {
		var cur *PromptNote
		inFM := false
		for _, line := range strings.Split(m.Content, "\n") {
			if h := noteHeader.FindStringSubmatch(line); h != nil {
				out = append(out, PromptNote{Path: h[1], Etag: h[2], Title: h[3], Lines: map[int]string{}})
				cur, inFM = &out[len(out)-1], false
				continue
			}
			if line == "=== END NOTE" {
				cur = nil
				continue
			}
			if cur == nil {
				continue
			}
			if n := numbered.FindStringSubmatch(line); n != nil {
				i, _ := strconv.Atoi(n[1])
				cur.Lines[i] = n[2]
				t := strings.TrimSpace(n[2])
				if t == "---" && (i == 1 || inFM) {
					inFM = !inFM
					continue
				}
				if cur.First == 0 && !inFM && t != "" && !strings.HasPrefix(t, "#") {
					cur.First = i
				}
			}
		}
	}
	return out
}

// Server is the fake.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Reply
	Handler  func(req Request) Reply // used when the script is empty
	Requests []Request
}

// New starts a fake server; its base URL for clients is URL + "/v1".
func New() *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the OpenAI-style base (…/v1).
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Script queues replies, answered in order.
func (s *Server) Script(r ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, r...)
	s.mu.Unlock()
}

// Calls counts the requests received.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.Requests)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var req Request
	json.Unmarshal(b, &req)
	s.mu.Lock()
	s.Requests = append(s.Requests, req)
	var rep Reply
	switch {
	case len(s.script) > 0:
		rep, s.script = s.script[0], s.script[1:]
	case s.Handler != nil:
		h := s.Handler
		s.mu.Unlock()
		rep = h(req)
		s.mu.Lock()
	default:
		rep = Reply{Status: 500, Content: "no scripted reply"}
	}
	s.mu.Unlock()
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if rep.RejectJSONSchema && req.ResponseFormat != nil && req.ResponseFormat.Type == "json_schema" {
		http.Error(w, `{"error":{"message":"response_format json_schema is not supported"}}`, http.StatusBadRequest)
		// The same reply answers the retry without json_schema.
		rep.RejectJSONSchema = false
		s.mu.Lock()
		s.script = append([]Reply{rep}, s.script...)
		s.mu.Unlock()
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status != 0 && rep.Status != 200 {
		http.Error(w, fmt.Sprintf(`{"error":{"message":%q}}`, rep.Content), rep.Status)
		return
	}
	pt, ct := rep.PromptTokens, rep.CompletionTokens
	if pt == 0 {
		pt = len(b) / 4
	}
	if ct == 0 {
		ct = (len(rep.Content) + 3) / 4
	}
	fr := rep.FinishReason
	if fr == "" {
		fr = "stop"
	}
	usage := map[string]int{"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
	if !req.Stream || rep.IgnoreStream {
		msg := map[string]any{"role": "assistant", "content": rep.Content}
		if rep.Reasoning != "" {
			msg["reasoning_content"] = rep.Reasoning
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "fake", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": fr}},
			"usage":   usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	for _, chunk := range chunks(rep.Reasoning, 16) {
		send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"reasoning_content": chunk}}}})
	}
	for _, chunk := range chunks(rep.Content, 16) {
		if rep.ChunkDelay > 0 {
			select {
			case <-time.After(rep.ChunkDelay):
			case <-r.Context().Done():
				return
			}
		}
		send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": chunk}}}})
	}
	if rep.Stall {
		<-r.Context().Done()
		return
	}
	if rep.Tail != "" {
		fmt.Fprint(w, rep.Tail)
		return
	}
	send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": fr}}})
	send(map[string]any{"choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

func chunks(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// JSON renders v as a reply's content.
func JSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// NoteEtag finds the etag the prompt gives for a path (for scripted
// citations that must verify).
func NoteEtag(req Request, path string) string {
	for _, m := range req.Messages {
		i := strings.Index(m.Content, fmt.Sprintf("=== NOTE path=%q etag=\"", path))
		if i < 0 {
			continue
		}
		rest := m.Content[i+len(fmt.Sprintf("=== NOTE path=%q etag=\"", path)):]
		if j := strings.Index(rest, `"`); j > 0 {
			return rest[:j]
		}
	}
	return ""
}
