package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// APIError is a refusal or failure the server reported: an HTTP status of
// 400 or more, an error object in a 2xx answer, or an error event inside
// a stream (llama.cpp's "error:" line, or "data: {"error": ...}").
type APIError struct {
	// Status is the HTTP status; 0 for an error inside a 2xx answer.
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
	// RetryAfter is the server's Retry-After (or Retry-After-Ms), when
	// RetryAfterSet.
	RetryAfter    time.Duration `json:"-"`
	RetryAfterSet bool          `json:"-"`
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

// Phases of a TimeoutError.
const (
	PhaseFirstByte = "first byte" // no answer within Timeouts.FirstByte
	PhaseIdle      = "idle"       // the answer paused longer than Timeouts.Idle
)

// TimeoutError is a request the watchdog ended.
type TimeoutError struct {
	Phase string
	After time.Duration
}

func (e *TimeoutError) Error() string {
	if e.Phase == PhaseIdle {
		return fmt.Sprintf("the answer stalled: nothing for %s", e.After)
	}
	return fmt.Sprintf("no answer within %s", e.After)
}

// Timeout marks it as a timeout (net.Error style).
func (e *TimeoutError) Timeout() bool { return true }

// RetriesExhausted is the last error of a request that failed every
// attempt.
type RetriesExhausted struct {
	Attempts int
	Err      error
}

func (e *RetriesExhausted) Error() string {
	return fmt.Sprintf("%v (gave up after %d attempts)", e.Err, e.Attempts)
}

func (e *RetriesExhausted) Unwrap() error { return e.Err }

var (
	// ErrIncomplete: a stream ended before the answer was complete (no
	// [DONE] and no finish_reason).
	ErrIncomplete = errors.New("the model's stream ended before the answer was complete")
	// ErrBadAnswer: a 2xx answer that is not what the API promises
	// (not JSON, no choices, an unreadable event).
	ErrBadAnswer = errors.New("the server's answer is unreadable")
	// ErrBadURL: the base URL is not an http(s) URL.
	ErrBadURL = errors.New("bad base URL")
)

// netError is a failure to reach the server or to read its answer.
type netError struct{ err error }

func (e *netError) Error() string { return "cannot reach the server: " + e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

// parseAPIError reads an error body: {"error": {...}}, {"error": "..."},
// a bare error object (llama.cpp's "error:" event), or text.
func parseAPIError(raw []byte) *APIError {
	e := &APIError{}
	var wrap struct {
		Error json.RawMessage `json:"error"`
	}
	obj := raw
	if json.Unmarshal(raw, &wrap) == nil && len(wrap.Error) > 0 && string(wrap.Error) != "null" {
		obj = wrap.Error
	}
	if json.Unmarshal(obj, e) != nil || e.Message == "" {
		var s string
		var detail struct {
			Detail string `json:"detail"` // FastAPI-style servers
		}
		if json.Unmarshal(obj, &s) == nil {
			e.Message = s
		} else if json.Unmarshal(obj, &detail) == nil {
			e.Message = detail.Detail
		}
	}
	if e.Message == "" {
		e.Message = clip(strings.TrimSpace(string(raw)), 300)
	}
	return e
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
