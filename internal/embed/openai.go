package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/errs"
)

// OpenAI is a client of an OpenAI-compatible /v1/embeddings endpoint. It
// splits the input into batches, keeps at most Concurrency requests in
// flight, retries rate limits, server errors and network failures with
// exponential backoff (honouring Retry-After), and counts tokens.
type OpenAI struct {
	s      Settings
	client *http.Client
	u      usage
	dims   atomic.Int64
	// sleep is replaced in tests.
	sleep func(context.Context, time.Duration) error
}

// NewOpenAI returns a client for the settings' base URL and model.
func NewOpenAI(s Settings) *OpenAI {
	if s.BatchSize <= 0 {
		s.BatchSize = 64
	}
	if s.Concurrency <= 0 {
		s.Concurrency = 4
	}
	if s.Timeout <= 0 {
		s.Timeout = 60 * time.Second
	}
	o := &OpenAI{s: s, client: &http.Client{Timeout: s.Timeout}, sleep: sleepCtx}
	o.u.pricePerMTok = s.PricePerMTok
	if s.Dims > 0 {
		o.dims.Store(int64(s.Dims))
	}
	return o
}

func (o *OpenAI) Identity() Identity {
	return Identity{Provider: "openai", Model: o.s.Model, Dims: int(o.dims.Load())}
}

func (o *OpenAI) Usage() Usage { return o.u.snapshot() }

type embedRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// Embed embeds texts in batches, concurrently, in order.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, o.s.Concurrency)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for start := 0; start < len(texts); start += o.s.BatchSize {
		end := min(start+o.s.BatchSize, len(texts))
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(start, end int) {
			defer wg.Done()
			defer func() { <-sem }()
			vs, err := o.batch(ctx, texts[start:end])
			if err != nil {
				once.Do(func() { firstErr = err; cancel() })
				return
			}
			copy(out[start:end], vs)
		}(start, end)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// batch sends one request, retrying what may succeed later.
func (o *OpenAI) batch(ctx context.Context, texts []string) ([][]float32, error) {
	body, _ := json.Marshal(embedRequest{Model: o.s.Model, Input: texts, Dimensions: o.s.Dims})
	url := strings.TrimRight(o.s.BaseURL, "/") + "/embeddings"
	backoff := 500 * time.Millisecond
	for attempt := 0; ; attempt++ {
		vs, retryAfter, err := o.try(ctx, url, body, len(texts))
		if err == nil {
			o.u.texts.Add(int64(len(texts)))
			return vs, nil
		}
		var re *retryable
		if !errors.As(err, &re) || attempt >= o.s.MaxRetries || ctx.Err() != nil {
			if errors.As(err, &re) {
				return nil, errs.Wrap(re.err, CodeUnavailable, fmt.Sprintf("embedding request failed after %d attempts", attempt+1)).With("base_url", o.s.BaseURL).With("model", o.s.Model)
			}
			return nil, err
		}
		o.u.retries.Add(1)
		wait := backoff
		if retryAfter > 0 {
			wait = retryAfter
		}
		// Full jitter keeps concurrent batches from retrying in lockstep.
		wait = wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
		if err := o.sleep(ctx, wait); err != nil {
			return nil, err
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }

func (o *OpenAI) try(ctx context.Context, url string, body []byte, n int) ([][]float32, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, errs.Wrap(err, errs.CodeInvalidInput, "invalid embedding base URL").With("base_url", o.s.BaseURL)
	}
	req.Header.Set("Content-Type", "application/json")
	if o.s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.s.APIKey)
	}
	o.u.requests.Add(1)
	resp, err := o.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		return nil, 0, &retryable{err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, 0, &retryable{err}
	}
	var er embedResponse
	jerr := json.Unmarshal(b, &er)
	msg := http.StatusText(resp.StatusCode)
	if jerr == nil && er.Error != nil && er.Error.Message != "" {
		msg = er.Error.Message
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, retryAfter(resp.Header.Get("Retry-After")), &retryable{fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, 0, errs.New(CodeUnavailable, "the embedding service refused the API key (HTTP %d: %s); set embed.api_key_env or LOCI_EMBED_API_KEY", resp.StatusCode, msg).
			With("status", resp.StatusCode).With("base_url", o.s.BaseURL)
	case resp.StatusCode == http.StatusNotFound:
		return nil, 0, errs.New(CodeUnavailable, "embedding endpoint or model not found (HTTP 404: %s); check embed.base_url (it should end in /v1) and embed.model", msg).
			With("status", 404).With("base_url", o.s.BaseURL).With("model", o.s.Model)
	case resp.StatusCode >= 400:
		return nil, 0, errs.New(CodeUnavailable, "the embedding service rejected the request (HTTP %d: %s)", resp.StatusCode, msg).
			With("status", resp.StatusCode).With("model", o.s.Model)
	}
	if jerr != nil {
		return nil, 0, errs.New(CodeUnavailable, "the embedding service answered with invalid JSON: %v", jerr)
	}
	if len(er.Data) != n {
		return nil, 0, errs.New(CodeUnavailable, "the embedding service returned %d vectors for %d texts", len(er.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, 0, errs.New(CodeUnavailable, "the embedding service returned a bad index %d", d.Index)
		}
		if len(d.Embedding) == 0 {
			return nil, 0, errs.New(CodeUnavailable, "the embedding service returned an empty vector")
		}
		if want := o.dims.Load(); want == 0 {
			o.dims.CompareAndSwap(0, int64(len(d.Embedding)))
		}
		if want := int(o.dims.Load()); len(d.Embedding) != want {
			return nil, 0, errs.New(CodeMismatch, "the embedding model returned %d dimensions, expected %d", len(d.Embedding), want).
				With("model", o.s.Model).With("dims", len(d.Embedding)).With("expected_dims", want)
		}
		out[d.Index] = d.Embedding
	}
	tok := er.Usage.TotalTokens
	if tok == 0 {
		tok = er.Usage.PromptTokens
	}
	if tok == 0 {
		var s []string
		json.Unmarshal(body, &struct {
			Input *[]string `json:"input"`
		}{&s})
		for _, t := range s {
			tok += int64(EstimateTokens(t))
		}
	}
	o.u.tokens.Add(tok)
	return out, 0, nil
}

func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil && s >= 0 {
		return min(time.Duration(s*float64(time.Second)), time.Minute)
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(time.Until(t), 0), time.Minute)
	}
	return 0
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
