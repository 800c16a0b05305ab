package ai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/errs"
)

// OpenAI is a client of any OpenAI-compatible /chat/completions endpoint
// (OpenAI, Ollama, llama.cpp server, vLLM).
type OpenAI struct {
	S      *Settings
	HTTP   *http.Client
	noJSON atomic.Bool // the server refused response_format json_schema
}

// NewOpenAI returns a client for s.
func NewOpenAI(s *Settings) *OpenAI { return &OpenAI{S: s, HTTP: &http.Client{}} }

func (o *OpenAI) Name() string  { return o.S.Provider }
func (o *OpenAI) Model() string { return o.S.Model }

type oaRequest struct {
	Model          string         `json:"model"`
	Messages       []Message      `json:"messages"`
	Temperature    float64        `json:"temperature"`
	Seed           *int           `json:"seed,omitempty"`
	MaxTokens      int            `json:"max_tokens,omitempty"`
	Stream         bool           `json:"stream,omitempty"`
	StreamOptions  map[string]any `json:"stream_options,omitempty"`
	ResponseFormat map[string]any `json:"response_format,omitempty"`
}

type oaUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type oaResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage `json:"usage"`
}

// providerError builds an ai_provider_error.
func (o *OpenAI) providerError(status int, format string, args ...any) *errs.Error {
	e := errs.New(errs.CodeAIProvider, "%s: "+format, append([]any{o.S.Provider}, args...)...).With("provider", o.S.Provider)
	if status != 0 {
		e = e.With("upstream_status", status)
	}
	return e
}

// Complete runs one chat completion, retrying timeouts, 429 and 5xx with
// backoff. With a schema it asks for json_schema output unless the server
// refused it before (then the caller gets plain text and parses JSON).
func (o *OpenAI) Complete(ctx context.Context, req Request) (*Response, error) {
	body := oaRequest{Model: o.S.Model, Messages: req.Messages, Temperature: o.S.Temperature, Seed: o.S.Seed, MaxTokens: req.MaxTokens}
	if body.MaxTokens <= 0 || body.MaxTokens > o.S.MaxOutputTokens {
		body.MaxTokens = o.S.MaxOutputTokens
	}
	structured := req.Schema != nil && o.S.Structured != "json" && !o.noJSON.Load()
	if structured {
		name := req.SchemaName
		if name == "" {
			name = "result"
		}
		body.ResponseFormat = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": name, "schema": req.Schema, "strict": false}}
	}
	if req.OnDelta != nil {
		body.Stream = true
		body.StreamOptions = map[string]any{"include_usage": true}
	}
	var last error
	for attempt := 0; attempt <= o.S.MaxRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(250<<(attempt-1)) * time.Millisecond):
			}
		}
		emitted := false
		onDelta := req.OnDelta
		if onDelta != nil {
			onDelta = func(s string) { emitted = true; req.OnDelta(s) }
		}
		resp, status, err := o.once(ctx, body, onDelta)
		if err == nil {
			resp.Structured = structured
			resp.Usage.Calls = 1
			resp.Usage.CostUSD = o.S.Cost(o.S.Model, resp.Usage.InputTokens, resp.Usage.OutputTokens)
			return resp, nil
		}
		last = err
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if emitted {
			break // part of the answer was streamed: a retry would repeat it
		}
		if status == http.StatusBadRequest && structured && o.S.Structured == "auto" {
			// The server does not know json_schema: plain JSON from now on.
			o.noJSON.Store(true)
			structured = false
			body.ResponseFormat = nil
			attempt--
			continue
		}
		if status != 0 && status != http.StatusTooManyRequests && status < 500 {
			break
		}
	}
	return nil, last
}

func (o *OpenAI) once(ctx context.Context, body oaRequest, onDelta func(string)) (*Response, int, error) {
	// The timeout bounds a whole answer; for a stream it bounds the wait
	// for the first byte and every gap between chunks, so a slow but
	// steady local model is not cut off while a stalled one is.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(o.S.Timeout, func() { cancel(context.DeadlineExceeded) })
	defer idle.Stop()
	touch := func() {}
	if body.Stream {
		touch = func() { idle.Reset(o.S.Timeout) }
	}
	b, _ := json.Marshal(body)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(o.S.BaseURL, "/")+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		return nil, 0, o.providerError(0, "bad base URL: %v", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if o.S.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.S.APIKey)
	}
	res, err := o.HTTP.Do(hreq)
	if err != nil {
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return nil, 0, o.providerError(0, "no answer within %s", o.S.Timeout).With("timeout", true)
		}
		return nil, 0, o.providerError(0, "request failed: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 2000))
		return nil, res.StatusCode, o.providerError(res.StatusCode, "HTTP %d: %s", res.StatusCode, strings.TrimSpace(string(msg))).With("upstream_message", strings.TrimSpace(string(msg)))
	}
	if body.Stream {
		touch()
		r, err := o.readStream(ctx, res.Body, onDelta, touch)
		return r, 0, err
	}
	var or oaResponse
	if err := json.NewDecoder(io.LimitReader(res.Body, 16<<20)).Decode(&or); err != nil {
		if ctx.Err() != nil {
			return nil, 0, o.providerError(0, "no answer within %s", o.S.Timeout).With("timeout", true)
		}
		return nil, 0, o.providerError(0, "unreadable response: %v", err)
	}
	if len(or.Choices) == 0 {
		return nil, 0, o.providerError(0, "response without choices")
	}
	r := &Response{Text: or.Choices[0].Message.Content}
	if fr := or.Choices[0].FinishReason; fr != nil {
		r.FinishReason = *fr
	}
	if or.Usage != nil {
		r.Usage.InputTokens, r.Usage.OutputTokens = or.Usage.PromptTokens, or.Usage.CompletionTokens
	}
	return r, 0, nil
}

func (o *OpenAI) readStream(ctx context.Context, body io.Reader, onDelta func(string), touch func()) (*Response, error) {
	r := &Response{}
	var sb strings.Builder
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		touch()
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "data:") {
			continue
		}
		data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if data == "[DONE]" {
			break
		}
		var ev oaResponse
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			continue
		}
		if ev.Usage != nil {
			r.Usage.InputTokens, r.Usage.OutputTokens = ev.Usage.PromptTokens, ev.Usage.CompletionTokens
		}
		for _, c := range ev.Choices {
			if c.Delta.Content != "" {
				sb.WriteString(c.Delta.Content)
				if onDelta != nil {
					onDelta(c.Delta.Content)
				}
			}
			if c.FinishReason != nil {
				r.FinishReason = *c.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return nil, o.providerError(0, "the stream stalled for %s", o.S.Timeout).With("timeout", true)
		}
		return nil, o.providerError(0, "stream broken: %v", err)
	}
	r.Text = sb.String()
	if r.Usage.OutputTokens == 0 {
		r.Usage.OutputTokens = EstimateTokens(r.Text)
	}
	return r, nil
}

// EstimateTokens is a rough token count (4 bytes a token).
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// ExtractJSON returns the JSON object in a model's text: the whole text, a
// ```json fence, or the outermost {...}.
func ExtractJSON(text string) (json.RawMessage, error) {
	t := strings.TrimSpace(text)
	if i := strings.Index(t, "```"); i >= 0 {
		rest := t[i+3:]
		rest = strings.TrimPrefix(rest, "json")
		if j := strings.Index(rest, "```"); j >= 0 {
			t = strings.TrimSpace(rest[:j])
		}
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t), nil
	}
	if i, j := strings.Index(t, "{"), strings.LastIndex(t, "}"); i >= 0 && j > i && json.Valid([]byte(t[i:j+1])) {
		return json.RawMessage(t[i : j+1]), nil
	}
	return nil, fmt.Errorf("the model's output is not JSON")
}
