package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Message is one chat message, as sent to the model (and as loci chat
// logs it).
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

// ChatRequest is one /chat/completions request.
type ChatRequest struct {
	Model    string
	Messages []Message
	// Tools is the "tools" array, sent as it is when not nil.
	Tools          any
	Temperature    *float64
	Seed           *int
	MaxTokens      int // sent when > 0
	ResponseFormat any // sent when not nil
	// Stream asks for server-sent events; IncludeUsage then asks for a
	// final usage event (stream_options.include_usage).
	Stream, IncludeUsage bool
}

func (r ChatRequest) marshal() ([]byte, error) {
	type streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	w := struct {
		Model          string         `json:"model"`
		Messages       []Message      `json:"messages"`
		Tools          any            `json:"tools,omitempty"`
		Temperature    *float64       `json:"temperature,omitempty"`
		Seed           *int           `json:"seed,omitempty"`
		MaxTokens      int            `json:"max_tokens,omitempty"`
		ResponseFormat any            `json:"response_format,omitempty"`
		Stream         bool           `json:"stream,omitempty"`
		StreamOptions  *streamOptions `json:"stream_options,omitempty"`
	}{Model: r.Model, Messages: r.Messages, Tools: r.Tools, Temperature: r.Temperature, Seed: r.Seed,
		MaxTokens: r.MaxTokens, ResponseFormat: r.ResponseFormat, Stream: r.Stream}
	if r.Stream && r.IncludeUsage {
		w.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	return json.Marshal(w)
}

// Deltas receives a streamed answer as it arrives. Either may be nil.
type Deltas struct {
	Text      func(string) // answer text
	Reasoning func(string) // a reasoning model's thinking (reasoning_content, reasoning, or a leading <think> block)
}

// Usage is the token count a server reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// ChatResponse is an assembled answer.
type ChatResponse struct {
	// Content is the answer, without the model's thinking.
	Content string
	// Reasoning is the thinking, from reasoning_content / reasoning
	// fields or a <think>…</think> block at the start of the content.
	Reasoning    string
	ToolCalls    []ToolCall
	FinishReason string
	// Usage is nil when the server reported none.
	Usage *Usage
	// Streamed is false when the server answered one JSON completion
	// (asked to stream or not).
	Streamed bool
}

// Chat sends one chat completion. With req.Stream the answer is read as
// server-sent events, deltas going to d as they arrive; a server that
// answers one JSON completion instead is read as such (its text reaches d
// at once). Tool-call deltas are assembled by id when they carry one and
// by index otherwise (see accumulator). Failures before the answer starts
// are retried (Client.Retry). When the answer had started and then failed
// or was cancelled, the partial answer is returned with the error.
func (c *Client) Chat(ctx context.Context, req ChatRequest, d Deltas) (*ChatResponse, error) {
	body, err := req.marshal()
	if err != nil {
		return nil, err
	}
	var acc *accumulator
	err = c.post(ctx, "chat/completions", body, req.Stream, func(r io.Reader, _ http.Header) (bool, error) {
		acc = newAccumulator(d)
		err := acc.read(r)
		return acc.started, err
	})
	if acc == nil || (err != nil && !acc.started) {
		return nil, err
	}
	return acc.result(), err
}

// wire types of a chat.completion(.chunk).
type wireChunk struct {
	Choices []struct {
		Delta        *wireDelta `json:"delta"`
		Message      *wireDelta `json:"message"` // a whole (non-streamed) answer
		FinishReason string     `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type wireDelta struct {
	Content          string         `json:"content"`
	ReasoningContent string         `json:"reasoning_content"` // DeepSeek, llama.cpp, vLLM
	Reasoning        string         `json:"reasoning"`         // Ollama, OpenRouter
	ToolCalls        []wireToolCall `json:"tool_calls"`
}

type wireToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// arguments returns the arguments as text: a JSON string is unquoted; an
// object (some servers send one) is kept as its JSON.
func (tc *wireToolCall) arguments() string {
	raw := tc.Function.Arguments
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// accumulator assembles an answer from deltas (or from one whole message).
type accumulator struct {
	d                  Deltas
	content, reasoning strings.Builder
	think              thinkSplitter
	calls              []*ToolCall
	byID               map[string]*ToolCall
	byIndex            map[int]*ToolCall
	finish             string
	usage              *Usage
	done, streamed     bool
	// started: part of the answer (text, reasoning or a tool call)
	// arrived, so the request is not retried.
	started bool
}

func newAccumulator(d Deltas) *accumulator {
	a := &accumulator{d: d, byID: map[string]*ToolCall{}, byIndex: map[int]*ToolCall{}}
	a.think.text = func(s string) {
		a.content.WriteString(s)
		if d.Text != nil {
			d.Text(s)
		}
	}
	a.think.reasoning = a.addReasoning
	return a
}

func (a *accumulator) addReasoning(s string) {
	a.reasoning.WriteString(s)
	if a.d.Reasoning != nil {
		a.d.Reasoning(s)
	}
}

// read reads an answer: one JSON completion when the body starts with
// '{', server-sent events otherwise.
func (a *accumulator) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		b, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return ErrIncomplete
			}
			return err
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			br.UnreadByte()
			break
		}
	}
	if b, _ := br.Peek(1); len(b) == 1 && b[0] == '{' {
		return a.readJSON(br)
	}
	a.streamed = true
	err := readSSE(br, func(ev sseEvent) error {
		if ev.name == "error" {
			return parseAPIError([]byte(ev.data))
		}
		if ev.data == "[DONE]" {
			a.done = true
			return errStop
		}
		var c wireChunk
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			return fmt.Errorf("%w: bad event %q: %v", ErrBadAnswer, clip(ev.data, 200), err)
		}
		return a.add(&c, false)
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	a.think.flush()
	if err == nil && !a.done && a.finish == "" {
		err = ErrIncomplete
	}
	return err
}

var errStop = errors.New("stop")

func (a *accumulator) readJSON(r io.Reader) error {
	var c wireChunk
	if err := json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(&c); err != nil {
		if errors.Is(err, errRead) {
			return err
		}
		return fmt.Errorf("%w: not valid JSON: %v", ErrBadAnswer, err)
	}
	if err := a.add(&c, true); err != nil {
		return err
	}
	a.think.flush()
	if len(c.Choices) == 0 {
		return fmt.Errorf("%w: an answer without choices", ErrBadAnswer)
	}
	a.done = true
	return nil
}

// add takes one chunk (or, whole, one complete answer).
func (a *accumulator) add(c *wireChunk, whole bool) error {
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return parseAPIError([]byte(`{"error":` + string(c.Error) + `}`))
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
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
			a.started = true
			a.addReasoning(r)
		}
		if dl.Content != "" {
			a.started = true
			a.think.write(dl.Content)
		}
		for i := range dl.ToolCalls {
			a.started = true
			a.toolCall(&dl.ToolCalls[i], whole)
		}
	}
	return nil
}

// toolCall merges one tool-call delta. A delta with an id belongs to the
// call with that id (a new id is a new call, whatever its index: Ollama
// gives parallel calls index 0 and their own ids); a delta without one
// continues the call at its index, or the last call when it has no index.
// A name equal to the call's is a repetition, not a piece. In a whole
// message every entry is a call of its own.
func (a *accumulator) toolCall(tc *wireToolCall, whole bool) {
	var call *ToolCall
	switch {
	case whole:
	case tc.ID != "":
		call = a.byID[tc.ID]
		if call == nil && tc.Index != nil {
			// A call whose first delta had no id gets it later.
			if c := a.byIndex[*tc.Index]; c != nil && c.ID == "" {
				call = c
				c.ID = tc.ID
				a.byID[tc.ID] = c
			}
		}
	case tc.Index != nil:
		call = a.byIndex[*tc.Index]
	case len(a.calls) > 0:
		call = a.calls[len(a.calls)-1]
	}
	if call == nil {
		call = &ToolCall{ID: tc.ID, Type: "function"}
		a.calls = append(a.calls, call)
		if tc.ID != "" {
			a.byID[tc.ID] = call
		}
	}
	if tc.Index != nil {
		a.byIndex[*tc.Index] = call
	}
	if tc.Type != "" {
		call.Type = tc.Type
	}
	if n := tc.Function.Name; n != "" && n != call.Function.Name {
		call.Function.Name += n
	}
	call.Function.Arguments += tc.arguments()
}

func (a *accumulator) result() *ChatResponse {
	r := &ChatResponse{Content: a.content.String(), Reasoning: a.reasoning.String(), FinishReason: a.finish, Usage: a.usage, Streamed: a.streamed}
	if !a.think.opened {
		// A template that opens <think> in the prompt leaves only its end
		// in the answer.
		if i := strings.Index(r.Content, thinkClose); i >= 0 {
			r.Reasoning += r.Content[:i]
			r.Content = strings.TrimLeft(r.Content[i+len(thinkClose):], " \t\r\n")
		}
	}
	for i, c := range a.calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d", i+1) // some servers send none; tool messages need one
		}
		r.ToolCalls = append(r.ToolCalls, *c)
	}
	return r
}
