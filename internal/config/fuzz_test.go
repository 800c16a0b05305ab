package config

import (
	"testing"

	"github.com/loci-dev/loci/internal/errs"
)

// FuzzParse: any bytes in a vault's config file give a File or a
// config_invalid error naming problems, never a panic or another code.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "exclude: [\"a/**\"]\n", "writes: {deny_path: [\"**\"], readonly: true}\n",
		"index_dir: ../x\n", "embed: {provider: openai, base_url: http://localhost:1/v1, model: m}\n",
		"ai:\n  prices:\n    gpt*: {input_per_mtok: 1}\n", "a: &x [*x]\n", "<<: {a: 1}\n", "---\n---\n",
		"writes:\n  journal_max_age: 30d\n  lock_timeout: -1s\n", "search: {rrf_k: .nan}\n", "\t- x",
	} {
		f.Add([]byte(s))
	}
	f.Add(aliasBomb(400)) // aliases of aliases: 160,000 values (TestAliasBombRefused)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "config.yaml", SourceVault)
		if err != nil {
			if errs.Code(err) != errs.CodeConfigInvalid {
				t.Fatalf("code %q for %q", errs.Code(err), data)
			}
			if len(Problems(err)) == 0 {
				t.Fatalf("config_invalid without problems for %q", data)
			}
			return
		}
		if cfg == nil {
			t.Fatalf("no File and no error for %q", data)
		}
	})
}
