// Package llm is loci's one client for OpenAI-compatible servers (OpenAI,
// Ollama, llama.cpp's server, vLLM, LM Studio, OpenRouter, ...): chat
// completions, streamed or not, with tool calls, and embeddings. It owns
// what every caller needs the same way: base URL joining, the API key and
// extra headers, the timeouts (connect, first byte, idle between stream
// chunks), cancellation through the context, retries with backoff that
// honour Retry-After, reading server-sent events, and the quirks of local
// servers (parallel tool calls that all say index 0, llama.cpp's "error:"
// events, <think> blocks, a JSON answer to a streamed request).
//
// It knows nothing of loci's settings or error codes: internal/ai,
// internal/chat and internal/embed build a Client from their settings and
// map its errors (APIError, TimeoutError, RetriesExhausted, ErrIncomplete,
// ErrBadAnswer, ErrBadURL) to their own.
package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client talks to one OpenAI-compatible server. The zero value of each
// field is usable; a Client is safe for concurrent use and cheap to build
// per call (connections are pooled per connect timeout).
type Client struct {
	// BaseURL is the API base, e.g. https://api.openai.com/v1 or
	// http://127.0.0.1:11434/v1; see JoinURL.
	BaseURL string
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// Headers are added to every request (after Authorization, so they
	// may replace it).
	Headers  map[string]string
	Timeouts Timeouts
	Retry    Retry
	// HTTP replaces the pooled client (tests, custom transports); its own
	// timeouts then add to Timeouts.
	HTTP *http.Client
	// OnRequest is called before every HTTP attempt (usage counters).
	OnRequest func()
	// OnRetry is called before each wait for a retry: the attempt that
	// failed (1-based), its error and the wait.
	OnRetry func(attempt int, err error, wait time.Duration)
}

// Timeouts bound a request. Zero means the default (Connect) or no limit
// (FirstByte, Idle). Cancelling the context ends a request at any point.
type Timeouts struct {
	// Connect bounds dialing and the TLS handshake (default 10s).
	Connect time.Duration
	// FirstByte bounds the wait from sending the request to the first byte
	// of the answer's body: a non-streamed answer is generated in full
	// before it, so this bounds the whole generation.
	FirstByte time.Duration
	// Idle bounds each gap between two reads of the body once it has
	// started: a slow but steady stream is never cut, a stalled one is.
	Idle time.Duration
}

// DefaultConnectTimeout is Timeouts.Connect's default.
const DefaultConnectTimeout = 10 * time.Second

// Retry is the retry policy: rate limits (429), server errors (5xx, 408),
// timeouts and network failures are retried with exponential backoff and
// jitter, or after the server's Retry-After; never once the answer has
// started to arrive (the caller has seen part of it).
type Retry struct {
	// Max is the number of retries after the first attempt: 0 means
	// DefaultMaxRetries, a negative number none.
	Max int
	// Base is the first backoff (default 500ms), doubled each retry up to
	// Cap (default 30s).
	Base, Cap time.Duration
	// MaxRetryAfter caps the server's Retry-After (default 1 minute).
	MaxRetryAfter time.Duration
	// Sleep waits (tests inject it); it returns early with ctx's error.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter turns a backoff into the wait (default: a random duration in
	// [d/2, d]). It is not applied to Retry-After.
	Jitter func(d time.Duration) time.Duration
	// Now is the clock for Retry-After dates (default time.Now).
	Now func() time.Time
}

// DefaultMaxRetries is Retry.Max's default.
const DefaultMaxRetries = 2

func (r Retry) max() int {
	switch {
	case r.Max < 0:
		return 0
	case r.Max == 0:
		return DefaultMaxRetries
	}
	return r.Max
}

// wait is how long to wait before retry n (1-based) after err.
func (r Retry) wait(n int, err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfterSet {
		limit := r.MaxRetryAfter
		if limit <= 0 {
			limit = time.Minute
		}
		return min(max(ae.RetryAfter, 0), limit)
	}
	base, ceiling := r.Base, r.Cap
	if base <= 0 {
		base = 500 * time.Millisecond
	}
	if ceiling <= 0 {
		ceiling = 30 * time.Second
	}
	d := base
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	if r.Jitter != nil {
		return r.Jitter(d)
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func (r Retry) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// JoinURL joins an API base and an endpoint path ("chat/completions",
// "embeddings"): trailing slashes are dropped, a base that already ends
// in the endpoint is used as it is, and a query string is kept. Only
// http and https URLs with a host are accepted.
func JoinURL(base, endpoint string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return "", fmt.Errorf("%w %q: %v", ErrBadURL, base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w %q: want http(s)://host/…", ErrBadURL, base)
	}
	endpoint = strings.Trim(endpoint, "/")
	p := strings.TrimRight(u.Path, "/")
	if p != endpoint && !strings.HasSuffix(p, "/"+endpoint) {
		p += "/" + endpoint
	}
	u.Path, u.RawPath = p, ""
	return u.String(), nil
}

// transports pools one *http.Transport per connect timeout.
var transports sync.Map // time.Duration → *http.Transport

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	d := c.Timeouts.Connect
	if d <= 0 {
		d = DefaultConnectTimeout
	}
	t, ok := transports.Load(d)
	if !ok {
		dialer := &net.Dialer{Timeout: d, KeepAlive: 30 * time.Second}
		t, _ = transports.LoadOrStore(d, &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   d,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		})
	}
	return &http.Client{Transport: t.(*http.Transport)}
}

// readFunc consumes a 2xx answer. It reports whether the answer had
// started (a delta reached the caller), which rules out a retry.
type readFunc func(body io.Reader, h http.Header) (started bool, err error)

// post sends body to endpoint and hands a 2xx answer to read, retrying
// what may succeed later.
func (c *Client) post(ctx context.Context, endpoint string, body []byte, stream bool, read readFunc) error {
	u, err := JoinURL(c.BaseURL, endpoint)
	if err != nil {
		return err
	}
	limit := c.Retry.max()
	for attempt := 1; ; attempt++ {
		started, err := c.once(ctx, u, body, stream, read)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if started || !retryable(err) {
			return err
		}
		if attempt > limit {
			return &RetriesExhausted{Attempts: attempt, Err: err}
		}
		wait := c.Retry.wait(attempt, err)
		if c.OnRetry != nil {
			c.OnRetry(attempt, err, wait)
		}
		if err := c.Retry.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// once is one HTTP attempt under the watchdog.
func (c *Client) once(parent context.Context, u string, body []byte, stream bool, read readFunc) (started bool, err error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	wd := startWatchdog(c.Timeouts, cancel)
	defer wd.stop()
	// failed turns an error into the watchdog's timeout or the caller's
	// cancellation when one of them caused it.
	failed := func(err error) error {
		if parent.Err() != nil {
			return parent.Err()
		}
		var te *TimeoutError
		if cause := context.Cause(ctx); errors.As(cause, &te) {
			return te
		}
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("%w %q: %v", ErrBadURL, c.BaseURL, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if stream {
		hreq.Header.Set("Accept", "text/event-stream, application/json")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	for k, v := range c.Headers {
		hreq.Header.Set(k, v)
	}
	if c.OnRequest != nil {
		c.OnRequest()
	}
	res, err := c.httpClient().Do(hreq)
	if err != nil {
		return false, failed(&netError{err})
	}
	defer res.Body.Close()
	r := &touchReader{r: res.Body, touch: wd.touch}
	if res.StatusCode/100 != 2 {
		return false, failed(statusError(res, r, c.Retry.Now))
	}
	started, err = read(r, res.Header)
	if err != nil {
		if errors.Is(err, errRead) {
			err = &netError{err}
		}
		return started, failed(err)
	}
	return started, nil
}

// retryable reports whether another attempt may succeed.
func retryable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status == http.StatusTooManyRequests || ae.Status == http.StatusRequestTimeout || ae.Status >= 500
	}
	var te *TimeoutError
	var ne *netError
	return errors.As(err, &te) || errors.As(err, &ne) || errors.Is(err, ErrIncomplete)
}

// statusError reads a non-2xx answer into an APIError.
func statusError(res *http.Response, body io.Reader, now func() time.Time) *APIError {
	raw, _ := io.ReadAll(io.LimitReader(body, 64<<10))
	e := parseAPIError(raw)
	e.Status = res.StatusCode
	if e.Message == "" {
		e.Message = http.StatusText(res.StatusCode)
	}
	e.RetryAfter, e.RetryAfterSet = retryAfter(res.Header, now)
	return e
}

// retryAfter reads Retry-After-Ms or Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now func() time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if now == nil {
			now = time.Now
		}
		return max(t.Sub(now()), 0), true
	}
	return 0, false
}

// watchdog cancels a request whose answer does not start within
// FirstByte or then pauses longer than Idle.
type watchdog struct {
	t       *time.Timer
	idle    time.Duration
	started atomic.Bool
}

func startWatchdog(to Timeouts, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{idle: to.Idle}
	first := to.FirstByte
	if first <= 0 && to.Idle <= 0 {
		return w
	}
	if first <= 0 {
		first = 1<<63 - 1
	}
	w.t = time.AfterFunc(first, func() {
		if w.started.Load() {
			cancel(&TimeoutError{Phase: PhaseIdle, After: to.Idle})
		} else {
			cancel(&TimeoutError{Phase: PhaseFirstByte, After: to.FirstByte})
		}
	})
	return w
}

func (w *watchdog) touch() {
	if w.t == nil {
		return
	}
	w.started.Store(true)
	if w.idle > 0 {
		w.t.Reset(w.idle)
	} else {
		w.t.Stop()
	}
}

func (w *watchdog) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// touchReader reports every read that brought bytes, and marks read
// failures (a broken connection) as errRead.
type touchReader struct {
	r     io.Reader
	touch func()
}

func (t *touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.touch()
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", errRead, err)
	}
	return n, err
}

var errRead = errors.New("reading the answer failed")
