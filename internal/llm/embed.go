package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// EmbedRequest is one /embeddings request.
type EmbedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
	// Dimensions asks for shorter vectors (OpenAI text-embedding-3-*); 0
	// is the model's own.
	Dimensions int `json:"dimensions,omitempty"`
}

// Embedding is one vector of an answer, at its input's index.
type Embedding struct {
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

// EmbedResponse is an /embeddings answer as the server gave it (the
// caller checks count, order and dimensions).
type EmbedResponse struct {
	Data  []Embedding `json:"data"`
	Usage Usage       `json:"usage"`
}

// Embed sends one embeddings request, retrying what may succeed later.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) (*EmbedResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var out *EmbedResponse
	err = c.post(ctx, "embeddings", body, false, func(r io.Reader, _ http.Header) (bool, error) {
		b, err := io.ReadAll(io.LimitReader(r, 256<<20))
		if err != nil {
			return false, err
		}
		var w struct {
			EmbedResponse
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return false, fmt.Errorf("%w: not valid JSON: %v", ErrBadAnswer, err)
		}
		if len(w.Error) > 0 && string(w.Error) != "null" {
			return false, parseAPIError(b)
		}
		out = &w.EmbedResponse
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// IsTimeout reports whether err is a timeout of this package's watchdog.
func IsTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te)
}
