package ai

import (
	"os"
	"time"

	"github.com/loci-dev/loci/internal/config"
)

// FromConfig resolves the effective settings: environment over the file.
func FromConfig(c config.AI) Settings {
	s := Settings{Provider: c.Provider, BaseURL: c.BaseURL, Model: c.Model, APIKey: c.APIKey,
		MaxInputTokens: c.MaxInputTokens, MaxOutputTokens: c.MaxOutputTokens, Temperature: c.Temperature, Seed: c.Seed,
		Timeout: time.Duration(c.TimeoutSeconds * float64(time.Second)), MaxRetries: c.MaxRetries, Structured: c.Structured,
		DailyCostUSD: c.DailyCostUSD, AllowGlobs: c.AllowGlobs, DenyGlobs: c.DenyGlobs}
	if c.APIKeyEnv != "" {
		if v := os.Getenv(c.APIKeyEnv); v != "" {
			s.APIKey = v
		}
	}
	if len(c.Prices) > 0 {
		s.Prices = map[string]Price{}
		for k, v := range c.Prices {
			s.Prices[k] = Price{InputPerMTok: v.InputPerMTok, OutputPerMTok: v.OutputPerMTok}
		}
	}
	s.ApplyEnv()
	s.Defaults()
	return s
}
