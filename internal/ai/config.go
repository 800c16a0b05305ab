package ai

import (
	"time"

	"github.com/loci-dev/loci/internal/config"
)

// FromConfig returns the effective AI settings of a resolved configuration
// (every layer merged: flags > environment > user file > vault file >
// defaults): the ai section, and the model server its provider names
// (config.Endpoint: a providers entry or a provider type, with the
// OPENAI_* fallbacks and the vault rules applied).
func FromConfig(c *config.Config) Settings {
	a := c.AI
	s := Settings{Provider: a.Provider, Model: a.Model,
		MaxInputTokens: a.MaxInputTokens, MaxOutputTokens: a.MaxOutputTokens, Temperature: a.Temperature, Seed: a.Seed,
		Timeout: time.Duration(a.TimeoutSeconds * float64(time.Second)), Structured: a.Structured,
		DailyCostUSD: a.DailyCostUSD, AllowGlobs: a.AllowGlobs, DenyGlobs: a.DenyGlobs}
	if a.MaxRetries != nil {
		s.MaxRetries = *a.MaxRetries
		if s.MaxRetries == 0 {
			s.MaxRetries = -1 // an explicit 0: no retries
		}
	}
	if ep := c.Endpoint(config.RoleAI); ep != nil {
		s.BaseURL, s.APIKey, s.Type = ep.BaseURL, ep.APIKey, ep.Type
		if len(ep.Headers) > 0 {
			s.Headers = ep.Headers
		}
	}
	if len(a.Prices) > 0 {
		s.Prices = map[string]Price{}
		for k, v := range a.Prices {
			s.Prices[k] = Price{InputPerMTok: v.InputPerMTok, OutputPerMTok: v.OutputPerMTok}
		}
	}
	s.Defaults()
	return s
}
