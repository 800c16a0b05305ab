package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/llm"
)

// OpenAI is the chat provider for any OpenAI-compatible /chat/completions
// endpoint (OpenAI, Ollama, llama.cpp server, vLLM), through internal/llm.
type OpenAI struct {
	S *Settings
	// Retry holds the retry mechanics (Sleep, Jitter, Now: tests set
	// them); the number of retries is S.MaxRetries.
	Retry  llm.Retry
	noJSON atomic.Bool // the server refused response_format json_schema
}

// NewOpenAI returns a client for s.
func NewOpenAI(s *Settings) *OpenAI { return &OpenAI{S: s} }

func (o *OpenAI) Name() string  { return o.S.Provider }
func (o *OpenAI) Model() string { return o.S.Model }

// client applies the settings: the timeout bounds the wait for the first
// byte and every gap between stream chunks (a slow but steady local model
// is not cut off, a stalled one is); timeouts, network errors, 429 and
// 5xx are retried S.MaxRetries times, never once the answer has started.
func (o *OpenAI) client() *llm.Client {
	r := o.Retry
	r.Max = o.S.MaxRetries // as llm's: 0 the default, negative none
	if r.Base <= 0 {
		r.Base = 250 * time.Millisecond
	}
	return &llm.Client{BaseURL: o.S.BaseURL, APIKey: o.S.APIKey, Headers: o.S.Headers,
		Timeouts: llm.Timeouts{FirstByte: o.S.Timeout, Idle: o.S.Timeout}, Retry: r}
}

// Complete runs one chat completion. With a schema it asks for json_schema
// output unless the server refused it before (then the caller gets plain
// text and parses JSON). The text is the answer alone: a reasoning
// model's thinking (reasoning_content, a <think> block) is left out.
//
// A call that fails after the provider may have billed it returns a
// Response with the error: its Usage is what it is booked at (Provider).
func (o *OpenAI) Complete(ctx context.Context, req Request) (*Response, error) {
	if strings.TrimSpace(o.S.BaseURL) == "" {
		// The config refuses this at load (config_invalid); a runtime
		// built in code gets the same advice rather than a URL error.
		return nil, errs.New(errs.CodeAIUnavailable, "provider %q has no base_url: set ai.base_url (or providers.<name>.base_url) to the server, e.g. http://127.0.0.1:8080/v1", o.S.Provider).
			With("required_role", "chat").With("provider", o.S.Provider)
	}
	temp := o.S.Temperature
	cr := llm.ChatRequest{Model: o.S.Model, Temperature: &temp, Seed: o.S.Seed, MaxTokens: req.MaxTokens}
	if cr.MaxTokens <= 0 || cr.MaxTokens > o.S.MaxOutputTokens {
		cr.MaxTokens = o.S.MaxOutputTokens
	}
	for _, m := range req.Messages {
		cr.Messages = append(cr.Messages, llm.Message{Role: m.Role, Content: m.Content})
	}
	structured := req.Schema != nil && o.S.Structured != "json" && !o.noJSON.Load()
	if structured {
		name := req.SchemaName
		if name == "" {
			name = "result"
		}
		cr.ResponseFormat = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": name, "schema": req.Schema, "strict": false}}
	}
	var d llm.Deltas
	if req.OnDelta != nil {
		cr.Stream, cr.IncludeUsage = true, true
		d.Text = req.OnDelta
	}
	estIn := 0
	for _, m := range req.Messages {
		estIn += EstimateTokens(m.Content)
	}
	// lost counts the attempts that timed out before their first byte and
	// were retried: the server may have generated (and billed) them whole,
	// so each is booked at what the call may cost at most.
	var lost Usage
	client := o.client()
	client.OnRetry = func(_ int, err error, _ time.Duration) {
		if llm.IsTimeout(err) {
			lost.Add(o.billed(Usage{Calls: 1, InputTokens: estIn, OutputTokens: cr.MaxTokens}))
		}
	}
	for {
		resp, err := client.Chat(ctx, cr, d)
		if err == nil {
			r := &Response{Text: resp.Content, FinishReason: resp.FinishReason, Structured: structured}
			if u := resp.Usage; u != nil {
				r.Usage.InputTokens, r.Usage.OutputTokens = u.PromptTokens, u.CompletionTokens
			}
			if r.Usage.OutputTokens == 0 {
				r.Usage.OutputTokens = EstimateTokens(resp.Reasoning + resp.Content)
			}
			if r.Usage.InputTokens == 0 {
				r.Usage.InputTokens = estIn
			}
			r.Usage = o.billed(Usage{Calls: 1, InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens})
			r.Usage.Add(lost)
			return r, nil
		}
		var ae *llm.APIError
		if ctx.Err() == nil && structured && o.S.Structured == "auto" && resp == nil && errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
			// The server does not know json_schema: plain JSON from now on.
			o.noJSON.Store(true)
			structured = false
			cr.ResponseFormat = nil
			continue
		}
		// What the failed call is billed: an answer that had started (then
		// failed, or was cancelled) at its input and the output received so
		// far; a last attempt that timed out before its first byte at the
		// most it may cost; a refusal or an unreachable server nothing.
		u := lost
		switch {
		case resp != nil:
			out := EstimateTokens(resp.Reasoning + resp.Content)
			in := estIn
			if resp.Usage != nil {
				in, out = max(resp.Usage.PromptTokens, in), max(resp.Usage.CompletionTokens, out)
			}
			u.Add(o.billed(Usage{Calls: 1, InputTokens: in, OutputTokens: out}))
		case llm.IsTimeout(err) && ctx.Err() == nil:
			u.Add(o.billed(Usage{Calls: 1, InputTokens: estIn, OutputTokens: cr.MaxTokens}))
		}
		var partial *Response
		if u.Calls > 0 {
			partial = &Response{Usage: u}
			if resp != nil {
				partial.Text, partial.FinishReason = resp.Content, resp.FinishReason
			}
		}
		if ctx.Err() != nil {
			return partial, ctx.Err()
		}
		return partial, o.providerError(err)
	}
}

// billed prices a usage at the model's price.
func (o *OpenAI) billed(u Usage) Usage {
	u.CostUSD = o.S.Cost(o.S.Model, u.InputTokens, u.OutputTokens)
	return u
}

// providerError maps a client error to ai_provider_error.
func (o *OpenAI) providerError(err error) *errs.Error {
	newErr := func(status int, format string, args ...any) *errs.Error {
		e := errs.New(errs.CodeAIProvider, "%s: "+format, append([]any{o.S.Provider}, args...)...).With("provider", o.S.Provider)
		if status != 0 {
			e = e.With("upstream_status", status)
		}
		return e
	}
	var e *errs.Error
	var ae *llm.APIError
	var te *llm.TimeoutError
	var ex *llm.RetriesExhausted
	attempts := 0
	if errors.As(err, &ex) {
		attempts, err = ex.Attempts, ex.Err
	}
	switch {
	case errors.As(err, &te):
		if te.Phase == llm.PhaseIdle {
			e = newErr(0, "the stream stalled for %s", te.After)
		} else {
			e = newErr(0, "no answer within %s", te.After)
		}
		e = e.With("timeout", true)
	case errors.As(err, &ae):
		msg := strings.TrimSpace(ae.Message)
		if ae.Status != 0 {
			e = newErr(ae.Status, "HTTP %d: %s", ae.Status, msg)
		} else {
			e = newErr(0, "the server reported an error: %s", msg)
		}
		e = e.With("upstream_message", msg)
	case errors.Is(err, llm.ErrIncomplete):
		e = newErr(0, "the stream ended before the answer was complete")
	default:
		e = newErr(0, "%v", err)
	}
	if attempts > 1 {
		e = e.With("attempts", attempts)
	}
	return e
}

// EstimateTokens is a rough token count (internal/llm's: 4 bytes a token
// for ASCII, one a character for Chinese, Japanese and Korean).
func EstimateTokens(s string) int { return llm.EstimateTokens(s) }

// ExtractJSON returns the JSON object in a model's text, once its thinking
// (<think>…</think>) is removed: the whole text, a ```json fence, or the
// outermost {...}.
func ExtractJSON(text string) (json.RawMessage, error) {
	t := strings.TrimSpace(llm.StripThinking(text))
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
