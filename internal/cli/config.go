package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/vault"
)

func init() { commandFactories = append(commandFactories, newConfigCmd) }

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check the config file (validate) and print the settings in effect (show)",
		Long: "A vault's settings come from flags > environment (LOCI_*) > its config file (<vault>/.loci/config.yaml, " +
			"or the file named by LOCI_CONFIG) > defaults. The file is read strictly: an unknown key, a wrong type, a bad glob, " +
			"duration or enum value is config_invalid and every command refuses to run with it (docs/cli.md).",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate [vault]",
		Short: "Check a vault's config file: exit 0 with one OK line, or list every problem (exit 2)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				g.vault = args[0]
			}
			return g.validateConfig()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show [vault]",
		Short: "Print the effective settings of a vault (flags, environment, config file, defaults), secrets redacted",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				g.vault = args[0]
			}
			return g.showConfig()
		},
	})
	return cmd
}

// configName says which file a vault's settings come from.
func configName(f *config.File) (path, source string) {
	switch f.Source {
	case config.SourceNone:
		return "", "none"
	default:
		return f.Path, f.Source
	}
}

// validateConfig checks the vault's config file as every command loads it
// (including where index_dir leads).
func (g *globals) validateConfig() error {
	vc, err := g.vaultConfig(g.vault)
	if err != nil {
		if probs := config.Problems(err); probs != nil && g.format == "text" {
			e := errs.As(err)
			path, _ := e.Details["config"].(string)
			for _, p := range probs {
				loc := path
				if p.Line > 0 {
					loc = fmt.Sprintf("%s:%d", path, p.Line)
				}
				q := p
				q.Line = 0
				fmt.Fprintf(g.stderr, "%s: %s\n", loc, q)
			}
			n := "1 problem"
			if len(probs) > 1 {
				n = fmt.Sprintf("%d problems", len(probs))
			}
			return &errs.Error{Code: e.Code, Message: fmt.Sprintf("invalid config %s: %s", path, n), Details: e.Details}
		}
		return err
	}
	path, source := configName(vc.file)
	if g.format == "json" {
		return g.print(map[string]any{"ok": true, "config": path, "source": source}, nil)
	}
	switch source {
	case "none":
		abs, _ := filepath.Abs(filepath.Join(g.vault, ".loci", "config.yaml"))
		fmt.Fprintf(g.stdout, "ok: no config file (%s does not exist; defaults apply)\n", abs)
	case config.SourceUser:
		fmt.Fprintf(g.stdout, "ok: %s (from %s)\n", path, config.EnvConfig)
	default:
		fmt.Fprintf(g.stdout, "ok: %s\n", path)
	}
	return nil
}

// effectiveConfig is what `loci config show` prints.
type effectiveConfig struct {
	Vault        string          `json:"vault" yaml:"vault"`
	ConfigFile   string          `json:"config_file" yaml:"config_file"`
	ConfigSource string          `json:"config_source" yaml:"config_source"`
	IndexDir     string          `json:"index_dir" yaml:"index_dir"`
	Exclude      []string        `json:"exclude" yaml:"exclude"`
	Writes       effectiveWrites `json:"writes" yaml:"writes"`
	Embed        effectiveEmbed  `json:"embed" yaml:"embed"`
	Search       effectiveSearch `json:"search" yaml:"search"`
	AI           effectiveAI     `json:"ai" yaml:"ai"`
}

type effectiveWrites struct {
	// CLI and Servers: whether writes are on for the CLI's own write
	// commands and for agents of loci mcp / loci serve.
	CLI             bool     `json:"cli" yaml:"cli"`
	Servers         bool     `json:"servers" yaml:"servers"`
	ReadOnly        bool     `json:"read_only" yaml:"read_only"`
	WritePaths      []string `json:"write_paths" yaml:"write_paths"`
	DenyPaths       []string `json:"deny_paths" yaml:"deny_paths"`
	Inbox           string   `json:"inbox" yaml:"inbox"`
	JournalMaxBytes int64    `json:"journal_max_bytes" yaml:"journal_max_bytes"`
	JournalMaxAge   string   `json:"journal_max_age" yaml:"journal_max_age"`
	LockTimeout     string   `json:"lock_timeout" yaml:"lock_timeout"`
}

type effectiveEmbed struct {
	Provider     string  `json:"provider" yaml:"provider"`
	Model        string  `json:"model,omitempty" yaml:"model,omitempty"`
	BaseURL      string  `json:"base_url,omitempty" yaml:"base_url,omitempty"`
	APIKey       string  `json:"api_key,omitempty" yaml:"api_key,omitempty"`
	Dims         int     `json:"dims,omitempty" yaml:"dims,omitempty"`
	BatchSize    int     `json:"batch_size" yaml:"batch_size"`
	Concurrency  int     `json:"concurrency" yaml:"concurrency"`
	MaxRetries   int     `json:"max_retries" yaml:"max_retries"`
	PricePerMTok float64 `json:"price_per_mtok,omitempty" yaml:"price_per_mtok,omitempty"`
	OnMismatch   string  `json:"on_mismatch" yaml:"on_mismatch"`
	Int8         bool    `json:"int8" yaml:"int8"`
}

// effectiveSearch lists what the file sets; unset values (omitted) take
// the defaults of docs/search.md.
type effectiveSearch struct {
	RRFK           float64 `json:"rrf_k,omitempty" yaml:"rrf_k,omitempty"`
	LexicalWeight  float64 `json:"lexical_weight,omitempty" yaml:"lexical_weight,omitempty"`
	SemanticWeight float64 `json:"semantic_weight,omitempty" yaml:"semantic_weight,omitempty"`
	GraphWeight    float64 `json:"graph_weight,omitempty" yaml:"graph_weight,omitempty"`
	MinSimilarity  float64 `json:"min_similarity,omitempty" yaml:"min_similarity,omitempty"`
}

type effectiveAI struct {
	Provider        string              `json:"provider" yaml:"provider"`
	BaseURL         string              `json:"base_url,omitempty" yaml:"base_url,omitempty"`
	Model           string              `json:"model,omitempty" yaml:"model,omitempty"`
	APIKey          string              `json:"api_key,omitempty" yaml:"api_key,omitempty"`
	MaxInputTokens  int                 `json:"max_input_tokens" yaml:"max_input_tokens"`
	MaxOutputTokens int                 `json:"max_output_tokens" yaml:"max_output_tokens"`
	Temperature     float64             `json:"temperature" yaml:"temperature"`
	Seed            *int                `json:"seed,omitempty" yaml:"seed,omitempty"`
	Timeout         string              `json:"timeout" yaml:"timeout"`
	MaxRetries      int                 `json:"max_retries" yaml:"max_retries"`
	Structured      string              `json:"structured" yaml:"structured"`
	DailyCostUSD    float64             `json:"daily_cost_usd" yaml:"daily_cost_usd"`
	Prices          map[string]ai.Price `json:"prices,omitempty" yaml:"prices,omitempty"`
	AllowGlobs      []string            `json:"allow_globs" yaml:"allow_globs"`
	DenyGlobs       []string            `json:"deny_globs" yaml:"deny_globs"`
}

// redacted hides a secret's value, keeping whether it is set.
func redacted(s string) string {
	if s == "" {
		return ""
	}
	return "<redacted>"
}

// redactURL hides a password written into a URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
	}
	return u.String()
}

// showConfig prints the vault's effective settings: flags > environment >
// config file > defaults, with API keys and URL passwords redacted.
func (g *globals) showConfig() error {
	vc, err := g.vaultConfig(g.vault)
	if err != nil {
		return err
	}
	v, err := vault.Open(g.vault, nil)
	if err != nil {
		return err
	}
	cliW, err := g.writeSettings(vc.file, true)
	if err != nil {
		return err
	}
	srvW, err := g.writeSettings(vc.file, false)
	if err != nil {
		return err
	}
	es, err := embed.Resolve(v.Root)
	if err != nil {
		return err
	}
	as := ai.FromConfig(vc.file.AI)
	path, source := configName(vc.file)
	out := effectiveConfig{Vault: v.Root, ConfigFile: path, ConfigSource: source, IndexDir: vc.indexDir, Exclude: vc.exclude}
	if out.IndexDir == "" {
		out.IndexDir = index.DefaultDir(v.Root)
	}
	if abs, err := filepath.Abs(out.IndexDir); err == nil {
		out.IndexDir = abs
	}
	if out.Exclude == nil {
		out.Exclude = []string{}
	}
	dur := func(d, def time.Duration) string {
		if d <= 0 {
			d = def
		}
		return d.String()
	}
	out.Writes = effectiveWrites{CLI: cliW.Allowed(), Servers: srvW.Allowed(), ReadOnly: srvW.ReadOnly,
		WritePaths: nonNil(srvW.WritePaths), DenyPaths: nonNil(srvW.DenyPaths), Inbox: srvW.Inbox, JournalMaxBytes: srvW.JournalMaxBytes,
		JournalMaxAge: dur(srvW.JournalMaxAge, vault.DefaultJournalMaxAge), LockTimeout: dur(srvW.LockTimeout, vault.DefaultLockTimeout)}
	if out.Writes.Inbox == "" {
		out.Writes.Inbox = "Inbox"
	}
	if out.Writes.JournalMaxBytes <= 0 {
		out.Writes.JournalMaxBytes = vault.DefaultJournalMaxBytes
	}
	out.Embed = effectiveEmbed{Provider: es.Provider, Model: es.Model, BaseURL: redactURL(es.BaseURL), APIKey: redacted(es.APIKey), Dims: es.Dims,
		BatchSize: es.BatchSize, Concurrency: es.Concurrency, MaxRetries: es.MaxRetries, PricePerMTok: es.PricePerMTok, OnMismatch: es.OnMismatch, Int8: es.Int8}
	s := vc.file.Search
	out.Search = effectiveSearch{RRFK: s.RRFK, LexicalWeight: s.LexicalWeight, SemanticWeight: s.SemanticWeight, GraphWeight: s.GraphWeight, MinSimilarity: s.MinSimilarity}
	out.AI = effectiveAI{Provider: as.Provider, BaseURL: redactURL(as.BaseURL), Model: as.Model, APIKey: redacted(as.APIKey),
		MaxInputTokens: as.MaxInputTokens, MaxOutputTokens: as.MaxOutputTokens, Temperature: as.Temperature, Seed: as.Seed,
		Timeout: as.Timeout.String(), MaxRetries: as.MaxRetries, Structured: as.Structured, DailyCostUSD: as.DailyCostUSD,
		Prices: as.Prices, AllowGlobs: nonNil(as.AllowGlobs), DenyGlobs: nonNil(as.DenyGlobs)}
	if out.AI.Provider == "" {
		out.AI.Provider = "none"
	}
	if g.format == "json" {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(g.stdout, string(b))
		return nil
	}
	b, err := yaml.Marshal(out)
	if err != nil {
		return errs.Wrap(err, errs.CodeInternal, "cannot render the settings")
	}
	fmt.Fprintf(g.stdout, "# effective settings: flags > environment > config file > defaults; secrets redacted\n%s", b)
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
