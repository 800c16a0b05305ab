package ai

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/loci-dev/loci/internal/errs"
)

// Recorder wraps a provider for tests: with Replay it answers from
// fixtures (one JSON file per request hash) and never calls out; otherwise
// it calls Inner and writes each answer as a fixture (LOCI_AI_RECORD=1).
type Recorder struct {
	Inner  Provider
	Dir    string
	Replay bool
}

func (r *Recorder) Name() string  { return r.Inner.Name() }
func (r *Recorder) Model() string { return r.Inner.Model() }

type fixture struct {
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason"`
	Usage        Usage  `json:"usage"`
}

func (r *Recorder) path(req Request) string {
	sum := sha256.Sum256(canonical(r.Inner, req))
	return filepath.Join(r.Dir, hex.EncodeToString(sum[:8])+".json")
}

// Complete replays or records one call.
func (r *Recorder) Complete(ctx context.Context, req Request) (*Response, error) {
	p := r.path(req)
	if r.Replay {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, errs.New(errs.CodeAIProvider, "replay: no fixture %s for this request (record it with LOCI_AI_RECORD=1)", filepath.Base(p)).With("fixture", p)
		}
		var f fixture
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, errs.New(errs.CodeAIProvider, "replay: fixture %s is damaged", p)
		}
		if req.OnDelta != nil {
			req.OnDelta(f.Text)
		}
		return &Response{Text: f.Text, FinishReason: f.FinishReason, Usage: f.Usage}, nil
	}
	resp, err := r.Inner.Complete(ctx, req)
	if err != nil {
		return resp, err // what the failed call is booked at, if anything
	}
	if err := os.MkdirAll(r.Dir, 0o755); err == nil {
		b, _ := json.MarshalIndent(fixture{Text: resp.Text, FinishReason: resp.FinishReason, Usage: resp.Usage}, "", "  ")
		os.WriteFile(p, b, 0o644)
	}
	return resp, nil
}
