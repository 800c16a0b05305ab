// Package config resolves loci's settings with the precedence
// flags > environment (LOCI_*) > config file > defaults.
//
// The config file is decoded strictly and fails closed: an unknown key, a
// value of the wrong type, a bad glob or duration and an unknown enum value
// are config_invalid errors naming the key, its line and (for typos) the
// nearest valid key, never settings silently ignored.
package config

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// EnvConfig names the environment variable holding the path of the user's
// own config file, which replaces the vaults' files.
const EnvConfig = "LOCI_CONFIG"

// Where a config file came from: its trust differs.
const (
	// SourceNone: no config file; defaults apply.
	SourceNone = ""
	// SourceVault: <vault>/.loci/config.yaml, which belongs to the vault
	// and is attacker-controlled in a planted or cloned vault.
	SourceVault = "vault"
	// SourceUser: the file named by LOCI_CONFIG, the user's own.
	SourceUser = "LOCI_CONFIG"
)

// File is the on-disk config (<vault>/.loci/config.yaml, or $LOCI_CONFIG).
// The check tags are the validation rules of the strict decoder
// (validate.go).
type File struct {
	// Exclude lists doublestar globs of vault-relative paths never indexed.
	Exclude []string `yaml:"exclude" check:"glob"`
	// IndexDir overrides where the index lives. From a vault's own file it
	// must be relative and stay inside the vault; see ResolveIndexDir.
	IndexDir string `yaml:"index_dir" check:"indexdir"`
	// Writes configures the write operations (see docs/writes.md).
	Writes Writes `yaml:"writes"`
	// Embed configures the embedding provider (see docs/search.md).
	Embed Embed `yaml:"embed"`
	// Search tunes hybrid retrieval (see docs/search.md).
	Search Search `yaml:"search"`
	// AI configures the AI operations (see docs/ai.md); off by default.
	AI AI `yaml:"ai"`

	// Path is the file read ("" when there is none).
	Path string `yaml:"-"`
	// Source is SourceNone, SourceVault or SourceUser.
	Source string `yaml:"-"`

	// lines maps key paths to their lines in the file.
	lines map[string]int
}

// Embed is the embed section of the config file; LOCI_EMBED_* variables
// override it (internal/embed resolves the effective settings).
type Embed struct {
	Provider     string  `yaml:"provider" check:"enum=builtin|openai|ollama|none|off"` // builtin (default) | openai | none
	Model        string  `yaml:"model"`                                                // openai: model name
	BaseURL      string  `yaml:"base_url"`                                             // openai: endpoint base, e.g. http://localhost:11434/v1
	APIKey       string  `yaml:"api_key"`                                              // openai: prefer api_key_env
	APIKeyEnv    string  `yaml:"api_key_env"`                                          // openai: environment variable holding the key
	Dims         int     `yaml:"dims" check:"nonneg"`                                  // openai: requested dimensions
	BatchSize    int     `yaml:"batch_size" check:"nonneg"`
	Concurrency  int     `yaml:"concurrency" check:"nonneg"`
	MaxRetries   int     `yaml:"max_retries" check:"nonneg"`
	PricePerMTok float64 `yaml:"price_per_mtok" check:"nonneg"`         // USD per million tokens, for the cost estimate
	OnMismatch   string  `yaml:"on_mismatch" check:"enum=fail|reembed"` // fail (default) | reembed
	Int8         bool    `yaml:"int8"`                                  // int8 vectors in memory
}

// Search is the search section of the config file: the fusion of lexical
// and vector rankings (reciprocal rank fusion) and graph expansion.
type Search struct {
	RRFK           float64 `yaml:"rrf_k" check:"nonneg"`           // RRF constant k (default 60)
	LexicalWeight  float64 `yaml:"lexical_weight" check:"nonneg"`  // weight of the BM25 ranking (default 1)
	SemanticWeight float64 `yaml:"semantic_weight" check:"nonneg"` // weight of the vector ranking (default 1)
	GraphWeight    float64 `yaml:"graph_weight" check:"nonneg"`    // share of a seed's score a linked note gets (default 0.5)
	MinSimilarity  float64 `yaml:"min_similarity"`                 // cosine floor of the vector ranking (default 0.2; negative: none)
}

// Load reads and validates the config file of a vault: the file named by
// LOCI_CONFIG, else <vault>/.loci/config.yaml. A missing file is not an
// error (defaults apply; the File's Path is then ""). Any problem with the
// file is a config_invalid error (details: config, problems).
func Load(vaultRoot string) (*File, string, error) {
	p, source := os.Getenv(EnvConfig), SourceUser
	var b []byte
	var err error
	if p == "" {
		p, source = filepath.Join(vaultRoot, ".loci", "config.yaml"), SourceVault
		// The vault's own file is read like every file under .loci: no link
		// is followed at any component (a shared config belongs in
		// LOCI_CONFIG).
		root, rerr := filepath.EvalSymlinks(vaultRoot)
		if rerr != nil {
			root = vaultRoot
		}
		b, err = safefs.Root(root).ReadFile(".loci/config.yaml")
		if safefs.IsDenied(err) && errs.As(err).Details["reason"] == "symlink" {
			return nil, p, errs.As(err).With("config", p).With("hint", "a config shared between vaults belongs in a file named by "+EnvConfig)
		}
	} else {
		b, err = os.ReadFile(p)
	}
	if err != nil {
		if os.IsNotExist(err) {
			if source == SourceUser {
				// The user named a file that is not there: a typo in
				// LOCI_CONFIG must not quietly fall back to defaults.
				return nil, p, errs.New(errs.CodeConfigInvalid, "config %s (named by %s) does not exist", p, EnvConfig).With("config", p)
			}
			return &File{}, "", nil
		}
		return nil, p, errs.Wrap(err, errs.CodeConfigInvalid, "cannot read config "+p).With("config", p)
	}
	f, err := Parse(b, p, source)
	if err != nil {
		return nil, p, err
	}
	return f, p, nil
}

// Parse decodes and validates config text read from path; source says
// whose file it is (SourceVault files may not move the index out of the
// vault).
func Parse(data []byte, path, source string) (*File, error) {
	f := &File{Path: path, Source: source}
	if probs := decodeStrict(data, f, source); len(probs) > 0 {
		return nil, invalid(path, probs)
	}
	return f, nil
}

// CheckStateDir refuses a <vault>/.loci that leads outside the vault (a
// symbolic link planted in the vault): loci keeps its index, token, undo
// journal and audit log there, so it could otherwise be made to write
// anywhere (path_denied).
func CheckStateDir(vaultRoot string) error {
	def := filepath.Join(vaultRoot, ".loci")
	if err := insideVault(vaultRoot, def); err != nil {
		return errs.New(errs.CodePathDenied, "%s leads outside the vault (%v): loci keeps its index, token and undo journal there, so a planted vault could make it write anywhere; remove the link", def, err).
			With("dir", def)
	}
	return nil
}

// ResolveIndexDir returns the index directory the file asks for, resolved
// against the vault root ("" when the file names none: the default,
// <vault>/.loci, which must pass CheckStateDir). A relative index_dir is
// relative to the vault root. From a vault's own file the directory must
// stay inside the vault, also through symbolic links (config_invalid).
// The user's own file (LOCI_CONFIG) may name any folder.
func (f *File) ResolveIndexDir(vaultRoot string) (string, error) {
	if err := CheckStateDir(vaultRoot); err != nil {
		return "", err
	}
	if f.IndexDir == "" {
		return "", nil
	}
	dir := f.IndexDir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(vaultRoot, filepath.FromSlash(dir))
	}
	if f.Source == SourceUser {
		return dir, nil
	}
	if err := insideVault(vaultRoot, dir); err != nil {
		return "", invalid(f.Path, []Problem{{Key: "index_dir", Line: f.lines["index_dir"], Message: "resolves outside the vault through a symbolic link (" + err.Error() + "); from the vault's own config the index must stay inside the vault (use --index-dir, LOCI_INDEX_DIR or LOCI_CONFIG for another place)"}})
	}
	return dir, nil
}

// insideVault checks that dir, once its existing part is resolved through
// symbolic links, is the vault root or below it.
func insideVault(vaultRoot, dir string) error {
	root, err := filepath.EvalSymlinks(vaultRoot)
	if err != nil {
		return err
	}
	root, _ = filepath.Abs(root)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// Resolve the longest existing prefix; the rest is created below it.
	rest := ""
	cur := abs
	for {
		if _, err := os.Lstat(cur); err == nil {
			break
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			break
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
	real, err := filepath.EvalSymlinks(cur)
	if err != nil {
		return err
	}
	real = filepath.Join(real, rest)
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return errs.New(errs.CodePathDenied, "it resolves to %s", real)
	}
	return nil
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
