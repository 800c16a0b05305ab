// Package ai is loci's AI runtime: chat providers (an OpenAI-compatible
// client), the settings that switch AI on, the response cache and the daily
// cost ledger (.loci/ai-cache.db), path globs that keep notes away from the
// provider, and record/replay of provider calls for tests. The operations
// themselves (ai_summarize, ai_ask, ...) live in internal/ops, which calls
// this package; nothing here writes a note.
package ai

import (
	"context"
	"encoding/json"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role" jsonschema:"user or assistant (system for the runtime's own prompts)"`
	Content string `json:"content" jsonschema:"the message text"`
}

// Request is one chat completion.
type Request struct {
	Messages []Message
	// Schema, when set, asks for JSON conforming to it (response_format
	// json_schema where the server supports it); SchemaName names it.
	Schema     map[string]any
	SchemaName string
	MaxTokens  int
	// OnDelta, when set, streams the completion: it receives each text chunk.
	OnDelta func(string)
}

// Usage counts the tokens of a call and what they cost.
type Usage struct {
	InputTokens  int     `json:"input_tokens" jsonschema:"prompt tokens sent to the provider"`
	OutputTokens int     `json:"output_tokens" jsonschema:"completion tokens received"`
	CostUSD      float64 `json:"cost_usd" jsonschema:"estimated cost from the configured price table (0 on a cache hit or without a price)"`
	Calls        int     `json:"calls" jsonschema:"provider calls made"`
}

// Add accumulates u2 into u.
func (u *Usage) Add(u2 Usage) {
	u.InputTokens += u2.InputTokens
	u.OutputTokens += u2.OutputTokens
	u.CostUSD = roundUSD(u.CostUSD + u2.CostUSD)
	u.Calls += u2.Calls
}

// Response is the result of a chat completion.
type Response struct {
	Text         string
	FinishReason string
	Usage        Usage
	// Structured is true when the server honoured response_format json_schema.
	Structured bool
}

// Provider is a chat model.
type Provider interface {
	Name() string
	Model() string
	// Complete runs one call. When it fails (or is cancelled) after the
	// server may have billed it — the answer had started, or an attempt
	// timed out waiting for it — it returns a Response with the error,
	// whose Usage is what the call is booked at (the text so far, if any).
	Complete(ctx context.Context, req Request) (*Response, error)
}

// canonical renders a request for hashing (record/replay).
func canonical(p Provider, req Request) []byte {
	b, _ := json.Marshal(struct {
		P, M     string
		Messages []Message
		Schema   map[string]any
		Max      int
	}{p.Name(), p.Model(), req.Messages, req.Schema, req.MaxTokens})
	return b
}
