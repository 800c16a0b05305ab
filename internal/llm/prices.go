package llm

import (
	"regexp"
	"strings"
	"sync"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok" json:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok" json:"output_per_mtok"`
}

// ListPricesDate is when ListPrices was taken.
const ListPricesDate = "2026-06"

// ListPrices are the list prices of common hosted models: OpenAI's
// standard tier (not batch, flex or priority; cached input is not
// discounted here), USD per million tokens, as its pricing page
// (https://openai.com/api/pricing/) gave them in ListPricesDate. They are
// estimates for the daily cost ceiling, not a bill: a `prices:` entry in
// your config overrides an entry here, and a server on this machine costs
// nothing whatever its model is called. docs/ai.md lists them.
var ListPrices = map[string]Price{
	"gpt-5":                  {1.25, 10},
	"gpt-5-mini":             {0.25, 2},
	"gpt-5-nano":             {0.05, 0.40},
	"gpt-4.1":                {2, 8},
	"gpt-4.1-mini":           {0.40, 1.60},
	"gpt-4.1-nano":           {0.10, 0.40},
	"gpt-4o":                 {2.50, 10},
	"gpt-4o-2024-05-13":      {5, 15},
	"gpt-4o-mini":            {0.15, 0.60},
	"o1":                     {15, 60},
	"o3":                     {2, 8},
	"o3-mini":                {1.10, 4.40},
	"o4-mini":                {1.10, 4.40},
	"text-embedding-3-small": {0.02, 0},
	"text-embedding-3-large": {0.13, 0},
	"text-embedding-ada-002": {0.10, 0},
}

// snapshot is the date suffix of a pinned model version (gpt-4.1-2025-04-14).
var snapshot = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-\d{4}-\d{2}-\d{2}$`) })

// ListPrice returns a model's entry of ListPrices: by its name, else by
// its name without a snapshot date; an "openai/" prefix (as routers spell
// it) is ignored.
func ListPrice(model string) (Price, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	m = strings.TrimPrefix(m, "openai/")
	if p, ok := ListPrices[m]; ok {
		return p, true
	}
	p, ok := ListPrices[snapshot().ReplaceAllString(m, "")]
	return p, ok
}
