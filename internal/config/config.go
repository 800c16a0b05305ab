// Package config resolves loci's settings with the precedence
// flags > environment (LOCI_*) > config file > defaults.
package config

import (
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/loci-dev/loci/internal/errs"
)

// File is the on-disk config (<vault>/.loci/config.yaml, or $LOCI_CONFIG).
type File struct {
	// Exclude lists doublestar globs of vault-relative paths never indexed.
	Exclude []string `yaml:"exclude"`
	// IndexDir overrides where the index lives.
	IndexDir string `yaml:"index_dir"`
	// Writes configures the write operations (see docs/writes.md).
	Writes Writes `yaml:"writes"`
	// Embed configures the embedding provider (see docs/search.md).
	Embed Embed `yaml:"embed"`
	// Search tunes hybrid retrieval (see docs/search.md).
	Search Search `yaml:"search"`
	// AI configures the AI operations (see docs/ai.md); off by default.
	AI AI `yaml:"ai"`
}

// Embed is the embed section of the config file; LOCI_EMBED_* variables
// override it (internal/embed resolves the effective settings).
type Embed struct {
	Provider     string  `yaml:"provider"`    // builtin (default) | openai | none
	Model        string  `yaml:"model"`       // openai: model name
	BaseURL      string  `yaml:"base_url"`    // openai: endpoint base, e.g. http://localhost:11434/v1
	APIKey       string  `yaml:"api_key"`     // openai: prefer api_key_env
	APIKeyEnv    string  `yaml:"api_key_env"` // openai: environment variable holding the key
	Dims         int     `yaml:"dims"`        // openai: requested dimensions
	BatchSize    int     `yaml:"batch_size"`
	Concurrency  int     `yaml:"concurrency"`
	MaxRetries   int     `yaml:"max_retries"`
	PricePerMTok float64 `yaml:"price_per_mtok"` // USD per million tokens, for the cost estimate
	OnMismatch   string  `yaml:"on_mismatch"`    // fail (default) | reembed
	Int8         bool    `yaml:"int8"`           // int8 vectors in memory
}

// Search is the search section of the config file: the fusion of lexical
// and vector rankings (reciprocal rank fusion) and graph expansion.
type Search struct {
	RRFK           float64 `yaml:"rrf_k"`           // RRF constant k (default 60)
	LexicalWeight  float64 `yaml:"lexical_weight"`  // weight of the BM25 ranking (default 1)
	SemanticWeight float64 `yaml:"semantic_weight"` // weight of the vector ranking (default 1)
	GraphWeight    float64 `yaml:"graph_weight"`    // share of a seed's score a linked note gets (default 0.5)
	MinSimilarity  float64 `yaml:"min_similarity"`  // cosine floor of the vector ranking (default 0.2; negative: none)
}

// Load reads the config file for a vault root. A missing file is not an error.
func Load(vaultRoot string) (*File, string, error) {
	p := os.Getenv("LOCI_CONFIG")
	if p == "" {
		p = filepath.Join(vaultRoot, ".loci", "config.yaml")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		if os.IsNotExist(err) {
			return &File{}, "", nil
		}
		return nil, p, errs.Wrap(err, errs.CodeInvalidInput, "cannot read config "+p)
	}
	var f File
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, p, errs.New(errs.CodeInvalidInput, "invalid config %s: %v", p, err).With("config", p)
	}
	return &f, p, nil
}

// EnvList splits a comma-separated environment variable.
func EnvList(name string) []string {
	v := os.Getenv(name)
	if v == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
