package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/llm"
)

// OpenAI is a client of an OpenAI-compatible /v1/embeddings endpoint,
// through internal/llm. It splits the input into batches, keeps at most
// Concurrency requests in flight, has each retried on rate limits, server
// errors, timeouts and network failures with exponential backoff
// (honouring Retry-After), and counts tokens.
type OpenAI struct {
	s    Settings
	u    usage
	dims atomic.Int64
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
	o := &OpenAI{s: s}
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

// client applies the settings: Timeout bounds the wait for the answer and
// each pause in it; a failed request is retried MaxRetries times.
func (o *OpenAI) client() *llm.Client {
	max := o.s.MaxRetries
	if max <= 0 {
		max = -1 // 0 means no retries here, not the client's default
	}
	return &llm.Client{BaseURL: o.s.BaseURL, APIKey: o.s.APIKey, Headers: o.s.Headers,
		Timeouts:  llm.Timeouts{FirstByte: o.s.Timeout, Idle: o.s.Timeout},
		Retry:     llm.Retry{Max: max, Sleep: o.sleep},
		OnRequest: func() { o.u.requests.Add(1) },
		OnRetry:   func(int, error, time.Duration) { o.u.retries.Add(1) },
	}
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

// batch embeds one batch and checks the answer: one vector per text, each
// at a valid index, all of the index's dimension.
func (o *OpenAI) batch(ctx context.Context, texts []string) ([][]float32, error) {
	resp, err := o.client().Embed(ctx, llm.EmbedRequest{Model: o.s.Model, Input: texts, Dimensions: o.s.Dims})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, o.failure(err)
	}
	n := len(texts)
	if len(resp.Data) != n {
		return nil, errs.New(CodeUnavailable, "the embedding service returned %d vectors for %d texts", len(resp.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, errs.New(CodeUnavailable, "the embedding service returned a bad index %d", d.Index)
		}
		if len(d.Embedding) == 0 {
			return nil, errs.New(CodeUnavailable, "the embedding service returned an empty vector")
		}
		if want := o.dims.Load(); want == 0 {
			o.dims.CompareAndSwap(0, int64(len(d.Embedding)))
		}
		if want := int(o.dims.Load()); len(d.Embedding) != want {
			return nil, errs.New(CodeMismatch, "the embedding model returned %d dimensions, expected %d", len(d.Embedding), want).
				With("model", o.s.Model).With("dims", len(d.Embedding)).With("expected_dims", want)
		}
		out[d.Index] = d.Embedding
	}
	tok := int64(resp.Usage.TotalTokens)
	if tok == 0 {
		tok = int64(resp.Usage.PromptTokens)
	}
	if tok == 0 {
		for _, t := range texts {
			tok += int64(EstimateTokens(t))
		}
	}
	o.u.tokens.Add(tok)
	o.u.texts.Add(int64(n))
	return out, nil
}

// failure maps a client error to embedding_unavailable (or, for a base
// URL that is not one, validation_failed).
func (o *OpenAI) failure(err error) error {
	var ex *llm.RetriesExhausted
	if errors.As(err, &ex) {
		return errs.Wrap(ex.Err, CodeUnavailable, fmt.Sprintf("embedding request failed after %d attempts", ex.Attempts)).With("base_url", o.s.BaseURL).With("model", o.s.Model)
	}
	var ae *llm.APIError
	switch {
	case errors.Is(err, llm.ErrBadURL):
		return errs.Wrap(err, errs.CodeInvalidInput, "invalid embedding base URL").With("base_url", o.s.BaseURL)
	case !errors.As(err, &ae):
		return errs.New(CodeUnavailable, "the embedding service failed: %v", err).With("base_url", o.s.BaseURL)
	case ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden:
		return errs.New(CodeUnavailable, "the embedding service refused the API key (HTTP %d: %s); set embed.api_key_env or LOCI_EMBED_API_KEY", ae.Status, ae.Message).
			With("status", ae.Status).With("base_url", o.s.BaseURL)
	case ae.Status == http.StatusNotFound:
		return errs.New(CodeUnavailable, "embedding endpoint or model not found (HTTP 404: %s); check embed.base_url (it should end in /v1) and embed.model", ae.Message).
			With("status", 404).With("base_url", o.s.BaseURL).With("model", o.s.Model)
	case ae.Status == 0:
		return errs.New(CodeUnavailable, "the embedding service reported an error: %s", ae.Message).With("model", o.s.Model)
	}
	return errs.New(CodeUnavailable, "the embedding service rejected the request (HTTP %d: %s)", ae.Status, ae.Message).
		With("status", ae.Status).With("model", o.s.Model)
}
