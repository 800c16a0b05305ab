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
