package chat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/llm"
)

// The model's wire types are internal/llm's: chat keeps its names for them.
type (
	// Message is one OpenAI chat message, as sent to the model and as
	// logged in the session history.
	Message = llm.Message
	// ToolCall is a function call requested by the model.
	ToolCall = llm.ToolCall
	// FunctionCall names the function and carries its arguments as a JSON
	// string (as the model wrote it).
	FunctionCall = llm.FunctionCall
	// Deltas receives the stream as it arrives: answer text, and the
	// thinking of reasoning models.
	Deltas = llm.Deltas
	// ModelResponse is a completed (or interrupted) answer.
	ModelResponse = llm.ChatResponse
	// APIError is an error the endpoint returned.
	APIError = llm.APIError
)

// ModelRequest is one streamed chat completion request.
type ModelRequest struct {
	Messages []Message
	Tools    []FunctionTool
}

// modelTimeouts: a local model may think long before its first token, and
// a server may hold back a tool call until it is whole; a server silent
// for longer has stalled (Ctrl-C ends a turn sooner).
var modelTimeouts = llm.Timeouts{FirstByte: 10 * time.Minute, Idle: 10 * time.Minute}

// Model is the OpenAI-compatible /chat/completions endpoint loci chat
// talks to, through internal/llm.
type Model struct {
	BaseURL     string
	Name        string
	APIKey      string
	Temperature *float64
	MaxTokens   int
	Headers     map[string]string
	// Retry is the policy for requests that fail before the answer starts
	// (429, 5xx, timeouts, network failures); the zero value retries
	// twice with backoff, honouring Retry-After.
	Retry llm.Retry
}

// NewModel builds the client from the resolved configuration. Its headers
// are used as they are: config.Endpoint already expanded their ${VAR}s
// (expanding again would rewrite a value that holds "${...}").
func NewModel(c ModelConfig) *Model {
	return &Model{BaseURL: c.BaseURL, Name: c.Name, APIKey: c.APIKey, Temperature: c.Temperature, MaxTokens: c.MaxTokens, Headers: maps.Clone(c.Headers)}
}

// Endpoint is the URL requests go to: BaseURL + /chat/completions, or
// BaseURL itself when it already ends so.
func (m *Model) Endpoint() string {
	u, err := llm.JoinURL(m.BaseURL, "chat/completions")
	if err != nil {
		return m.BaseURL
	}
	return u
}

// Stream sends the request and returns the assembled answer. Text and
// reasoning deltas are passed on as they arrive; tool calls are assembled
// by internal/llm (by id, else by index). When ctx is cancelled or the
// stream fails mid-answer, the partial answer is returned with the error.
func (m *Model) Stream(ctx context.Context, req ModelRequest, d Deltas) (*ModelResponse, error) {
	cr := llm.ChatRequest{Model: m.Name, Messages: req.Messages, Temperature: m.Temperature, MaxTokens: m.MaxTokens, Stream: true}
	if len(req.Tools) > 0 {
		cr.Tools = req.Tools
	}
	c := &llm.Client{BaseURL: m.BaseURL, APIKey: m.APIKey, Headers: m.Headers, Timeouts: modelTimeouts, Retry: m.Retry}
	resp, err := c.Chat(ctx, cr, d)
	if err != nil && ctx.Err() == nil {
		err = m.explain(err)
	}
	return resp, err
}

// explain adds what the user can do about an error.
func (m *Model) explain(err error) error {
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			ae.Message += " (check the API key: " + EnvAPIKey + " or model.api_key_env)"
		case http.StatusNotFound:
			ae.Message += " (check the base URL and the model name)"
		}
		return err
	}
	if errors.Is(err, llm.ErrBadURL) {
		return fmt.Errorf("%w (model.base_url or %s)", err, EnvBaseURL)
	}
	return fmt.Errorf("model request to %s failed: %w", m.Endpoint(), err)
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
