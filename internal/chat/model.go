package chat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is one OpenAI chat message, as sent to the model and as logged
// in the session history.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call requested by the model.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as a JSON
// string (as the model wrote it).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ModelRequest is one streamed chat completion request.
type ModelRequest struct {
	Messages []Message
	Tools    []FunctionTool
}

// ModelResponse is a completed (or interrupted) streamed answer.
type ModelResponse struct {
	Content      string
	Reasoning    string
	ToolCalls    []ToolCall
	FinishReason string
}

// Model is a small client for an OpenAI-compatible /chat/completions
// endpoint with streaming (server-sent events).
type Model struct {
	BaseURL     string
	Name        string
	APIKey      string
	Temperature *float64
	MaxTokens   int
	Headers     map[string]string
	HTTP        *http.Client
}

// NewModel builds the client from the resolved configuration.
func NewModel(c ModelConfig, getenv func(string) string) *Model {
	h := map[string]string{}
	for k, v := range c.Headers {
		h[k] = expandVars(v, getenv)
	}
	return &Model{
		BaseURL: c.BaseURL, Name: c.Name, APIKey: c.APIKey, Temperature: c.Temperature, MaxTokens: c.MaxTokens, Headers: h,
		HTTP: &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			ResponseHeaderTimeout: 10 * time.Minute, // a local model may think long before the first token
			IdleConnTimeout:       90 * time.Second,
		}},
	}
}

// Endpoint is the URL requests go to.
func (m *Model) Endpoint() string {
	u := strings.TrimRight(m.BaseURL, "/")
	if strings.HasSuffix(u, "/chat/completions") {
		return u
	}
	return u + "/chat/completions"
}

// Deltas receives the stream as it arrives.
type Deltas struct {
	Text      func(string) // answer text
	Reasoning func(string) // reasoning text, from models that stream it separately
}

// Stream sends the request and returns the assembled answer. Text deltas
// are passed on as they arrive; tool-call deltas are accumulated by index
// (their arguments arrive in pieces). When ctx is cancelled mid-stream the
// partial answer is returned with ctx's error.
func (m *Model) Stream(ctx context.Context, req ModelRequest, d Deltas) (*ModelResponse, error) {
	body := map[string]any{"model": m.Name, "messages": req.Messages, "stream": true}
	if len(req.Tools) > 0 {
		body["tools"] = req.Tools
	}
	if m.Temperature != nil {
		body["temperature"] = *m.Temperature
	}
	if m.MaxTokens > 0 {
		body["max_tokens"] = m.MaxTokens
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, m.Endpoint(), bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	if m.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+m.APIKey)
	}
	for k, v := range m.Headers {
		hr.Header.Set(k, v)
	}
	client := m.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return &ModelResponse{}, ctx.Err()
		}
		return nil, fmt.Errorf("model request to %s failed: %w", m.Endpoint(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, apiError(resp)
	}
	acc := newAccumulator()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		// The server ignored "stream": one complete answer.
		var full chunk
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&full); err != nil {
			return nil, fmt.Errorf("model answer is not valid JSON: %w", err)
		}
		if full.Error != nil {
			return nil, full.Error
		}
		if err := acc.add(&full, d); err != nil {
			return nil, err
		}
		return acc.result(), nil
	}
	done := false
	err = readSSE(resp.Body, func(data string) error {
		if data == "[DONE]" {
			done = true
			return errDone
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return fmt.Errorf("model stream: bad event %q: %w", clip(data, 200), err)
		}
		if c.Error != nil {
			return c.Error
		}
		return acc.add(&c, d)
	})
	if errors.Is(err, errDone) {
		err = nil
	}
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil && !done && acc.finish == "" {
		err = errors.New("the model's stream ended before the answer was complete")
	}
	return acc.result(), err
}

var errDone = errors.New("done")

// chunk is one streamed chat.completion.chunk (or a whole completion).
type chunk struct {
	Choices []struct {
		Delta        *delta `json:"delta"`
		Message      *delta `json:"message"` // non-streamed answers
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error *APIError `json:"error"`
}

type delta struct {
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
	ToolCalls        []struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// APIError is an error object returned by the endpoint.
type APIError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("model API error")
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

func apiError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Status: resp.StatusCode}
	var wrap struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &wrap) == nil && len(wrap.Error) > 0 {
		if json.Unmarshal(wrap.Error, e) != nil {
			var s string
			json.Unmarshal(wrap.Error, &s)
			e.Message = s
		}
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(clip(string(raw), 300))
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.Message += " (check the API key: " + EnvAPIKey + " or model.api_key_env)"
	case http.StatusNotFound:
		e.Message += " (check the base URL and the model name)"
	}
	return e
}

// accumulator assembles deltas: text is appended, tool calls are keyed by
// their index (a delta without an index continues the last call, or starts
// a new one when it carries a new id).
type accumulator struct {
	content, reasoning strings.Builder
	calls              []*ToolCall
	byIndex            map[int]*ToolCall
	finish             string
}

func newAccumulator() *accumulator { return &accumulator{byIndex: map[int]*ToolCall{}} }

func (a *accumulator) add(c *chunk, d Deltas) error {
	for _, ch := range c.Choices {
		dl := ch.Delta
		if dl == nil {
			dl = ch.Message
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
		if dl == nil {
			continue
		}
		if r := dl.ReasoningContent + dl.Reasoning; r != "" {
			a.reasoning.WriteString(r)
			if d.Reasoning != nil {
				d.Reasoning(r)
			}
		}
		if dl.Content != "" {
			a.content.WriteString(dl.Content)
			if d.Text != nil {
				d.Text(dl.Content)
			}
		}
		for _, tc := range dl.ToolCalls {
			var call *ToolCall
			switch {
			case tc.Index != nil:
				call = a.byIndex[*tc.Index]
				if call == nil {
					call = &ToolCall{Type: "function"}
					a.byIndex[*tc.Index] = call
					a.calls = append(a.calls, call)
				}
			case len(a.calls) > 0 && (tc.ID == "" || tc.ID == a.calls[len(a.calls)-1].ID):
				call = a.calls[len(a.calls)-1]
			default:
				call = &ToolCall{Type: "function"}
				a.calls = append(a.calls, call)
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
	}
	return nil
}

func (a *accumulator) result() *ModelResponse {
	r := &ModelResponse{Content: a.content.String(), Reasoning: a.reasoning.String(), FinishReason: a.finish}
	for i, c := range a.calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d", i+1) // some servers send none; tool messages need one
		}
		r.ToolCalls = append(r.ToolCalls, *c)
	}
	return r
}

// readSSE parses a server-sent event stream and hands each event's data to
// fn. Lines starting with ':' are comments; an event ends at a blank line.
// Servers that omit the blank line between "data:" lines are handled too.
func readSSE(r io.Reader, fn func(data string) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []string
	flush := func() error {
		if len(data) == 0 {
			return nil
		}
		joined := strings.Join(data, "\n")
		data = data[:0]
		if len(strings.TrimSpace(joined)) == 0 {
			return nil
		}
		return fn(joined)
	}
	for {
		line, err := br.ReadString('\n')
		if line != "" || err == nil {
			line = strings.TrimRight(line, "\r\n")
			switch {
			case line == "":
				if ferr := flush(); ferr != nil {
					return ferr
				}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "data:"):
				v := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
				// A second data line whose predecessor is already a
				// complete JSON value (or [DONE]) is a new event.
				if len(data) > 0 && (json.Valid([]byte(strings.Join(data, "\n"))) || data[0] == "[DONE]") {
					if ferr := flush(); ferr != nil {
						return ferr
					}
				}
				data = append(data, v)
			default:
				// event:, id:, retry: and unknown fields carry nothing we use.
			}
		}
		if err != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
